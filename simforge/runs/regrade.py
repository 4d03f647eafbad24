"""Re-grading: a run's stored trajectories scored again by the scenarios and validators as they
are now, stored as a new run that names the old one (``regrade_of``).

A validator fixed, an expected value corrected, a safety rule added: the agent need not play
again (an LLM's episodes cost money and would not come out the same). Scoring needs the final
world and its history (some rules read a row as it was when a call started), which a trajectory
does not hold; the simulation does, and it is deterministic. So each stored episode is played
again with the agent's recorded moves, at the recorded moments (the think time before each
turn), with the same seed and fault profile, and the replay is checked against the stored
trajectory: every call, its arguments and answer, every message, the faults and the world's
changes. When they agree, the replayed world is the world the agent left, and the current
scorer's verdicts are the regrade. When they do not (the pack's tools, seeded data or a task's
initial state changed, so the stored moves no longer meet the same world), the episode is
*invalid* in the new run with the first difference as its reason: it must be played again, not
re-graded. An episode stored without its trajectory (``--no-trajectories``), or invalid in the
old run, is invalid in the new one too. The simulated user answers as it did (a scripted user
from the task; an LLM user from its reply cache, ``$SIMFORGE_USER_CACHE``).

**Grading versions.** Every run records, per scenario, the digest of what decides its grades
(:func:`grading_version`): the scenario's tasks, expected outcomes, validator settings and
rubric, and the source files of the validators it runs. ``simforge compare`` warns when two runs
were graded by different versions; re-grading one of them with the other's puts them on the same
footing.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from simforge.policies.base import PolicyBase
from simforge.scenario.model import Task
from simforge.scenario.registry import LoadedScenario, ScenarioRegistry, default_registry
from simforge.trace.episode import Episode

Record = dict[str, Any]
TIME_TOLERANCE = 1e-6
"""Simulated seconds within which a replayed call's start and end count as the stored ones."""


# -- grading versions --------------------------------------------------------------------------


def grading_version(loaded: LoadedScenario) -> str:
    """A digest of everything that decides a scenario's grades: the scenario as loaded (tasks,
    expected state and outputs, validator settings, rubric) and the source files of the
    validators, invariants and policy checks it can run, and of the rubric."""
    from simforge.scoring import VALIDATORS, load_validator_plugins
    from simforge.scoring import rubric as rubric_module
    from simforge.scoring.registry import INVARIANTS, POLICY_CHECKS

    load_validator_plugins()
    scenario = loaded.scenario
    digest = hashlib.sha256(scenario.model_dump_json().encode())
    names = {*rubric_module.ALWAYS, "state_matches", "required_outputs"}
    names |= {v.name for v in scenario.validators}
    names |= {v.name for t in scenario.tasks for v in t.validators}
    functions: list[Callable[..., Any]] = [VALIDATORS[n].fn for n in sorted(names)
                                           if n in VALIDATORS]
    functions += [*INVARIANTS.values(), *POLICY_CHECKS.values(), rubric_module.combine]
    files = set()
    for fn in functions:
        try:
            files.add(inspect.getsourcefile(fn))
        except TypeError:
            continue
    for file in sorted(f for f in files if f):
        path = Path(file)
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def grading_versions(
    refs: dict[str, str], registry: ScenarioRegistry = default_registry
) -> dict[str, str]:
    """``{scenario id: grading version}`` of a plan's scenarios (``Plan.refs``)."""
    return {sid: grading_version(registry.get(ref)) for sid, ref in sorted(refs.items())}


def version_changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The scenarios whose grading version differs between two records (one line each)."""
    return [
        f"{sid}: graded by {before[sid]} then, {now[sid]} now"
        for sid in sorted(set(before) & set(now))
        if before[sid] != now[sid]
    ]


# -- replaying a stored episode ----------------------------------------------------------------


def timed_actions(episode: Episode) -> list[dict[str, Any]]:
    """The agent's moves in a stored simforge episode, each with the think time that preceded
    it (the turn's timestamp minus the last moment recorded before it), its text, metadata and
    the ids of its calls: what makes the replay meet the world at the same moments."""
    calls = {c.call_id: c for c in episode.tool_calls if c.requestor == "assistant"}
    turns = [i for i, m in enumerate(episode.messages) if m.role == "assistant"]
    sim = episode.simulation
    # finish() ends without a step of its own; a text the user ended the conversation on was one
    finished = sim is not None and sim.terminated and sim.steps == len(turns) - 1
    actions: list[dict[str, Any]] = []
    clock = 0.0
    for i, message in enumerate(episode.messages):
        at = message.timestamp
        if message.role != "assistant":
            if at is not None:
                clock = max(clock, at)
            continue
        at = clock if at is None else at
        action: dict[str, Any] = {"think": max(0.0, at - clock)}
        if message.metadata:
            action["metadata"] = message.metadata
        own = [calls[c] for c in message.tool_call_ids if c in calls]
        if own:
            action["tool_calls"] = [
                {"name": c.tool, "id": c.call_id,
                 "arguments": c.args if c.args is not None else (c.raw_args or "")}
                for c in own
            ]
            if message.content:
                action["message"] = message.content
        elif finished and i == turns[-1]:
            action["final_answer"] = message.content or ""
        else:
            action["message"] = message.content or ""
        actions.append(action)
        clock = max(clock, at)
    return actions


class StoredMoves(PolicyBase):
    """Plays one stored episode's moves at their recorded moments (not a policy a user picks)."""

    name: ClassVar[str] = "regrade"

    def __init__(self, episode: Episode) -> None:
        self._actions = timed_actions(episode)
        self._next = 0

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        if self._next >= len(self._actions):  # the stored episode went on: the replay diverged
            return {"final_answer": ""}
        self._next += 1
        return self._actions[self._next - 1]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TIME_TOLERANCE


def first_difference(stored: Episode, replayed: Episode) -> str | None:
    """Where a replay departs from the stored episode (``None`` when it does not): the calls
    (tool, arguments, answer, start and end), the messages, the faults, the world's changes."""
    a, b = stored.tool_calls, replayed.tool_calls
    for n, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        what = f"call {n} ({x.tool})"
        if (x.tool, _canon(x.args)) != (y.tool, _canon(y.args)):
            return f"{what}: replayed as {y.tool}({_canon(y.args)[:80]})"
        if x.error != y.error:
            return f"{what}: stored error {x.error!r}, replayed {y.error!r}"
        if _canon(x.result) != _canon(y.result):
            return f"{what}: the answer differs ({_canon(y.result)[:80]})"
        if not (_close(x.started_at, y.started_at) and _close(x.ended_at, y.ended_at)):
            return f"{what}: ran at {y.started_at}-{y.ended_at}, stored {x.started_at}-{x.ended_at}"
    if len(a) != len(b):
        return f"{len(a)} calls stored, {len(b)} replayed"
    ma = [(m.role, m.content) for m in stored.messages]
    mb = [(m.role, m.content) for m in replayed.messages]
    for n, (mx, my) in enumerate(zip(ma, mb, strict=False), start=1):
        if mx != my:
            return f"message {n} ({mx[0]}): replayed as {my[0]}: {str(my[1])[:80]!r}"
    if len(ma) != len(mb):
        return f"{len(ma)} messages stored, {len(mb)} replayed"
    sa, sb = stored.simulation, replayed.simulation
    assert sa is not None and sb is not None
    fa = [(f.kind, f.tool, f.call_index) for f in sa.faults]
    fb = [(f.kind, f.tool, f.call_index) for f in sb.faults]
    if fa != fb:
        return f"injected faults differ: {fa[:3]} stored, {fb[:3]} replayed"
    if _canon([c.model_dump(mode="json") for c in sa.world_diff]) != _canon(
        [c.model_dump(mode="json") for c in sb.world_diff]
    ):
        return "the world's changes differ"
    if (sa.final_answer, sa.terminated, sa.truncated) != (
        sb.final_answer, sb.terminated, sb.truncated
    ):
        return "the ending differs (final answer, terminated or truncated)"
    return None


# -- a run re-graded ---------------------------------------------------------------------------


@dataclass
class Regraded:
    run_id: str
    of: str
    episodes: int = 0
    changed: int = 0
    """Episodes whose verdict (passed or not, or valid or not) differs from the old run's."""
    passed_to_failed: int = 0
    failed_to_passed: int = 0
    reward_changed: int = 0
    not_replayed: dict[str, int] = field(default_factory=dict)
    """Reasons an episode could not be re-graded, with counts."""
    versions: list[str] = field(default_factory=list)
    """Scenarios graded by a different version than the old run's."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "regrade_of": self.of, "episodes": self.episodes,
            "changed": self.changed, "passed_to_failed": self.passed_to_failed,
            "failed_to_passed": self.failed_to_passed, "reward_changed": self.reward_changed,
            "not_replayed": self.not_replayed, "versions": self.versions,
        }


def regrade(
    store: Any,
    run_id: str,
    *,
    on_record: Callable[[Record, int, int], None] | None = None,
    registry: ScenarioRegistry = default_registry,
) -> Regraded:
    """Re-grade every stored episode of ``run_id`` into a new run of ``store``;
    ``on_record(record, done, total)`` after each is written."""
    from simforge.runs.matrix import Cell, RunConfig, plan
    from simforge.runs.worker import failed_record

    stored_run = store.run(run_id)
    config = RunConfig.model_validate(stored_run["config"])
    the_plan = plan(config, registry)
    versions = grading_versions(the_plan.refs, registry)
    new_config = config.model_copy(update={"regrade_of": run_id, "graded_by": versions})
    total = store.count(run_id)
    new_id = store.create_run(new_config.model_dump(), policy=config.policy, total=total,
                              backend="regrade")
    result = Regraded(new_id, run_id,
                      versions=version_changes(config.graded_by, versions))
    envs: dict[str, Any] = {}
    batch: list[Record] = []
    done = 0
    for row, text in store.trajectories(run_id):
        cell = Cell(row["scenario"], row["task"], row["profile"], row["seed"], row["trial"])
        reason = None
        record: Record | None = None
        if row["reward"] is None and not str(row["invalid_reason"] or "").startswith("ungraded"):
            reason = "invalid in the old run"
        elif text is None:
            reason = "no stored trajectory (--no-trajectories)"
        elif cell.scenario not in the_plan.refs or cell.profile not in the_plan.profiles:
            reason = "its scenario or fault profile is no longer in the run's plan"
        else:
            record, reason = _regrade_one(cell, row, text, config, the_plan, envs)
        if record is None:
            assert reason is not None
            result.not_replayed[reason.split(":")[0]] = (
                result.not_replayed.get(reason.split(":")[0], 0) + 1)
            record = failed_record(cell, config.policy, f"regrade: {reason}"[:1000],
                                   float(row["wall_s"]))
        _tally(result, row, record)
        batch.append(record)
        done += 1
        if len(batch) >= 64:
            _flush(store, new_id, batch, on_record, done, total)
    _flush(store, new_id, batch, on_record, done, total)
    store.finish_run(new_id)
    result.episodes = done
    return result


def _regrade_one(
    cell: Any, row: dict[str, Any], text: str, config: Any, the_plan: Any,
    envs: dict[str, Any],
) -> tuple[Record | None, str | None]:
    from simforge.env.pool import make
    from simforge.runs.episode import play_episode
    from simforge.runs.worker import to_record

    stored = Episode.model_validate_json(text)
    env = envs.get(cell.scenario)
    if env is None:
        env = envs[cell.scenario] = make(the_plan.refs[cell.scenario], user=config.user)
    try:
        outcome = play_episode(
            env, StoredMoves(stored), seed=cell.seed, task=cell.task,
            faults=the_plan.profiles.get(cell.profile) or cell.profile,
            policy_seed=cell.policy_seed,
        )
    except Exception as exc:  # the current scenario refuses the stored moves outright
        return None, f"the stored moves do not replay: {type(exc).__name__}: {exc}"
    differs = first_difference(stored, outcome.trajectory)
    if differs is not None:
        return None, f"the stored trajectory does not replay against the current scenario: " \
                     f"{differs}"
    record = to_record(cell, outcome, float(row["wall_s"]), policy=config.policy,
                       trajectories=False)
    record["trajectory"] = text  # what happened is what was stored; only the grades are new
    return record, None


def _tally(result: Regraded, old: dict[str, Any], new: Record) -> None:
    old_state = (old["reward"] is not None, bool(old["passed"]))
    new_state = (new["reward"] is not None, bool(new["passed"]))
    if old_state != new_state:
        result.changed += 1
        if old_state == (True, True) and new_state == (True, False):
            result.passed_to_failed += 1
        elif old_state == (True, False) and new_state == (True, True):
            result.failed_to_passed += 1
    if old["reward"] is not None and new["reward"] is not None and \
            abs(float(old["reward"]) - float(new["reward"])) > 1e-9:
        result.reward_changed += 1


def _flush(store: Any, run_id: str, batch: list[Record],
           on_record: Callable[[Record, int, int], None] | None, done: int, total: int) -> None:
    if not batch:
        return
    store.add_episodes(run_id, batch)
    if on_record is not None:
        for n, record in enumerate(batch, start=done - len(batch) + 1):
            on_record(record, n, total)
    batch.clear()
