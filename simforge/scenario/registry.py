"""The scenario registry: every ``*.yaml`` under the scenario folders, by id.

A synthesized pack's folder holds its scenario next to the pack's manifest, ``pack.yaml``, so a
folder of packs can be added to the scenario folders as it is: manifests are not scenarios and
are skipped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from simforge.config import NotFound
from simforge.faults.library import resolve_profile
from simforge.paths import resource_dirs
from simforge.scenario.loader import ScenarioError, load_scenario
from simforge.scenario.model import Scenario
from simforge.scenario.plugins import load_pack
from simforge.synth.pack_files import MANIFEST
from simforge.tools.pack import Pack


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its pack resolved, ready for ``make``."""

    scenario: Scenario
    pack: Pack
    path: Path | None


class ScenarioRegistry:
    def __init__(self, dirs: list[Path] | None = None) -> None:
        self._dirs = dirs
        self._by_id: dict[str, Path] | None = None
        self._loaded: dict[str, LoadedScenario] = {}
        self._lock = threading.Lock()

    @property
    def dirs(self) -> list[Path]:
        return self._dirs if self._dirs is not None else resource_dirs("scenarios")

    def _index(self) -> dict[str, Path]:
        if self._by_id is None:
            index: dict[str, Path] = {}
            for root in self.dirs:
                for path in sorted(root.rglob("*.yaml")):
                    if path.name == MANIFEST:
                        continue
                    scenario = load_scenario(path)
                    if scenario.id in index:
                        raise ScenarioError(
                            path, [f"id {scenario.id!r} already defined in {index[scenario.id]}"]
                        )
                    index[scenario.id] = path
            self._by_id = index
        return self._by_id

    def ids(self) -> list[str]:
        return sorted(self._index())

    def get(self, scenario_id: str) -> LoadedScenario:
        with self._lock:
            if scenario_id not in self._loaded:
                path = Path(scenario_id)
                if path.suffix in (".yaml", ".yml"):
                    if not path.is_file():
                        raise NotFound(f"scenario file not found: {path}")
                    self._loaded[scenario_id] = self.load_path(path)
                else:
                    index = self._index()
                    if scenario_id not in index:
                        raise NotFound(f"unknown scenario {scenario_id!r}; known: {sorted(index)}")
                    self._loaded[scenario_id] = self.load_path(index[scenario_id])
            return self._loaded[scenario_id]

    @staticmethod
    def load_path(path: Path) -> LoadedScenario:
        from simforge.scoring.plugins import load_validator_plugins

        load_validator_plugins()  # eagerly: a broken plugin fails here, naming its file
        scenario = load_scenario(path)
        pack = load_pack(scenario.pack, relative_to=path.parent)
        _check_references(scenario, pack, path)
        return LoadedScenario(scenario, pack, path)

    def all(self) -> list[LoadedScenario]:
        return [self.get(i) for i in self.ids()]


def _check_references(scenario: Scenario, pack: Pack, path: Path) -> None:
    """Tools and entities named by tasks exist in the pack (caught at load, not mid-episode)."""
    problems = []
    for task in scenario.tasks:
        for entity in [*task.initial_state, *task.expected.state]:
            if entity not in pack.schemas:
                problems.append(
                    f"task {task.id!r}: unknown entity {entity!r}; pack has {sorted(pack.schemas)}"
                )
        for created in task.expected.created:
            if created.entity not in pack.schemas:
                problems.append(
                    f"task {task.id!r}: unknown entity {created.entity!r} in expected.created"
                )
        for i, step in enumerate(task.oracle):
            for call in step.calls:
                if call.tool not in pack.catalog:
                    problems.append(
                        f"task {task.id!r}: oracle step {i} calls unknown tool {call.tool!r}"
                    )
    problems.extend(_check_validators(scenario))
    for name in scenario.faults.profiles:
        try:
            resolve_profile(name, scenario.faults.custom)
        except KeyError as exc:
            problems.append(f"faults.profiles: {exc.args[0]}")
    if problems:
        raise ScenarioError(path, problems)


def _check_validators(scenario: Scenario) -> list[str]:
    """Every validator a scenario or task names is registered and its params fit it."""
    from simforge.scoring import VALIDATORS

    configs = [("validators", v) for v in scenario.validators] + [
        (f"task {task.id!r}: validators", v) for task in scenario.tasks for v in task.validators
    ]
    problems = []
    for where, config in configs:
        definition = VALIDATORS.get(config.name)
        if definition is None:
            problems.append(
                f"{where}: unknown validator {config.name!r}; known: {sorted(VALIDATORS)}"
            )
            continue
        problems.extend(
            f"{where}: validator {config.name!r}: {problem}"
            for problem in definition.check(dict(config.params))
        )
    return problems


default_registry = ScenarioRegistry()
