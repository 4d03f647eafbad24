"""``synthesize``: traces (and a data snapshot) in, a pack directory out.

``synthesize`` composes five stages, each a function from typed inputs to a typed output:

- :func:`read_stage` -> :class:`Corpus`: read episodes (:mod:`.traces`: rejected records
  counted, snapshots among the trace paths read as data; episodes without tool calls counted and
  skipped), split train/holdout by a seeded hash of the episode id, version tools whose calls
  disagree on their arguments' shape;
- :func:`entities_stage` -> :class:`World`: load the snapshot (:mod:`.snapshot`), recognise
  entities (:mod:`.catalog`), profile tools, learn seed rows;
- :func:`learn_stage` -> :class:`Learned`: walk every training episode over the seed
  (:mod:`.observations`), learn a handler and error conditions per tool (:mod:`.handler_choice`),
  schemas (:mod:`.json_schemas`), timing (:mod:`.timing`), the declared setup;
- :func:`tasks_stage` -> :class:`Tasks`: a task per episode (:mod:`.episode_tasks`);
- :func:`write_stage`: the files (:mod:`.files`).

Every stage also fills its part of the :class:`SynthReport`.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simforge.synth.entities import bare_ids as kinds
from simforge.synth.entities.catalog import (
    EntityCatalog,
    fake_row,
    from_snapshot,
    is_key_name,
    parents,
)
from simforge.synth.expr.language import same
from simforge.synth.learn import text_state as textstate
from simforge.synth.learn import timing
from simforge.synth.learn.declared_setup import initial_state as setup_initial
from simforge.synth.learn.declared_setup import learn_setup
from simforge.synth.learn.handler_choice import Learner, share_not_found
from simforge.synth.learn.json_schemas import (
    infer_schema,
    json_type,
    open_field_names,
    value_type,
)
from simforge.synth.learn.observations import (
    CallObservation,
    EpisodeState,
    ToolProfile,
    learn_seed_rows,
    named_like_write,
    profile,
    walk,
)
from simforge.synth.learn.preconditions import share_not_found_texts, share_texts
from simforge.synth.learn.seed_rows import seed_kinds, vote_refs
from simforge.synth.pack import files as pack_files
from simforge.synth.read.snapshot import load_snapshots
from simforge.synth.read.traces import Inputs, NothingToLearn, read_traces, why_nothing
from simforge.synth.runtime.replay_table import ReplayTable
from simforge.synth.runtime.text_model import STATE_ENTITY, STATE_ID, STATE_KEY
from simforge.synth.tasks.episode_tasks import (
    build_task,
    handed_over,
    required_writes,
    stuffing_bounds,
    unproven,
)
from simforge.trace.episode import Episode

Row = dict[str, Any]
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``."""


class SynthWarning(UserWarning):
    """Something in the input that synthesis worked around (a conflicting tool, say)."""


@dataclass
class SynthReport:
    out: Path
    episodes: int = 0
    empty_episodes: int = 0
    train: int = 0
    holdout: list[str] = field(default_factory=list)
    tools: int = 0
    entities: dict[str, int] = field(default_factory=dict)
    handlers: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    tasks: int = 0
    gold_tasks: int = 0
    rejected: int = 0
    """Trace records (or whole files) that could not be read, as ``simforge ingest`` counts."""
    rejections: list[str] = field(default_factory=list)
    """The first of them, each ``file:line ...: reason``."""
    read_as_data: list[str] = field(default_factory=list)
    """Trace paths that were data snapshots, read as if given with ``--data``."""
    eval_tasks: int = 0
    """Tasks made of held-out episodes (``split: eval``)."""
    eval_skipped: list[str] = field(default_factory=list)
    """Held-out episodes left out of the eval split (they call tools training never saw)."""
    policy_chars: int = 0
    """Length of the agent policy found in the traces (0: none)."""
    nongold_tasks: int = 0
    """Training episodes labelled failed (tasks with nothing to expect, out of training unless
    kept)."""
    declared_only: list[str] = field(default_factory=list)
    """Tools the traces declare that no training call used (in the catalog as declared)."""
    unproven: list[dict[str, str]] = field(default_factory=list)
    """Gold episodes left out of the tasks because nothing in them proves the work (they changed
    nothing observable and every fact of their answer is given to the agent, or backed by no
    tool result), each ``{"task", "episode", "why"}``: a task an agent passes by saying back
    what it was given would pay for no work."""


ENDING_TOOL = re.compile(r"^(transfer|hand_?off|escalate)_to_(a_)?human", re.IGNORECASE)
"""Tools that hand the conversation to a person (tau2's ``transfer_to_human_agents``): a
successful call ends the episode."""


def in_holdout(episode_id: str, fraction: float, seed: int) -> bool:
    """A deterministic draw per episode: the same split in every process and every run."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(f"{seed}:{episode_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _safe_name(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_\-]", "_", name)[:64] or "tool"
    return clean if re.match(r"[A-Za-z_]", clean) else f"t_{clean}"[:64]


def version_conflicts(episodes: list[Episode]) -> list[str]:
    """Tools whose calls fall into argument shapes with no key in common, or the same key with
    different JSON types, are split: the less used shape becomes ``<name>_v2`` (and so on)."""
    shapes: dict[str, list[tuple[dict[str, str], int]]] = {}
    assignment: dict[tuple[str, frozenset[tuple[str, str]]], str] = {}
    for episode in episodes:
        for call in episode.tool_calls:
            args = call.args if isinstance(call.args, dict) else {}
            sig = {k: value_type(v) for k, v in args.items()}
            groups = shapes.setdefault(call.tool, [])
            for i, (keys, n) in enumerate(groups):
                if _compatible(keys, sig):
                    groups[i] = ({**keys, **sig}, n + 1)
                    break
            else:
                groups.append((sig, 1))
    messages = []
    for tool, groups in shapes.items():
        if len(groups) < 2:
            continue
        messages.append(
            f"tool {tool!r}: {len(groups)} incompatible argument schemas "
            f"({', '.join(str(sorted(g[0])) for g in groups)}); versioned as "
            + ", ".join(f"{tool}_v{i + 1}" for i in range(1, len(groups)))
        )
        ranked = sorted(range(len(groups)), key=lambda i: -groups[i][1])
        for rank, i in enumerate(ranked):
            if rank:
                assignment[(tool, frozenset(groups[i][0].items()))] = f"{tool}_v{rank + 1}"
    if assignment:
        for episode in episodes:
            for call in episode.tool_calls:
                args = call.args if isinstance(call.args, dict) else {}
                sig = {k: value_type(v) for k, v in args.items()}
                for (tool, shape), new in assignment.items():
                    if call.tool == tool and _compatible(dict(shape), sig):
                        call.tool = new
                        break
    return messages


def _compatible(a: dict[str, str], b: dict[str, str]) -> bool:
    if not a or not b:
        return True
    common = set(a) & set(b)
    if not common:
        return False
    return all(a[k] == b[k] or "null" in (a[k], b[k]) for k in common)


@dataclass
class Corpus:
    """What the read stage hands on: the episodes read, the ones with tool calls, split into
    training and held-out by :func:`in_holdout`, and every data snapshot to load."""

    inputs: Inputs
    episodes: list[Episode]
    usable: list[Episode]
    train: list[Episode]
    held: list[Episode]
    data: list[Path]


@dataclass
class World:
    """What the entities stage hands on: the entity catalog with its seed rows (``base``, by
    entity and id), primary keys, sub-record parents, each tool's profile, and the entity each
    bare id is the primary key of."""

    catalog: EntityCatalog
    profiles: dict[str, ToolProfile]
    base: dict[str, dict[str, Row]]
    pks: dict[str, str]
    parent_of: dict[str, str]
    primary: dict[str, str]


@dataclass
class Learned:
    """What the learn stage hands on: every training episode walked over the seed, the replay
    table and learned handler (``descs``, in profile order) of each tool, the text-only state,
    the catalog entries of ``tools.json``, the declared setup, and the agent policy."""

    states: list[tuple[Episode, EpisodeState]]
    replays: dict[str, ReplayTable]
    learner: Learner
    descs: list[dict[str, Any]]
    text_state: textstate.TextState | None
    tool_entries: list[dict[str, Any]]
    setup: dict[str, list[dict[str, Any]]]
    policy: str | None


@dataclass
class Tasks:
    """What the tasks stage hands on: the scenario's tasks (training, and eval from held-out
    episodes) and the failed training episodes' tasks kept apart."""

    tasks: list[dict[str, Any]]
    failed: list[dict[str, Any]]


Warn = Callable[[str], None]


def synthesize(
    traces: Iterable[Path | str],
    out: Path | str,
    *,
    data: Iterable[Path | str] = (),
    holdout: float = 0.0,
    seed: int = 0,
    name: str | None = None,
    episodes: list[Episode] | None = None,
    progress: Progress | None = None,
    keep_nongold: bool = False,
) -> SynthReport:
    """Learn a pack from ``traces`` (or ``episodes``) and ``data``; write it to ``out``.

    Training episodes labelled failed become tasks with nothing to expect; they are written to
    ``scenario-nongold.yaml``, out of the training split, unless ``keep_nongold``.

    Raises :class:`~simforge.synth.read.traces.NothingToLearn` (before writing anything) when no
    episode with tool calls is left to learn from, and
    :class:`~simforge.synth.read.snapshot.SnapshotError` for a snapshot file that does not parse.
    """
    out = Path(out)
    tick = progress or (lambda stage, done, total: None)
    report = SynthReport(out=out)

    def warn(message: str) -> None:
        # called by the stages: the warning points at synthesize's caller
        report.warnings.append(message)
        warnings.warn(message, SynthWarning, stacklevel=4)

    corpus = read_stage(traces, data, episodes, holdout, seed, tick, report, warn)
    world = entities_stage(corpus, warn)
    learned = learn_stage(corpus, world, tick, report)
    made = tasks_stage(corpus, world, learned, keep_nongold, report, warn)
    write_stage(out, name, holdout, seed, keep_nongold, corpus, world, learned, made, report)
    return report


def read_stage(
    traces: Iterable[Path | str],
    data: Iterable[Path | str],
    episodes: list[Episode] | None,
    holdout: float,
    seed: int,
    tick: Progress,
    report: SynthReport,
    warn: Warn,
) -> Corpus:
    """Read the traces (unless ``episodes`` are given), split train/holdout, version tools
    whose calls take incompatible argument shapes. Raises ``NothingToLearn`` when nothing is
    left to learn from."""
    paths = [Path(p) for p in data]
    inputs = Inputs()
    if episodes is None:
        inputs = read_traces(traces, tick)
        episodes = inputs.episodes
        paths.extend(p for p in inputs.as_data if p not in paths)
        report.read_as_data = [str(p) for p in inputs.as_data]
        report.rejected = inputs.result.rejected
        report.rejections = [str(r) for r in inputs.result.rejections[:20]]
    report.episodes = len(episodes)
    usable = [e for e in episodes if e.tool_calls]
    report.empty_episodes = len(episodes) - len(usable)
    train = [e for e in usable if not in_holdout(e.id, holdout, seed)]
    if not episodes:
        raise NothingToLearn(f"nothing could be read: {why_nothing(inputs)}", inputs)
    rejected = f" ({why_nothing(inputs)})" if report.rejected else ""
    if not usable:
        raise NothingToLearn(
            f"nothing to learn from: none of the {len(episodes)} episodes read has a tool "
            f"call{rejected}",
            inputs,
        )
    if not train:
        raise NothingToLearn(
            f"nothing to learn from: holdout {holdout} keeps all {len(usable)} episodes with "
            "tool calls out of learning",
            inputs,
        )
    if report.rejected:
        warn(f"{report.rejected} trace record(s) rejected, first: {inputs.result.rejections[0]}")
    for message in version_conflicts(usable):
        warn(message)
    held = [e for e in usable if in_holdout(e.id, holdout, seed)]
    report.holdout = [e.id for e in held]
    report.train = len(train)
    return Corpus(inputs, episodes, usable, train, held, paths)


def entities_stage(corpus: Corpus, warn: Warn) -> World:
    """Recognise entities in the snapshot and the training calls, profile the tools, learn seed
    rows (faker fills ids referenced and never shown)."""
    train = corpus.train
    catalog = EntityCatalog()
    notes: list[str] = []
    tables = load_snapshots(corpus.data, notes)
    for message in notes:
        warn(message)
    hints = {
        k
        for e in train
        for c in e.tool_calls
        if isinstance(c.args, dict)
        for k in c.args
        if is_key_name(k)
    }
    from_snapshot(tables, catalog, hints)
    kinds.discover(train, catalog)
    profiles = profile(train, catalog)
    learn_seed_rows(train, catalog, profiles)
    if catalog.kinds:
        seed_kinds(train, catalog, profiles)
        vote_refs(train, catalog, profiles)
    _fill_gaps(catalog)
    return World(
        catalog=catalog,
        profiles=profiles,
        base={name_: entity.rows for name_, entity in catalog.entities.items()},
        pks={name_: entity.pk for name_, entity in catalog.entities.items()},
        parent_of=parents(catalog),
        primary={id: ref.entity for id, ref in catalog.index().items() if ref.sub is None},
    )


def learn_stage(corpus: Corpus, world: World, tick: Progress, report: SynthReport) -> Learned:
    """Walk every training episode over the seed, learn each tool's handler and error
    conditions, the state shown only in text, the tools' catalog entries and the declared
    setup. Adds the text state's row and the seed's corrections to ``world.base``."""
    train, profiles, base, pks = corpus.train, world.profiles, world.base, world.pks
    sink: dict[str, list[CallObservation]] = {}
    states: list[tuple[Episode, EpisodeState]] = []
    for n, episode in enumerate(train, 1):
        state = walk(episode, world.catalog, profiles, base, pks, world.parent_of, sink,
                     world.primary)
        states.append((episode, state))
        if n % 200 == 0 or n == len(train):
            tick("walk", n, len(train))

    replays: dict[str, ReplayTable] = {}
    for tool, calls in sink.items():
        table = replays[tool] = ReplayTable()
        for c in calls:
            table.add(c.args, {"error": c.error} if c.error is not None else {"result": c.result})
    from simforge.synth.runtime.interpreter import Runtime

    learner = Learner(world.catalog, base, pks, Runtime(world.parent_of, replays))
    descs = []
    for n, (tool, prof) in enumerate(profiles.items(), 1):
        descs.append(learner.learn(prof, sink.get(tool, [])))
        tick("learn", n, len(profiles))
    share_not_found(descs)
    share_not_found_texts(descs)
    share_texts(descs, _vocabulary(train))
    text_state = _learn_text_state(train, profiles, descs)
    if text_state is not None:
        base[STATE_ENTITY] = {STATE_ID: {STATE_KEY: STATE_ID, **text_state.model.row([])}}
        pks[STATE_ENTITY] = STATE_KEY
    # rows every training episode that saw them saw alike, and not as the snapshot has them:
    # the snapshot is behind production there
    for entity_name, id, row in _seed_corrections(states, base):
        base.setdefault(entity_name, {})[id] = row
    declared = declared_tools(train)
    # fields the snapshot shows open (more values than an enum holds) are never enums
    open_fields = open_field_names(
        row for rows in base.values() for row in rows.values()
    )
    tool_entries = []
    for (tool, prof), desc in zip(profiles.items(), descs, strict=True):
        tool_entries.append(_tool_entry(tool, prof, desc, declared.get(tool), open_fields))
        report.handlers[tool] = desc["kind"]
    # tools the traces declare and no training call used: in the catalog as declared (their
    # description and parameters), answering that nothing is known of them
    for tool, definition in declared.items():
        if tool not in profiles:
            tool_entries.append(_declared_entry(tool, definition))
            report.handlers[tool] = "declared"
            report.declared_only.append(tool)
    report.tools = len(tool_entries)
    setup = learn_setup(states, base, world.catalog.index())
    return Learned(states, replays, learner, descs, text_state, tool_entries, setup,
                   _policy_of(train))


def tasks_stage(
    corpus: Corpus, world: World, learned: Learned, keep_nongold: bool, report: SynthReport,
    warn: Warn,
) -> Tasks:
    """A task per training episode (from where its setup starts and what it did), an eval task
    per held-out episode that calls only tools training saw; gold tasks that prove no work are
    left out, failed training episodes' tasks kept apart unless ``keep_nongold``."""
    train, base, pks = corpus.train, world.base, world.pks
    text_state, states = learned.text_state, learned.states
    changed_by = textstate.changers(text_state, train) if text_state is not None else {}
    by_name = {desc["tool"]: desc for desc in learned.descs}
    from simforge.synth.runtime.interpreter import Runtime

    setup_rt = Runtime(world.parent_of, learned.replays)

    def starts(episode: Episode) -> dict[str, dict[str, Row]]:
        return setup_initial(episode, learned.setup, by_name, base, pks, setup_rt)

    modelled = learned.learner.modelled
    # what every agent reads before doing anything: no fact in it proves a task's work
    shown = json.dumps(
        [e["spec"] for e in learned.tool_entries], ensure_ascii=False
    ) + (learned.policy or "")
    tasks = []
    for index, (episode, state) in enumerate(states):
        task = build_task(index, episode, state, base, pks, modelled, shown)
        task["initial_state"] = _merge(starts(episode), task["initial_state"])
        tasks.append(_with_text_state(task, episode, text_state, changed_by))
    # Held-out episodes become the eval split: walked over the same seed world, but nothing of
    # them reaches what was learned. One that calls a tool no training episode showed would
    # be unsolvable in this pack, which says nothing of the agent: it is counted, not kept.
    known = {
        e["spec"]["name"] for e in learned.tool_entries if e["handler"]["kind"] != "declared"
    }
    held_kept: list[Episode] = []
    for episode in corpus.held:
        unseen = sorted({_safe_name(c.tool) for c in episode.tool_calls} - known)
        if unseen:
            report.eval_skipped.append(f"{episode.id}: calls {', '.join(unseen)}")
            continue
        held_kept.append(episode)
        state = walk(episode, world.catalog, world.profiles, base, pks, world.parent_of, {},
                     world.primary)
        task = build_task(len(tasks), episode, state, base, pks, modelled, shown)
        # where it starts is what its setup declared, never what its own reads showed
        task["initial_state"] = starts(episode)
        task["split"] = "eval"
        tasks.append(_with_text_state(task, episode, text_state, changed_by))
    if report.eval_skipped:
        warn(
            f"{len(report.eval_skipped)} held-out episode(s) call tools that no training episode "
            f"shows and are not eval tasks, first: {report.eval_skipped[0]}"
        )
    writes = {tool for tool, prof in world.profiles.items() if prof.is_write}
    proven = []
    for task, episode in zip(tasks, [e for e, _ in states] + held_kept, strict=True):
        expected = task["expected"]
        graded = expected.get("state") or expected.get("created") or expected.get("outputs")
        if task["metadata"]["gold"] and not graded:
            task["validators"] = handed_over(episode, ENDING_TOOL) or required_writes(
                episode, writes
            )
        why = unproven(task, episode)
        if why is None:
            proven.append(task)
        else:
            report.unproven.append({"task": task["id"], "episode": episode.id, "why": why})
    tasks = proven
    if report.unproven:
        first = report.unproven[0]
        warn(
            f"{len(report.unproven)} gold episode(s) left out: nothing in them proves the work, "
            f"first: {first['task']} (episode {first['episode']}): {first['why']}"
        )
    failed = [t for t in tasks if not t["metadata"]["gold"] and t.get("split") != "eval"]
    if not keep_nongold:
        tasks = [t for t in tasks if t["metadata"]["gold"] or t.get("split") == "eval"]
    report.nongold_tasks = len(failed)
    report.tasks = len(tasks)
    report.eval_tasks = sum(1 for t in tasks if t.get("split") == "eval")
    report.gold_tasks = sum(1 for t in tasks if t["metadata"]["gold"])
    return Tasks(tasks, failed)


def write_stage(
    out: Path,
    name: str | None,
    holdout: float,
    seed: int,
    keep_nongold: bool,
    corpus: Corpus,
    world: World,
    learned: Learned,
    made: Tasks,
    report: SynthReport,
) -> None:
    """The pack's files: ``pack.yaml`` (entities, split, setup, stats), ``tools.json``, the
    world and replay tables, the scenario (and its non-gold sibling), the policy, the text
    state."""
    catalog, text_state, policy = world.catalog, learned.text_state, learned.policy
    pack_name = name or _safe_id(out.name)
    scenario = {
        "id": f"synth/{pack_name}-v1",
        "description": f"Synthesized from {report.train} episodes.",
        "pack": ".",
        "think_time": timing.to_json(timing.think_time(corpus.train)),
        "call_timeout": 60.0,
        "budgets": {
            # room for a production episode's calls made one at a time (every call of the
            # longest episode, the user's too), not only for its grouped reference steps
            "max_steps": max([len(e.tool_calls) + 10 for e in corpus.usable] or [30]),
            "max_sim_seconds": 86400.0,
        },
        "seeds": [0],
        # production's successful answers are not stuffing: the bounds they reached
        "validators": [{"name": "answer_stuffing", "params": stuffing_bounds(corpus.train)}],
        "tasks": made.tasks,
    }
    entities_manifest = {
        name_: {
            "pk": entity.pk,
            "fields": {
                **dict.fromkeys(entity.fields, "null"),
                **_field_schemas(entity.rows.values()),
            },
            "subs": entity.subs,
            "source": entity.source,
            "rows": len(entity.rows),
        }
        for name_, entity in catalog.entities.items()
    }
    if text_state is not None:
        entities_manifest[STATE_ENTITY] = {
            "pk": STATE_KEY,
            "fields": {
                STATE_KEY: "string",
                "ops": "array",
                **dict.fromkeys(text_state.model.columns.values(), "null"),
            },
            "subs": {},
            "source": "textstate",
            "rows": 1,
        }
    report.entities = {k: len(entity.rows) for k, entity in catalog.entities.items()}
    pack_files.write_pack(
        out,
        manifest={
            "name": pack_name,
            "description": f"Synthesized by simforge from {report.train} episodes.",
            "entities": entities_manifest,
            "split": {"holdout_fraction": holdout, "seed": seed, "holdout": report.holdout},
            "setup": learned.setup,
            "stats": {
                "episodes": report.episodes,
                "empty_episodes": report.empty_episodes,
                "train": report.train,
                "warnings": report.warnings,
                "unproven": report.unproven,
            },
        },
        tools=learned.tool_entries,
        world={k: list(v.values()) for k, v in world.base.items()},
        replay={tool: table.entries for tool, table in learned.replays.items()},
        scenario=scenario,
        policy=policy,
        state=text_state.model.to_json() if text_state is not None else None,
        nongold=(
            {
                **scenario,
                "id": f"synth/{pack_name}-nongold-v1",
                "description": "Training episodes labelled failed: nothing to expect.",
                "tasks": made.failed,
            }
            if made.failed and not keep_nongold
            else None
        ),
    )
    report.policy_chars = len(policy or "")


def _learn_text_state(
    train: list[Episode], profiles: dict[str, Any], descs: list[dict[str, Any]]
) -> textstate.TextState | None:
    """State shown only in text (:mod:`.text_state`): tools whose text answers replay could only
    keep one of per argument tuple get a ``state`` handler when it reproduces at least as many
    training calls, and every state-changing tool records its calls in the history."""
    by_tool = {desc["tool"]: desc for desc in descs}
    candidates = {
        tool
        for tool, prof in profiles.items()
        if by_tool[tool]["kind"] == "replay"
        and prof.results
        and all(isinstance(r, str) for r in prof.results)
    }
    learned = textstate.learn(train, candidates, named_like_write)
    if learned is None:
        return None
    for tool, handler in learned.handlers.items():
        old = by_tool[tool]
        if textstate.accuracy(learned, train, tool) >= float(old.get("train_accuracy", 0.0)):
            for key in [k for k in old if k not in ("tool", "errors")]:
                del old[key]
            old.update(handler)
            old["train_accuracy"] = round(textstate.accuracy(learned, train, tool), 4)
    for tool in learned.changes & set(by_tool):
        by_tool[tool]["records"] = True
    return learned


def _with_text_state(
    task: dict[str, Any],
    episode: Episode,
    learned: textstate.TextState | None,
    changed_by: dict[str, set[str]],
) -> dict[str, Any]:
    """The task's ``SessionState``: its history starts with the setup its episode declared,
    and a gold task expects the state its episode last showed (any change of it allowed)."""
    if learned is None:
        return task
    model = learned.model
    initial = model.row(textstate.setup_ops(episode))
    task["initial_state"] = {**task["initial_state"], STATE_ENTITY: {STATE_ID: initial}}
    expected = dict(task["expected"])
    if task["metadata"]["gold"]:
        final = textstate.final_values(learned, episode, changed_by)
        if final:
            state = dict(expected.get("state") or {})
            state[STATE_ENTITY] = {STATE_ID: final}
            expected["state"] = state
    allow = dict(expected.get("allow_changes") or {})
    allow[STATE_ENTITY] = ["ops", *sorted(model.columns.values())]
    expected["allow_changes"] = allow
    task["expected"] = expected
    return task


def _merge(
    predicted: dict[str, dict[str, Row]], observed: dict[str, dict[str, Row]]
) -> dict[str, dict[str, Row]]:
    """Initial rows: the setup's, with the episode's own observations over them."""
    out = {entity: dict(rows) for entity, rows in predicted.items()}
    for entity, rows in observed.items():
        out.setdefault(entity, {}).update(rows)
    return out


def _seed_corrections(
    states: list[tuple[Episode, EpisodeState]], base: dict[str, dict[str, Row]]
) -> list[tuple[str, str, Row]]:
    """Rows whose fields training episodes saw differing from the snapshot before writing
    them, every episode that saw the row seeing the field alike (a field each episode's setup
    sets its own way is left alone)."""
    seen: dict[tuple[str, str], list[Row]] = {}
    for _, state in states:
        # every episode that saw the row, the ones that saw it as the snapshot has it too
        for key, row in state.first_seen.items():
            seen.setdefault(key, []).append(row)
    out = []
    for (entity, id), found in seen.items():
        snapshot = base.get(entity, {}).get(id)
        if snapshot is None:
            continue
        first = found[0]
        fields = {
            k: first.get(k)
            for k in first
            if k in snapshot
            and not same(first.get(k), snapshot.get(k))
            and all(k in r and same(r.get(k), first.get(k)) for r in found[1:])
        }
        if fields:
            out.append((entity, id, {**snapshot, **fields}))
    return out


def _vocabulary(episodes: list[Episode]) -> set[str]:
    """The words the traces use (messages, tool results, errors): how the system inflects its
    verbs, for texts shared between tools."""
    words: set[str] = set()
    pattern = re.compile(r"[A-Za-z][a-z]{2,}")
    for episode in episodes:
        for message in episode.messages:
            if message.content:
                words.update(w.lower() for w in pattern.findall(message.content[:4000]))
        for call in episode.tool_calls:
            if call.error:
                words.update(w.lower() for w in pattern.findall(call.error))
            elif call.result is not None:
                for leaf in _strings(call.result):
                    words.update(w.lower() for w in pattern.findall(leaf[:200]))
    return words


def _strings(value: Any, depth: int = 5) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict) and depth:
        for item in value.values():
            yield from _strings(item, depth - 1)
    elif isinstance(value, list) and depth:
        for item in value[:50]:
            yield from _strings(item, depth - 1)


def _policy_of(episodes: list[Episode]) -> str | None:
    """The agent policy the traces carry (tau2's ``environment_info.policy``): the one most
    training episodes were run under."""
    counts: dict[str, int] = {}
    for episode in episodes:
        text = episode.metadata.get("policy")
        if isinstance(text, str) and text.strip():
            counts[text] = counts.get(text, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def _safe_id(text: str) -> str:
    return re.sub(r"[^a-z0-9_\-]+", "-", text.lower()).strip("-") or "pack"


def _field_schemas(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for i, row in enumerate(rows):
        for k, v in row.items():
            kind = value_type(v)
            if fields.get(k) in (None, "null"):
                fields[k] = kind
        if i > 500:
            break
    return fields


def _fill_gaps(catalog: EntityCatalog) -> None:
    """Rows for ids that other rows reference but nothing ever showed (faker, seeded per id)."""
    for entity in list(catalog.entities.values()):
        for row in list(entity.rows.values())[:5000]:
            for key, value in row.items():
                target = catalog.entity_for_key(key)
                if target is None or target is entity or not isinstance(value, str):
                    continue
                if value not in target.rows and target.rows:
                    fields = _field_schemas(target.rows.values())
                    target.rows[value] = fake_row(target, value, fields)
    catalog.invalidate()


def declared_tools(episodes: Iterable[Episode]) -> dict[str, dict[str, Any]]:
    """The tools the traces declare (``metadata["tool_definitions"]``, see the format
    adapters), by name, first declaration first."""
    out: dict[str, dict[str, Any]] = {}
    for episode in episodes:
        for definition in episode.metadata.get("tool_definitions") or ():
            if isinstance(definition, dict) and isinstance(definition.get("name"), str):
                out.setdefault(definition["name"], definition)
    return out


def _arguments_schema(
    prof: Any, definition: dict[str, Any] | None, open_fields: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The declared parameter schema, with any argument the calls used that it lacks; the
    schema inferred from the calls when nothing is declared."""
    inferred = (
        infer_schema(prof.args, object_root=True, open_fields=open_fields)
        if prof is not None else {}
    )
    if json_type(inferred) != "object":
        inferred = {"type": "object", "properties": {}}
    declared = (definition or {}).get("parameters")
    if not isinstance(declared, dict) or declared.get("type", "object") != "object":
        return inferred
    properties = dict(declared.get("properties") or {})
    for name, schema in (inferred.get("properties") or {}).items():
        properties.setdefault(name, schema)
    return {**declared, "type": "object", "properties": properties}


def _declared_entry(tool: str, definition: dict[str, Any]) -> dict[str, Any]:
    kind = "write" if named_like_write(tool) else "read"
    spec: dict[str, Any] = {
        "name": _safe_name(tool),
        "description": definition.get("description") or _describe(tool, {"kind": ""}, kind),
        "input_schema": _arguments_schema(None, definition),
        "output_schema": {},
        "kind": kind,
        "entities": [],
        "latency": timing.to_json(timing.latency_model([], kind)),
        "errors": timing.to_json(timing.error_model({}, 0)),
    }
    if ENDING_TOOL.match(tool):
        spec["ends_conversation"] = True
    return {"spec": spec, "handler": {"tool": _safe_name(tool), "kind": "declared"}}


def _tool_entry(
    tool: str, prof: Any, desc: dict[str, Any], definition: dict[str, Any] | None = None,
    open_fields: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    kind = "write" if desc["kind"] in ("update", "create") or prof.write_by_name else "read"
    entities = (desc["entity"],) if desc.get("entity") else ()
    args_schema = _arguments_schema(prof, definition, open_fields)
    description = (
        (definition or {}).get("description") or prof.description or _describe(tool, desc, kind)
    )
    spec = {
        "name": _safe_name(tool),
        "description": description,
        "input_schema": args_schema,
        "output_schema": infer_schema(prof.results, open_fields=open_fields),
        "kind": kind,
        "entities": list(entities),
        "latency": timing.to_json(timing.latency_model(prof.durations, kind)),
        "errors": timing.to_json(timing.error_model(dict(prof.errors), prof.calls)),
    }
    if ENDING_TOOL.match(tool):
        spec["ends_conversation"] = True
    return {"spec": spec, "handler": {**desc, "tool": _safe_name(tool)}}


def _describe(tool: str, desc: dict[str, Any], kind: str) -> str:
    words = tool.replace("_", " ").strip()
    entity = desc.get("entity")
    what = {
        "get": f"Returns the {entity} named by `{desc.get('key')}`.",
        "find": f"Finds the id of the {entity} whose fields match the arguments.",
        "search": f"Lists {entity} records matching the arguments.",
        "update": f"Changes the {entity} named by `{desc.get('key')}`.",
        "create": f"Creates a {entity}.",
        "compute": "Evaluates an arithmetic expression.",
    }.get(desc["kind"], "")
    return f"{words[:1].upper()}{words[1:]} ({kind}). {what}".strip()
