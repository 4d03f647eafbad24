"""The plan of a run: scenarios x tasks x fault profiles x seeds x trials, as a deterministic list
of cells with stable keys.

A cell's key names everything that decides its episode, so the store can refuse a second copy
(``UNIQUE(run_id, key)``) and ``--resume`` can rebuild the same plan from the stored config and
run only what is missing. ``none`` is always in the plan (first), because every robustness
figure is a paired comparison against it, seed by seed.

Trials repeat a cell with a different *policy* seed and the same *environment* seed: a
stochastic agent gets k attempts at the same world (pass^k); a deterministic one gives k
identical episodes, which is itself the check that nothing leaks nondeterminism.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simforge.scenario.registry import ScenarioRegistry, default_registry

BASELINE = "none"


def normalise_ref(ref: str) -> str:
    """A scenario reference that means the same from any directory: a YAML path made absolute,
    an id left as it is."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return str(path.resolve())
    return ref


class RunConfig(BaseModel):
    """What a run was asked to do; stored with the run so that ``--resume`` replans it."""

    model_config = ConfigDict(extra="forbid")

    scenarios: list[str] = Field(min_length=1)
    """As given: ids (``domain/name-vN``) or scenario YAML paths."""
    policy: str
    profiles: list[str] = Field(default_factory=lambda: [BASELINE])
    seeds: int | None = Field(None, ge=1)
    """Seeds per task (default: the scenario's own list)."""
    trials: int = Field(1, ge=1)
    tasks: list[str] | None = None
    """Only these task ids (default: every task)."""
    user: str | None = None
    """The simulated user's spec (``scripted``, ``llm:MODEL``; default ``$SIMFORGE_USER`` or
    scripted)."""

    def with_baseline(self) -> RunConfig:
        profiles = [BASELINE, *[p for p in self.profiles if p != BASELINE]]
        return self.model_copy(update={"profiles": list(dict.fromkeys(profiles))})


@dataclass(frozen=True, slots=True)
class Cell:
    """One episode of the matrix."""

    scenario: str
    task: str
    profile: str
    seed: int
    trial: int

    @property
    def key(self) -> str:
        return f"{self.scenario}|{self.task}|{self.profile}|{self.seed}|{self.trial}"

    @property
    def policy_seed(self) -> int:
        """The policy's seed: the env seed for the first trial (as ``simforge run`` does), then a
        stable derivation per trial (SHA-256: identical on every worker and machine)."""
        if self.trial == 0:
            return self.seed
        digest = hashlib.sha256(f"policy|{self.seed}|{self.trial}".encode()).digest()
        return int.from_bytes(digest[:6], "big")

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "task": self.task,
            "profile": self.profile,
            "seed": self.seed,
            "trial": self.trial,
        }


@dataclass(frozen=True)
class Plan:
    """The cells; where each scenario id is loaded from (a path for file scenarios); what
    each profile name resolves from (a built-in name or a YAML path)."""

    cells: list[Cell]
    refs: dict[str, str]
    profiles: dict[str, str]

    def __len__(self) -> int:
        return len(self.cells)


def plan(config: RunConfig, registry: ScenarioRegistry = default_registry) -> Plan:
    """Every cell of ``config``, in a fixed order: scenario, task, profile, seed, trial.

    Unknown scenarios, tasks and fault profiles fail here, before any worker starts.
    """
    from simforge.cli import seeds_for
    from simforge.faults.library import resolve_profile

    cells: list[Cell] = []
    refs: dict[str, str] = {}
    profiles: dict[str, str] = {}
    for ref in config.scenarios:
        loaded = registry.get(ref)
        scenario = loaded.scenario
        if scenario.id in refs:
            continue
        refs[scenario.id] = ref
        names = []
        for ref_or_name in config.profiles:
            name = resolve_profile(ref_or_name, loaded.profiles).name
            if profiles.setdefault(name, ref_or_name) != ref_or_name:
                raise ValueError(
                    f"fault profiles {profiles[name]!r} and {ref_or_name!r} are both named "
                    f"{name!r}; a run needs distinct names"
                )
            names.append(name)
        task_ids = (
            [scenario.task(t).id for t in config.tasks]
            if config.tasks
            else [t.id for t in scenario.tasks]
        )
        seeds = seeds_for(scenario.seeds, config.seeds)
        cells.extend(
            Cell(scenario.id, task, profile, seed, trial)
            for task in task_ids
            for profile in dict.fromkeys(names)
            for seed in seeds
            for trial in range(config.trials)
        )
    return Plan(cells, refs, profiles)


def chunks(cells: list[Cell], workers: int, *, most: int = 16) -> list[list[Cell]]:
    """Cells grouped for dispatch: big enough to amortise the round trip to a worker, small
    enough that every worker stays busy to the end and results stream back steadily."""
    if not cells:
        return []
    size = max(1, min(most, len(cells) // max(1, workers * 8)))
    return [cells[i : i + size] for i in range(0, len(cells), size)]
