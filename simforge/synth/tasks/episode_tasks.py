"""One task per source episode: what the user said, where the world started, where the
episode's writes left it.

The instruction is the user's first message and ``user_turns`` the rest of the user's side of
the dialogue, so the scripted user replays the conversation and multi-turn tasks run without an
LLM user. A benchmark's hidden user brief (tau2's ``user_scenario``: persona, reason for the
call, what the user knows and does not) becomes the task's ``user``, which an LLM user plays; it
is never shown to the agent, since it often spells out the expected outcome. The expected state
is what the episode's own writes produced, as observed in the trace; it is gold only when the
episode was labelled successful, or when no label exists. A gold task whose episode changed
nothing observable expects the facts of its final answer that its tool results back instead
(:mod:`.answer_facts`), so that it is checkable and a no-op scores 0, less the facts the agent is
given (its instruction, the user's words and brief, the tools and the policy): saying those back is
no work. Without either, the writes the episode made (:func:`required_writes`) or its hand-over
(:func:`handed_over`) are what it did; a gold task left with nothing that proves the work is
:func:`unproven` and left out of the pack, counted in the report. It lives in the scenario file,
which only the scenario loader and the scorer read. The reference actions are the episode's own
calls (the user's too: a simulated user has no tools), less those that failed with an infrastructure
error (a timeout, a 5xx: they did nothing, and the agent's retry follows them).
"""

from __future__ import annotations

import re
from typing import Any

from simforge.synth.expr.language import same
from simforge.synth.learn.observations import EpisodeState, named_like_write
from simforge.synth.learn.timing import is_infrastructure
from simforge.synth.tasks.answer_facts import answer_facts, candidates, required_outputs
from simforge.trace.episode import Episode

Row = dict[str, Any]
Modelled = dict[str, dict[str, set[str]]]


def task_id(index: int, episode: Episode) -> str:
    raw = episode.task.id or episode.id
    slug = re.sub(r"[^a-z0-9]+", "-", str(raw).lower()).strip("-")[:40]
    return f"ep{index:05d}-{slug}" if slug else f"ep{index:05d}"


def is_gold(episode: Episode) -> bool:
    outcome = episode.outcome
    if outcome.success is not None:
        return outcome.success
    if outcome.reward is not None:
        return outcome.reward >= 1.0
    return True


def build_task(
    index: int,
    episode: Episode,
    state: EpisodeState,
    base: dict[str, dict[str, Row]],
    pks: dict[str, str],
    modelled: Modelled | None = None,
    shown: str = "",
) -> dict[str, Any]:
    """``shown``: what every task's agent reads before doing anything (the tools' names,
    descriptions and schemas, the policy), whose facts cannot prove the work."""
    users = [m.content for m in episode.messages if m.role == "user" and m.content]
    instruction = users[0] if users else (episode.task.instruction or f"Episode {episode.id}")
    gold = is_gold(episode)
    user = user_spec(episode)
    expected: dict[str, Any] = {}
    if gold:
        expected = _expected(state, base, pks, modelled)
        if not expected:
            outputs = required_outputs(episode, given_text(instruction, user, shown))
            if outputs:
                expected = {"outputs": outputs}
    initial = {
        entity: {
            id: {k: v for k, v in row.items() if k != pks.get(entity)} for id, row in rows.items()
        }
        for entity, rows in state.initial.items()
    }
    task: dict[str, Any] = {
        "id": task_id(index, episode),
        "instruction": instruction,
        "user_turns": users[1:],
    }
    if user:
        task["user"] = user
    return {
        **task,
        "initial_state": initial,
        "expected": expected,
        "oracle": _oracle(episode),
        "metadata": {
            "episode_id": episode.id,
            "source_task": episode.task.id,
            "gold": gold,
            "source": episode.source.format,
        },
    }


def given_text(instruction: str, user: dict[str, Any], shown: str) -> str:
    """What a task's agent is given without doing its work: the instruction, what the
    simulated user may say (its brief), and ``shown``. (The user's own messages are added by
    :func:`~simforge.synth.tasks.answer_facts.required_outputs`.)"""
    return "\n".join([instruction, *(str(v) for v in user.values()), shown])


def user_spec(episode: Episode) -> dict[str, Any]:
    """The task's ``user`` (a :class:`~simforge.scenario.model.UserSpec`) from the source's user
    brief, when it has one (tau2's ``user_scenario``); empty otherwise."""
    scenario = episode.task.metadata.get("user_scenario")
    if not isinstance(scenario, dict):
        return {}
    out: dict[str, Any] = {}
    persona = scenario.get("persona")
    if isinstance(persona, str) and persona.strip():
        out["persona"] = persona.strip()
    brief = scenario.get("instructions")
    if isinstance(brief, str):
        if brief.strip():
            out["instructions"] = brief.strip()
        return out
    if not isinstance(brief, dict):
        return out
    for source, target in (
        ("reason_for_call", "wants"),
        ("known_info", "knows"),
        ("unknown_info", "unknown"),
        ("task_instructions", "instructions"),
    ):
        value = brief.get(source)
        if isinstance(value, str) and value.strip() not in ("", "."):
            out[target] = value.strip()
    return out


def _expected(
    state: EpisodeState,
    base: dict[str, dict[str, Row]],
    pks: dict[str, str],
    modelled: Modelled | None = None,
) -> dict[str, Any]:
    """Rows the episode's writes changed (the changed fields) and created. With ``modelled``
    (tool -> entity -> fields its handler reproduces), only what the writing tools' handlers
    reproduce is expected; the other changed fields are allowed, not required."""
    rows: dict[str, dict[str, Any]] = {}
    created: list[dict[str, Any]] = []
    allow: dict[str, set[str]] = {}
    for entity, finals in state.final.items():
        for id, final in finals.items():
            start = state.initial.get(entity, {}).get(id) or base.get(entity, {}).get(id)
            keep = _keep(state.writers.get((entity, id), set()), entity, modelled)
            if (entity, id) in state.created or start is None:
                if final is not None and (keep is None or keep):
                    pk = pks.get(entity)
                    match = {k: v for k, v in final.items() if k != pk}
                    if keep is not None:
                        match = {k: v for k, v in match.items() if k in keep}
                    created.append({"entity": entity, "match": match})
                continue
            if final is None:
                rows.setdefault(entity, {})[id] = None
                continue
            changed = {
                k: final.get(k)
                for k in dict.fromkeys([*start, *final])
                if not same(start.get(k), final.get(k))
            }
            if keep is not None:
                allow.setdefault(entity, set()).update(k for k in changed if k not in keep)
                changed = {k: v for k, v in changed.items() if k in keep}
            if changed:
                rows.setdefault(entity, {})[id] = changed
    out: dict[str, Any] = {}
    if rows:
        out["state"] = rows
    if created:
        out["created"] = created
    if (rows or created) and any(allow.values()):
        out["allow_changes"] = {e: sorted(f) for e, f in sorted(allow.items()) if f}
    return out


def _keep(writers: set[str], entity: str, modelled: Modelled | None) -> set[str] | None:
    if modelled is None:
        return None
    fields: set[str] = set()
    for tool in writers:
        fields |= modelled.get(tool, {}).get(entity, set())
    return fields


def _oracle(episode: Episode) -> list[dict[str, Any]]:
    """The episode's own actions: calls issued together form one step (a write a step of its
    own, as production applied it before the next call), then the last answer."""
    steps: list[dict[str, Any]] = []
    group: Any = object()
    for call in episode.tool_calls:
        if call.error and is_infrastructure(call.error):
            continue  # a timeout or a 5xx did nothing; the retry that follows is the action
        # a call the user made (telecom's user toggles their phone) is the reference's too:
        # a simulated user has no tools, so in a session the agent makes it
        key = call.message_index if call.message_index is not None else object()
        entry = {"tool": call.tool, "args": call.args if isinstance(call.args, dict) else {}}
        if named_like_write(call.tool):
            # production ran a message's calls one after another: a write and what follows it
            # in the same message must not race in a session
            key = object()
        if steps and key == group and not named_like_write(steps[-1]["calls"][-1]["tool"]):
            steps[-1]["calls"].append(entry)
        else:
            steps.append({"calls": [entry]})
            group = key
    answers = [m.content for m in episode.messages if m.role == "assistant" and m.content]
    steps.append({"answer": answers[-1] if answers else "done"})
    return steps


def stuffing_bounds(episodes: list[Episode]) -> dict[str, int]:
    """``answer_stuffing`` settings under which every successful training answer passes: the
    check stays (a shotgun answer still fails), but the length, the count of values and the
    alternatives of one field that a factual production answer reached are not stuffing. The
    defaults are the floor."""
    from types import SimpleNamespace

    from simforge.scoring import integrity

    bounds = {"max_values": 20, "max_chars": 2000, "max_alternatives": 4}
    hedged = getattr(integrity, "_hedged", None)
    for episode in episodes:
        if not is_gold(episode):
            continue
        answers = [m.content for m in episode.messages if m.role == "assistant" and m.content]
        if not answers:
            continue
        answer = answers[-1]
        bounds["max_values"] = max(bounds["max_values"], len(integrity.answer_values(answer)))
        bounds["max_chars"] = max(bounds["max_chars"], len(answer))
        if hedged is not None:
            ctx = SimpleNamespace(trajectory=episode)  # what _hedged reads: calls, messages
            named = hedged(ctx, answer, bounds["max_alternatives"])
            if named:
                most = max(len(v) for v in named.values())
                bounds["max_alternatives"] = max(bounds["max_alternatives"], most + 1)
    return bounds


def handed_over(episode: Episode, ending: Any) -> list[dict[str, Any]]:
    """An ``action_sequence`` check for a gold episode that changed nothing and ended by
    handing the conversation over (a transfer to a human agent): the hand-over is its outcome,
    so that a no-op does not pass and the task is graded."""
    for call in reversed(episode.tool_calls):
        if call.error is None and call.requestor == "assistant" and ending.match(call.tool):
            return [{"name": "action_sequence", "params": {"calls": [{"tool": call.tool}]}}]
    return []


def required_writes(episode: Episode, writes: set[str]) -> list[dict[str, Any]]:
    """An ``action_sequence`` check for a gold episode whose writes changed nothing the pack
    can check (a write answered from recordings; a row whose only view was the write's own
    result, so that the seed already shows what the write left): its successful writes, in
    order, each with the arguments that name
    what it acts on (ids, codes, dates, amounts, numbers and flags; free text is the agent's own
    wording and not required). ``writes``: the tools that write."""
    calls: list[dict[str, Any]] = []
    for call in episode.tool_calls:
        if call.error is not None or call.requestor != "assistant" or call.tool not in writes:
            continue
        args = call.args if isinstance(call.args, dict) else {}
        named = {k: v for k, v in args.items() if _names_a_thing(v)}
        calls.append({"tool": call.tool, "args": named} if named else {"tool": call.tool})
    return [{"name": "action_sequence", "params": {"calls": calls}}] if calls else []


def _names_a_thing(value: Any) -> bool:
    if isinstance(value, bool | int | float):
        return True
    return isinstance(value, str) and candidates(value) == [value]


def unproven(task: dict[str, Any], episode: Episode) -> str | None:
    """Why a gold task has nothing that proves its work (no expected state, creation or
    output, no check of what it did), or ``None`` when it has something."""
    expected = task["expected"]
    if not task["metadata"]["gold"] or task.get("validators"):
        return None
    if expected.get("state") or expected.get("created") or expected.get("outputs"):
        return None
    facts = answer_facts(episode)
    if not facts:
        return "changed nothing observable, and its answer states no fact a tool result backs"
    return (
        "changed nothing observable, and every fact its answer states is given to the agent "
        "(in its instruction, the user's words or brief, the tools or the policy): "
        + ", ".join(facts[:6])
    )
