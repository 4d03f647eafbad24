"""The scenario registry: every ``*.yaml`` under the scenario folders, by id.

A synthesized pack's folder holds its scenario next to the pack's manifest, ``pack.yaml``, so a
folder of packs can be added to the scenario folders as it is: manifests are not scenarios and
are skipped.

Finding one scenario by id does not validate every file (33 ship with simforge, a user's folder
may hold hundreds): each file's id is read from its top-level ``id:`` line (:func:`quick_id`,
a line scan), and only the file that is loaded is parsed and validated in full, which also
checks that it defines the id it was found under. A file whose ``id:`` line is not a plain
scalar on a line of its own is validated to find its id. Listing the ids (:meth:`ids`,
:meth:`all`) validates every file, so a broken file is reported there; a broken neighbour no
longer stops ``make`` of an intact scenario.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from simforge import cache
from simforge.config import NotFound, at_line
from simforge.faults.library import resolve_profile
from simforge.paths import resource_dirs
from simforge.plugins import PLUGINS, Plugins
from simforge.scenario.impossible import base_id, impossible_variant
from simforge.scenario.loader import ScenarioError, load_scenario
from simforge.scenario.model import PolicyFile, Scenario, Task
from simforge.scenario.offer import OfferError, offered_tools, policy_text
from simforge.scenario.plugins import PluginError, load_pack
from simforge.tools.pack import Pack, ToolCatalog
from simforge.tools.spec import Constant


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its pack resolved, ready for ``make``; what each task offers its agent
    (tools, policy) is worked out once, on first use (:mod:`simforge.scenario.offer`)."""

    scenario: Scenario
    pack: Pack
    path: Path | None
    plugins: Plugins = dataclasses.field(default=PLUGINS, compare=False)
    """The registry the scenario was checked against, and is scored with."""

    @cached_property
    def offered(self) -> dict[str, tuple[str, ...]]:
        """``{task id: names of the tools it offers}``."""
        return offered_tools(self.scenario, self.pack)

    @cached_property
    def _catalogs(self) -> dict[tuple[str, ...], ToolCatalog]:
        return {}

    def tools(self, task_id: str) -> ToolCatalog:
        """The catalog a task's agent sees and calls (a subset of the pack's, in its order)."""
        names = self.offered[task_id]
        catalog = self._catalogs.get(names)
        if catalog is None:
            full = self.pack.catalog
            catalog = full if len(names) == len(full) else ToolCatalog(full[n] for n in names)
            self._catalogs[names] = catalog
        return catalog

    @property
    def profiles(self) -> list[Any]:
        """The fault profiles this scenario may name besides the built-ins: its own, then its
        pack's."""
        return [*self.scenario.faults.custom, *self.pack.profiles]

    @cached_property
    def policy(self) -> str:
        """The policy (markdown) the agent is given; empty when there is none."""
        names = {n for names in self.offered.values() for n in names}
        base = self.path.parent if self.path is not None else None
        return policy_text(self.scenario, self.pack, names, base)

    @cached_property
    def all_offered(self) -> ToolCatalog:
        """Every tool some task of the scenario offers (what a server documents)."""
        names = {n for names in self.offered.values() for n in names}
        full = self.pack.catalog
        return full if len(names) == len(full) else ToolCatalog(
            t for n, t in full.items() if n in names
        )


class ScenarioRegistry:
    """Scenarios by id, from the ``scenarios/`` folders (or ``dirs``), each loaded once and
    checked against ``plugins`` (validator names and settings, pack formats; default the
    process's :data:`~simforge.plugins.PLUGINS`)."""

    def __init__(self, dirs: list[Path] | None = None, *, plugins: Plugins | None = None) -> None:
        self.plugins = PLUGINS if plugins is None else plugins
        self._dirs = dirs
        self._by_id: dict[str, Path] | None = None
        self._loaded: dict[str, LoadedScenario] = {}
        self._lock = threading.Lock()

    @property
    def dirs(self) -> list[Path]:
        return self._dirs if self._dirs is not None else resource_dirs("scenarios")

    def _files(self) -> list[Path]:
        return [path for root in self.dirs for path in sorted(root.rglob("*.yaml"))
                if path.name not in self.plugins.pack_formats]  # a manifest is no scenario

    def _index(self) -> dict[str, Path]:
        """Each scenario file by its id (:func:`quick_id`, else validated); a second file of
        one id is refused."""
        if self._by_id is None:
            index: dict[str, Path] = {}
            for path in self._files():
                found = quick_id(path) or scenario_id_of(path)
                if found in index:
                    raise ScenarioError(
                        path, [f"id {found!r} already defined in {index[found]}"]
                    )
                index[found] = path
            self._by_id = index
        return self._by_id

    def ids(self) -> list[str]:
        """Every scenario id, each file validated (:func:`scenario_id_of`): a broken file
        raises here, naming its file, line and field."""
        index = self._index()
        for found, path in index.items():
            if scenario_id_of(path) != found:  # only a file changed since it was indexed
                raise ScenarioError(path, [f"its id is no longer {found!r}; index again"])
        return sorted(index)

    def get(self, scenario_id: str) -> LoadedScenario:
        with self._lock:
            if scenario_id not in self._loaded:
                path = Path(scenario_id)
                if path.suffix in (".yaml", ".yml"):
                    if not path.is_file():
                        raise NotFound(f"scenario file not found: {path}")
                    self._loaded[scenario_id] = self.load_path(path, self.plugins)
                else:
                    index = self._index()
                    base = base_id(scenario_id)
                    if scenario_id not in index and base in index:
                        self._loaded[scenario_id] = self._impossible(self._get(base))
                    elif scenario_id not in index:
                        raise NotFound(f"unknown scenario {scenario_id!r}; known: {sorted(index)}")
                    else:
                        self._loaded[scenario_id] = self._load_indexed(scenario_id)
            return self._loaded[scenario_id]

    def _get(self, scenario_id: str) -> LoadedScenario:
        """:meth:`get` with the lock already held."""
        if scenario_id not in self._loaded:
            self._loaded[scenario_id] = self._load_indexed(scenario_id)
        return self._loaded[scenario_id]

    def _load_indexed(self, scenario_id: str) -> LoadedScenario:
        """The file indexed under ``scenario_id``, loaded; refused if what it defines, once
        validated, is another id (it changed since it was indexed)."""
        path = self._index()[scenario_id]
        loaded = self.load_path(path, self.plugins)
        if loaded.scenario.id != scenario_id:
            raise ScenarioError(path, [at_line(path, ["id"], f"id: {loaded.scenario.id!r}, "
                                               f"where the index found {scenario_id!r}")])
        return loaded

    @staticmethod
    def _impossible(base: LoadedScenario) -> LoadedScenario:
        """The impossible twin of a loaded scenario (:mod:`simforge.scenario.impossible`)."""
        return LoadedScenario(impossible_variant(base.scenario, base.pack), base.pack, base.path,
                              base.plugins)

    @staticmethod
    def load_path(path: Path, plugins: Plugins | None = None) -> LoadedScenario:
        """The scenario file at ``path``, loaded and checked against ``plugins`` (default the
        process's), outside any registry's index."""
        plugins = PLUGINS if plugins is None else plugins
        plugins.load()  # eagerly: a broken plugin fails here, naming its file
        scenario = load_scenario(path)
        try:
            pack = load_pack(scenario.pack, relative_to=path.parent, formats=plugins.pack_formats)
        except PluginError as exc:
            raise ScenarioError(path, [at_line(path, ["pack"], f"pack: {exc}")]) from None
        _check_references(scenario, pack, path, plugins)
        return LoadedScenario(scenario, pack, path, plugins)

    def all(self) -> list[LoadedScenario]:
        return [self.get(i) for i in self.ids()]


_RESOLVER = yaml.resolver.Resolver()
_STR = "tag:yaml.org,2002:str"
_ID_LINE = re.compile(rb"^id:(.*)$", re.MULTILINE)
_PLAIN_ID = re.compile(rb"[ \t]+([A-Za-z0-9_][A-Za-z0-9_./:@+-]*)[ \t]*(?:[ \t]#.*)?\r?")


def quick_id(path: Path) -> str | None:
    """The id of a scenario file read from its one top-level ``id:`` line, without parsing the
    YAML: ``None`` (validate it to know) when the file cannot be read, has no such line or
    several, or the value is not a plain scalar (quoted, an anchor, a flow value, a block).
    A line that starts at column 0 of a block-mapping document is one of its top-level keys
    (nested values, block scalars and continuation lines are indented), so a plain value there
    is the id a full parse gives; the file that is loaded is validated and its id checked
    against this one all the same (:meth:`ScenarioRegistry.get`)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    lines = _ID_LINE.findall(raw)
    if len(lines) != 1:
        return None
    plain = _PLAIN_ID.fullmatch(lines[0])
    if plain is None:
        return None
    value = plain.group(1).decode()
    # a plain scalar is a string unless YAML's resolver makes it a number, bool, null or date
    return value if _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR else None


def scenario_id_of(path: Path) -> str:
    """The id of a scenario file, which is validated in full the first time its bytes are seen:
    the disk cache (:mod:`simforge.cache`, keyed by the file's bytes and simforge's source)
    remembers the id of a file that validated, so indexing the scenarios does not parse and
    validate every file in every process. A file that does not validate is never remembered
    and raises here each time; the scenario that is loaded is always validated in full."""
    try:
        raw = path.read_bytes()
    except OSError:
        raw = None
    key = cache.entry_key("scenario-id", hashlib.sha256(raw).hexdigest()) if raw else None
    if key is not None:
        known = cache.load("scenario-ids", key)
        if isinstance(known, str):
            return known
    scenario = load_scenario(path)
    if key is not None and path.read_bytes() == raw:  # not changed while it was validated
        cache.store("scenario-ids", key, scenario.id)
    return scenario.id


def _check_references(scenario: Scenario, pack: Pack, path: Path, plugins: Plugins) -> None:
    """Tools and entities named by tasks exist in the pack (caught at load, not mid-episode);
    each problem names the line of the file it is on."""
    problems: list[tuple[list[Any], str]] = []
    for t, task in enumerate(scenario.tasks):
        here: list[Any] = ["tasks", t]
        for field, entities in (("initial_state", task.initial_state),
                                ("expected", task.expected.state)):
            for entity in entities:
                if entity not in pack.schemas:
                    loc = [*here, field, entity] if field == "initial_state" else \
                        [*here, "expected", "state", entity]
                    problems.append((loc, f"task {task.id!r}: unknown entity {entity!r}; pack "
                                          f"has {sorted(pack.schemas)}"))
        for c, created in enumerate(task.expected.created):
            if created.entity not in pack.schemas:
                problems.append(([*here, "expected", "created", c, "entity"],
                                 f"task {task.id!r}: unknown entity {created.entity!r} in "
                                 "expected.created"))
        for i, step in enumerate(task.oracle):
            for k, call in enumerate(step.calls):
                if call.tool not in pack.catalog:
                    problems.append(([*here, "oracle", i, "calls", k, "tool"],
                                     f"task {task.id!r}: oracle step {i} calls unknown tool "
                                     f"{call.tool!r}"))
    problems.extend(_check_validators(scenario, plugins))
    try:
        offered_tools(scenario, pack)
    except OfferError as exc:
        problems.append((exc.loc, str(exc)))
    if isinstance(scenario.policy, PolicyFile):
        target = Path(scenario.policy.file)
        target = target if target.is_absolute() else path.parent / target
        if not target.is_file():
            problems.append((["policy", "file"], f"policy: no such file {str(target)!r}"))
    for p, name in enumerate(scenario.faults.profiles):
        try:
            resolve_profile(name, [*scenario.faults.custom, *pack.profiles])
        except KeyError as exc:
            problems.append((["faults", "profiles", p], f"faults.profiles: {exc.args[0]}"))
    if problems:
        raise ScenarioError(path, [at_line(path, loc, problem) for loc, problem in problems])


def _check_validators(scenario: Scenario, plugins: Plugins) -> list[tuple[list[Any], str]]:
    """Every validator a scenario or task names is registered and its params fit it."""
    validators = plugins.validators
    configs = [(["validators", v], "validators", config)
               for v, config in enumerate(scenario.validators)] + [
        (["tasks", t, "validators", v], f"task {task.id!r}: validators", config)
        for t, task in enumerate(scenario.tasks) for v, config in enumerate(task.validators)
    ]
    problems: list[tuple[list[Any], str]] = []
    for loc, where, config in configs:
        definition = validators.get(config.name)
        if definition is None:
            problems.append((loc, f"{where}: unknown validator {config.name!r}; known: "
                                  f"{sorted(validators)}"))
            continue
        problems.extend(
            (loc, f"{where}: validator {config.name!r}: {problem}")
            for problem in definition.check(dict(config.params), plugins)
        )
    return problems


def sandbox_scenario(pack: Pack) -> LoadedScenario:
    """A pack served on its own: one free task with no expectations, so that ``reset``/``step``
    and the tool plane work the same as for a scenario."""
    name = "".join(c if c.isalnum() else "-" for c in pack.name.lower()).strip("-") or "pack"
    scenario = Scenario(
        id=f"serve/{name}-v1",
        description=pack.description,
        pack=str(pack.path or pack.name),
        tasks=[Task(id="sandbox", instruction=f"Use the {pack.name} tools.")],
        think_time=Constant(seconds=0.0),
        tools=["*"],
    )
    return LoadedScenario(scenario, pack, None)


default_registry = ScenarioRegistry()
