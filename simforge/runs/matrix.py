"""The plan of a run: scenarios x tasks x fault profiles x seeds x trials, as a deterministic list
of cells with stable keys.

A cell's key names everything that decides its episode, so the store can refuse a second copy
(``UNIQUE(run_id, key)``) and ``--resume`` can rebuild the same plan from the stored config and
run only what is missing. ``none`` is always in the plan (first), because every robustness
figure is a paired comparison against it, seed by seed.

Trials repeat a cell with a different *policy* seed and the same *environment* seed: a
stochastic agent gets k attempts at the same world (pass^k); a deterministic one gives k
identical episodes, which is itself the check that nothing leaks nondeterminism.

With ``attribute``, every faulty profile with two or more fault kinds is also played one kind at
a time (an *ablation*: ``degraded-billing--outage`` holds only the profile's ``outage`` rules),
on the same seeds and trials, so that each kind's effect is a paired difference against
``none`` on its own instead of a share of blame among kinds that fired together. A rule decides
each call from streams keyed by the seed, the rule, the tool and the call index, so a rule fires
on the same calls alone as beside the others (until the agent's path differs). The ablated
profiles are written as YAML files named by their content (``$SIMFORGE_ABLATIONS``, else the
temporary folder), which every local worker reads; on a Ray cluster of several machines, point
``$SIMFORGE_ABLATIONS`` at a folder they share.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from simforge.errors import UsageError
from simforge.scenario.registry import ScenarioRegistry, default_registry

if TYPE_CHECKING:
    from simforge.faults.rules import FaultProfile

BASELINE = "none"
ABLATION = "--"
"""Joins a profile and the one fault kind it is played with: ``flaky-network--timeout``."""
BACKGROUND = "background"
"""The pseudo-kind of an ablation that keeps only a profile's background load and drift."""
ABLATIONS_ENV = "SIMFORGE_ABLATIONS"


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
    attribute: bool = False
    """Also play each fault kind of every multi-kind profile alone (see the module docstring)."""
    regrade_of: str | None = None
    """The run whose stored trajectories this run re-scored (``simforge regrade``)."""
    graded_by: dict[str, str] = Field(default_factory=dict)
    """``{scenario id: grading version}`` when the run started: a digest of the scenario's
    tasks, expected outcomes and validator settings and of the validators' code
    (:func:`simforge.runs.regrade.grading_version`)."""

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

    def __reduce__(self) -> tuple[type[Cell], tuple[str, str, str, int, int]]:
        # pickled by its fields in order: a slotted dataclass's own state walks ``fields()``
        # in Python, which was most of what handing chunks to pool workers cost the runner
        return (Cell, (self.scenario, self.task, self.profile, self.seed, self.trial))

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
    ablations: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``{ablated profile: (profile, fault kind)}``."""

    def __len__(self) -> int:
        return len(self.cells)


def seeds_for(scenario_seeds: list[int], n: int | None) -> list[int]:
    """The first ``n`` of a scenario's seeds, continued past its largest when it has fewer;
    all of them when ``n`` is None."""
    if n is None:
        return list(scenario_seeds)
    seeds = list(scenario_seeds[:n])
    nxt = (max(scenario_seeds) + 1) if scenario_seeds else 0
    while len(seeds) < n:
        seeds.append(nxt)
        nxt += 1
    return seeds


def plan(config: RunConfig, registry: ScenarioRegistry = default_registry) -> Plan:
    """Every cell of ``config``, in a fixed order: scenario, task, profile, seed, trial.

    Unknown scenarios, tasks and fault profiles fail here, before any worker starts.
    """
    from simforge.faults.library import resolve_profile

    cells: list[Cell] = []
    refs: dict[str, str] = {}
    profiles: dict[str, str] = {}
    ablations: dict[str, tuple[str, str]] = {}
    for ref in config.scenarios:
        loaded = registry.get(ref)
        scenario = loaded.scenario
        if scenario.id in refs:
            continue
        refs[scenario.id] = ref
        names = []
        for ref_or_name in config.profiles:
            profile = resolve_profile(ref_or_name, loaded.profiles)
            name = profile.name
            if profiles.setdefault(name, ref_or_name) != ref_or_name:
                raise UsageError(
                    f"fault profiles {profiles[name]!r} and {ref_or_name!r} are both named "
                    f"{name!r}; a run needs distinct names"
                )
            names.append(name)
            if not config.attribute or name == BASELINE:
                continue
            for part, (kind, alone) in ablate(profile).items():
                path = write_profile(alone)
                if profiles.setdefault(part, path) != path:
                    raise UsageError(
                        f"cannot attribute {name!r} by fault kind: {part!r} means different "
                        "rules in different scenarios (or clashes with a profile of that name)"
                    )
                ablations[part] = (name, kind)
                names.append(part)
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
    return Plan(cells, refs, profiles, ablations)


def ablate(profile: FaultProfile) -> dict[str, tuple[str, FaultProfile]]:
    """``{name: (kind, profile)}``: each fault kind of ``profile`` alone (only its rules of that
    kind), and its background load and drift alone (kind ``background``). Empty when the profile
    has fewer than two such parts: its only kind is then measured by the profile itself."""
    from simforge.faults.rules import FaultProfile

    kinds = list(dict.fromkeys(rule.fault.kind for rule in profile.rules))
    parts: dict[str, tuple[str, FaultProfile]] = {}
    for kind in kinds:
        parts[f"{profile.name}{ABLATION}{kind}"] = (kind, FaultProfile(
            name=f"{profile.name}{ABLATION}{kind}",
            description=f"{profile.name}, only its {kind} rules (attribution by ablation)",
            rules=[r for r in profile.rules if r.fault.kind == kind],
        ))
    if profile.background:
        name = f"{profile.name}{ABLATION}{BACKGROUND}"
        parts[name] = (BACKGROUND, FaultProfile(
            name=name, description=f"{profile.name}, only its background load and drift",
            background=profile.background,
        ))
    return parts if len(parts) > 1 else {}


def ablations_dir() -> Path:
    return Path(os.environ.get(ABLATIONS_ENV) or Path(tempfile.gettempdir()) / "simforge-ablations")


def write_profile(profile: FaultProfile) -> str:
    """``profile`` as a YAML file named by its content (written once, atomically), the path a
    worker resolves it from."""
    import yaml

    text = yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    folder = ablations_dir()
    path = folder / f"{profile.name}-{digest}.yaml"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        scratch = folder / f".{path.name}.{os.getpid()}"
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, path)
    return str(path)


def chunks(cells: list[Cell], workers: int, *, most: int = 16) -> list[list[Cell]]:
    """Cells grouped for dispatch: big enough to amortise the round trip to a worker, small
    enough that every worker stays busy to the end and results stream back steadily."""
    if not cells:
        return []
    size = max(1, min(most, len(cells) // max(1, workers * 8)))
    return [cells[i : i + size] for i in range(0, len(cells), size)]
