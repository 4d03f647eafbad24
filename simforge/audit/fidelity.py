"""Fidelity: replay every recorded call of some episodes against a pack and count how many
answers simforge reproduces.

Each episode runs in a fresh world from its initial state (its task's; for an episode the pack
has no task of, the seed with the setup its trace declares), calls in recorded order, each
straight through the tool (no latency, no faults: fidelity is about the answers). A recorded
error counts under ``errors`` and matches when simforge refuses with the same text; other calls
count under the tool's kind and match when the result is JSON-equal after parsing (numbers equal
within 1e-9 relative) or, for strings, exactly equal.

``reward_agreement`` asks whether the pack predicts outcomes: each episode's recorded actions
(every call, the user's too, one at a time in recorded order, then its last answer) are replayed
in its task and the simulated reward is compared with the recorded one. An episode's task is its
own when it is gold, else a gold task of the same source task in traces of the same format
(another agent's success defines what success is); an episode with no such task, or whose
replay is invalid (reward ``None``), is ``unscored``. The replay succeeds when every correctness
check and gate passes (shapers do not decide success).

Traces of another generation of the same systems are compared through the schema drift learned
from their shapes (:mod:`simforge.synth.learn.schema_drift`:
renamed fields, null versus absent), reported as ``drift``.

``replay_gold`` is the other check: each gold task's own actions, run through a full session,
reach its expected state (``state_matches`` passes).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from simforge.synth.expr.language import same
from simforge.synth.learn.schema_drift import (
    Behaviour,
    BehaviourVotes,
    Drift,
    learn_drift,
    learn_wording,
)
from simforge.synth.pack.files import SCENARIO
from simforge.synth.pack.loader import load_synth_pack
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError
from simforge.tools.pack import Pack
from simforge.trace import iter_episodes
from simforge.trace.episode import Episode
from simforge.world.store import Row, World


def _bucket() -> dict[str, Any]:
    return {"calls": 0, "exact": 0, "rate": None}


def _close(bucket: dict[str, Any]) -> None:
    bucket["rate"] = round(bucket["exact"] / bucket["calls"], 4) if bucket["calls"] else None


def _tasks(folder: Path) -> dict[str, Any]:
    """Every task by its episode id: the scenario's, and the failed episodes' kept apart."""
    from simforge.scenario.loader import load_scenario
    from simforge.synth.pack.files import NONGOLD

    out: dict[str, Any] = {}
    for name in (NONGOLD, SCENARIO):
        path = folder / name
        if path.is_file():
            out.update({str(t.metadata.get("episode_id")): t for t in load_scenario(path).tasks})
    return out


def _initial(pack: Pack, overrides: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Row]]:
    base = pack.base()
    if not overrides:
        return base
    out = dict(base)
    for entity, rows in overrides.items():
        schema = pack.schemas[entity]
        table = dict(base.get(entity, {}))
        for id, fields in rows.items():
            if fields is None:
                table.pop(id, None)
            else:
                table[id] = schema.validate_row(
                    {**table.get(id, {}), **fields, schema.primary_key: id}
                )
        out[entity] = table
    return out


def fidelity(
    folder: Path | str,
    traces: Iterable[Path | str] = (),
    *,
    episodes: list[Episode] | None = None,
    only: set[str] | None = None,
    drift: bool = True,
    behaviour: bool = True,
) -> dict[str, Any]:
    """``{"reads", "writes", "errors": {"calls", "exact", "rate"}, "by_tool", "episodes",
    "reward"}`` (and ``"drift"`` when the traces' generation names or omits fields otherwise
    than the pack's, ``"drift_words"`` when it words refusals otherwise, see
    :mod:`simforge.synth.learn.schema_drift`);
    ``only``: episode ids to measure (the pack's holdout, say); ``drift=False`` compares
    answers as the pack gives them; ``behaviour=False`` learns the shapes and wording of
    another generation but not its behaviour (``"drift_behaviour"``: kept fields, a missing
    tool's constant answer, each half of the tasks measured with what the other half taught)."""
    folder = Path(folder)
    pack = load_synth_pack(folder)
    tasks = _tasks(folder)
    if episodes is None:
        episodes = list(iter_episodes([Path(p) for p in traces]))
    chosen = [e for e in episodes if e.tool_calls and (only is None or e.id in only)]
    shapes = _drift(folder, chosen) if drift else Drift()
    declared = _declared_start(folder, pack)

    def start(episode: Episode) -> World:
        task = tasks.get(episode.id)
        initial = task.initial_state if task else declared(episode)
        return World(pack.schemas, _initial(pack, initial))

    # behaviour differs only between generations, which the shapes tell apart
    folds = _behaviour(pack, chosen, start) if shapes and behaviour else {}
    totals = {"reads": _bucket(), "writes": _bucket(), "errors": _bucket()}
    by_tool: dict[str, dict[str, Any]] = {}
    for episode in chosen:
        learned = folds.get(_fold(episode), Behaviour())
        for call, kind, value, ok in _replay_calls(pack, start(episode), episode, learned):
            category = "errors" if call.error is not None else f"{kind}s"
            entry = by_tool.setdefault(call.tool, {"kind": kind, **{k: _bucket() for k in totals}})
            if call.error is not None:
                exact = not ok and shapes.adapt_error(str(value)) == call.error
            else:
                exact = ok and same(shapes.adapt(call.tool, value), call.result)
            for bucket in (totals[category], entry[category]):
                bucket["calls"] += 1
                bucket["exact"] += int(exact)
    for bucket in totals.values():
        _close(bucket)
    for entry in by_tool.values():
        for key in totals:
            _close(entry[key])
    out = {
        **totals,
        "by_tool": dict(sorted(by_tool.items())),
        "episodes": len(chosen),
        "reward": reward_agreement(folder, chosen),
    }
    if shapes.tools:
        out["drift"] = shapes.to_json()
    if shapes.words:
        out["drift_words"] = shapes.words
    taught = {str(k): b.to_json() for k, b in sorted(folds.items()) if b}
    if taught:
        out["drift_behaviour"] = taught
    return out


FOLDS = 2


def _fold(episode: Episode) -> int:
    """Which half of the tasks an episode belongs to (every trial of a task in one half)."""
    key = str(episode.task.id if episode.task.id is not None else episode.id)
    return zlib.crc32(key.encode()) % FOLDS


def _replay_calls(
    pack: Pack, world: World, episode: Episode, behaviour: Behaviour, votes: Any = None
) -> Iterator[tuple[Any, str, Any, bool]]:
    """Each recorded call run through the pack in recorded order: ``(call, kind, value,
    ok)``, ``value`` the answer or the refusal's text. ``behaviour``: what the traces'
    generation does otherwise (kept fields restored, a missing tool's constant answer);
    ``votes``: a :class:`BehaviourVotes` to learn it from these calls instead."""
    rng = random.Random(0)
    written: set[tuple[str, str]] = set()
    for n, call in enumerate(episode.tool_calls):
        tool = pack.catalog.get(call.tool)
        kind = tool.spec.kind if tool is not None else "read"
        ok, value = False, None
        if tool is None:
            if votes is not None:
                votes.unknown(call.tool, call.result, call.error)
            if call.tool in behaviour.constant:
                ok, value = True, behaviour.constant[call.tool]
            yield call, kind, value, ok
            continue
        mark = world.log_length
        ctx = ToolContext(world, float(n), rng, tool=call.tool, call_id=call.call_id)
        try:
            value, ok = tool.invoke(ctx, call.args if call.args is not None else {}), True
        except ToolError as exc:
            value = exc.message
        if ok and kind == "write":
            for change in world.diff_from(mark):
                if change.op != "updated":
                    continue
                if (
                    votes is not None
                    and call.error is None
                    and (change.entity, change.id) not in written
                ):
                    # a row the pack wrote before may already differ from what the other
                    # generation held: only a first write compares like with like
                    votes.write(call.tool, change.entity, change.fields, value, call.result)
                written.add((change.entity, change.id))
                kept = {
                    name: old
                    for name, (old, _) in change.fields.items()
                    if name in behaviour.fields_kept(call.tool, change.entity)
                }
                if kept:
                    world.update(change.entity, change.id, kept, now=float(n))
                    if isinstance(value, dict):
                        value = {**value, **{k: v for k, v in kept.items() if k in value}}
        yield call, kind, value, ok


def _behaviour(pack: Pack, episodes: list[Episode], start: Any) -> dict[int, Behaviour]:
    """Per fold, the behaviour learned from the episodes of the other folds: no episode is
    measured with what its own answers taught."""
    votes = {k: BehaviourVotes() for k in range(FOLDS)}
    for episode in episodes:
        fold = _fold(episode)
        learner = [v for k, v in votes.items() if k != fold]
        for vote in learner:
            for _ in _replay_calls(pack, start(episode), episode, Behaviour(), vote):
                pass
    return {k: v.learn() for k, v in votes.items()}


def _declared_start(folder: Path, pack: Pack) -> Any:
    """For an episode the pack has no task of (another agent's, another file's): where it
    starts is the seed with the setup its trace declares, as for a held-out task."""
    from simforge.synth.entities.catalog import parents_from_rows
    from simforge.synth.learn.declared_setup import initial_state
    from simforge.synth.learn.text_state import setup_ops
    from simforge.synth.pack.files import STATE, TOOLS, read_json, read_manifest
    from simforge.synth.runtime.interpreter import Runtime
    from simforge.synth.runtime.replay_table import ReplayTable
    from simforge.synth.runtime.text_model import STATE_ENTITY, STATE_ID, Model

    manifest = read_manifest(folder)
    entities = manifest.get("entities") or {}
    pks = {name: info["pk"] for name, info in entities.items()}
    base = {entity: dict(rows) for entity, rows in pack.base().items()}
    handlers = {e["spec"]["name"]: e["handler"] for e in read_json(folder / TOOLS)}
    replays = {
        t: ReplayTable(v) for t, v in read_json(folder / manifest["files"]["replay"]).items()
    }
    subs = {name: info.get("subs") or {} for name, info in entities.items()}
    rt = Runtime(parents_from_rows({k: v.values() for k, v in base.items()}, subs, pks), replays)
    model = Model.from_json(read_json(folder / STATE)) if manifest["files"].get("state") else None
    setup = manifest.get("setup") or {}

    def start(episode: Episode) -> dict[str, dict[str, Row]]:
        rows = initial_state(episode, setup, handlers, base, pks, rt)
        if model is not None:
            rows[STATE_ENTITY] = {STATE_ID: model.row(setup_ops(episode))}
        return rows

    return start


def _drift(folder: Path, episodes: list[Episode]) -> Drift:
    """The shape drift from the pack's generation (its recorded responses) to the traces'."""
    from simforge.synth.pack.files import read_json, read_manifest

    files = read_manifest(folder)["files"]
    recorded = read_json(folder / files["replay"])
    ours = {
        tool: [e["response"]["result"] for e in entries if "result" in e["response"]]
        for tool, entries in recorded.items()
    }
    theirs: dict[str, list[Any]] = {}
    for episode in episodes:
        for call in episode.tool_calls:
            if call.error is None and call.result is not None:
                theirs.setdefault(call.tool, []).append(call.result)
    from simforge.synth.pack.files import TOOLS

    entities = {
        entry["spec"]["name"]: entry["handler"].get("entity")
        for entry in read_json(folder / TOOLS)
        if entry["handler"].get("entity") and entry["handler"].get("returns", "row") == "row"
    }
    drift = learn_drift(ours, theirs, entities)
    drift.words = learn_wording(
        (
            e["response"]["error"]
            for entries in recorded.values()
            for e in entries
            if isinstance(e["response"].get("error"), str)
        ),
        (call.error for episode in episodes for call in episode.tool_calls if call.error),
    )
    return drift


def holdout_ids(folder: Path | str) -> set[str]:
    from simforge.synth.pack.files import read_manifest

    return set(read_manifest(Path(folder)).get("split", {}).get("holdout") or [])


def replay_gold(folder: Path | str, split: str | None = "train") -> dict[str, Any]:
    """Run each gold task's reference actions in a session; count ``state_matches`` passes.
    ``split``: the tasks of the episodes learned from (``train``, the default: can the pack
    reproduce what it learned?), the held-out ones (``eval``: does it predict episodes it never
    saw?), or all (``None``)."""
    from simforge.env.core import SimforgeEnv
    from simforge.scenario.registry import ScenarioRegistry

    loaded = ScenarioRegistry.load_path(Path(folder) / SCENARIO)
    env = SimforgeEnv(loaded)
    passed, total, failures = 0, 0, []
    for task in loaded.scenario.tasks:
        if not task.metadata.get("gold") or (split is not None and task.split != split):
            continue
        total += 1
        env.reset(seed=0, options={"task": task.id})
        for step in task.oracle:
            if step.calls:
                env.step(
                    {"tool_calls": [{"name": c.tool, "arguments": c.args} for c in step.calls]}
                )
            elif step.answer is not None:
                env.step({"final_answer": step.answer})
            if env.session is not None and env.session.done:
                break
        verdicts = {v.name: v for v in env.score().verdicts}
        verdict = verdicts.get("state_matches")
        nothing_expected = not task.expected.state and not task.expected.created
        if (verdict is None and nothing_expected) or (verdict is not None and verdict.passed):
            passed += 1
        else:
            failures.append(task.id)
    return {
        "tasks": total,
        "passed": passed,
        "rate": round(passed / total, 4) if total else None,
        "failed": failures,
    }


CONFUSION = ("hit", "missed_success", "false_success", "correct_fail", "unscored")


def reward_agreement(
    folder: Path | str, episodes: Iterable[Episode], *, details: bool = False
) -> dict[str, Any]:
    """``{"episodes", "agree", "rate", "confusion": {hit, missed_success, false_success,
    correct_fail, unscored}}``: ``episodes`` counts the scored ones, ``rate`` is ``agree /
    episodes``. With ``details``, ``"per_episode"`` lists each one's task, both rewards and the
    validators that failed."""
    from simforge.env.core import SimforgeEnv
    from simforge.scenario.registry import ScenarioRegistry
    from simforge.synth.tasks.episode_tasks import is_gold

    path = Path(folder) / SCENARIO
    confusion = dict.fromkeys(CONFUSION, 0)
    rows: list[dict[str, Any]] = []
    episodes = list(episodes)
    if not path.is_file() or not episodes:
        return _agreement(confusion, rows, details)
    loaded = ScenarioRegistry.load_path(path)
    tasks = loaded.scenario.tasks
    own = {str(t.metadata.get("episode_id")): t for t in tasks}
    gold_of: dict[tuple[str, str], Any] = {}
    for t in tasks:
        source = t.metadata.get("source_task")
        if t.metadata.get("gold") and source is not None:
            # task ids are a benchmark's own: the same id in traces of another format is
            # another task
            gold_of.setdefault((str(t.metadata.get("source")), str(source)), t)
    env = SimforgeEnv(loaded)
    for episode in episodes:
        recorded = is_gold(episode)
        task = own.get(episode.id)
        if task is None or not task.metadata.get("gold"):
            key = (episode.source.format, str(episode.task.id))
            task = gold_of.get(key) if episode.task.id is not None else None
        row: dict[str, Any] = {"episode": episode.id, "recorded": recorded}
        if task is None:
            confusion["unscored"] += 1
            rows.append({**row, "outcome": "unscored", "why": "no gold task"})
            continue
        score = _replay_episode(env, task.id, episode)
        row.update(task=task.id, reward=score.reward, failed=score.failed)
        if score.reward is None:
            confusion["unscored"] += 1
            rows.append({**row, "outcome": "unscored", "why": score.invalid_reason})
            continue
        simulated = _succeeded(score)
        outcome = (
            ("hit" if simulated else "missed_success")
            if recorded
            else ("false_success" if simulated else "correct_fail")
        )
        confusion[outcome] += 1
        rows.append({**row, "outcome": outcome})
    return _agreement(confusion, rows, details)


def _succeeded(score: Any) -> bool:
    """Whether the replay did the task: every correctness check and every gate (safety,
    integrity) passed. Robustness and efficiency shape the reward by at most the rubric's
    ``shaping``, but a production label says whether the task was done, not how gracefully
    (a failed write the user then gave up on is no failure of the task)."""
    outcome = ("correctness", "safety", "integrity")
    return all(v.passed for v in score.verdicts if v.category in outcome)


def _agreement(
    confusion: dict[str, int], rows: list[dict[str, Any]], details: bool
) -> dict[str, Any]:
    scored = sum(v for k, v in confusion.items() if k != "unscored")
    agree = confusion["hit"] + confusion["correct_fail"]
    out: dict[str, Any] = {
        "episodes": scored,
        "agree": agree,
        "rate": round(agree / scored, 4) if scored else None,
        "confusion": confusion,
    }
    if details:
        out["per_episode"] = rows
    return out


def _replay_episode(env: Any, task_id: str, episode: Episode) -> Any:
    """The episode's calls, one step each in recorded order (production ran a message's
    parallel calls one after another, and a write's result is what the next call saw), then
    its last answer, in the task."""
    from simforge.synth.learn.timing import is_infrastructure

    env.reset(seed=0, options={"task": task_id})
    answers = [m.content for m in episode.messages if m.role == "assistant" and m.content]
    for call in episode.tool_calls:
        if call.error and is_infrastructure(call.error):
            continue
        if env.session is None or env.session.done:
            break
        args = call.args if isinstance(call.args, dict) else {}
        env.step({"tool_calls": [{"name": call.tool, "arguments": args}]})
    if env.session is not None and not env.session.done:
        env.step({"final_answer": answers[-1] if answers else "done"})
    return env.score()


def sweep(
    traces: Iterable[Path | str],
    out: Path | str,
    *,
    data: Iterable[Path | str] = (),
    seeds: Iterable[int] = range(5),
    holdout: float = 0.25,
) -> list[dict[str, Any]]:
    """Synthesis over several train/holdout splits, each measured on its held-out episodes
    (a pack per seed under ``out``): ``[{"seed", "train", "held_out", "reads", "writes",
    "errors", "reward", "seconds"}]``. The spread across seeds is what one split hides."""
    import time

    from simforge.synth.pipeline import synthesize

    traces, data = [Path(p) for p in traces], [Path(p) for p in data]
    episodes = list(iter_episodes(traces))
    rows = []
    for seed in seeds:
        folder = Path(out) / f"seed-{seed}"
        started = time.perf_counter()
        report = synthesize(
            [],
            folder,
            data=data,
            holdout=holdout,
            seed=seed,
            episodes=[e.model_copy(deep=True) for e in episodes],
        )
        seconds = time.perf_counter() - started
        result = fidelity(folder, episodes=episodes, only=set(report.holdout))
        rows.append(
            {
                "seed": seed,
                "train": report.train,
                "held_out": len(report.holdout),
                **{k: result[k] for k in ("reads", "writes", "errors", "reward")},
                "seconds": round(seconds, 2),
            }
        )
    return rows
