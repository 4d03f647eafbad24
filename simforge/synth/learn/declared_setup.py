"""Where an episode starts: the setup its trace declares, learned as writes.

A benchmark's task can set the world up before the conversation (tau2's
``initial_state.initialization_actions``: ``enable_roaming(line_id=L1002)``,
``set_data_usage(line_id=L1002, data_used_gb=15.1)``, ``suspend_line_for_overdue_bill(...)``).
The trace says which operations ran, not what they did; the episode's reads show the result.
Each operation is learned like a write of the row an argument names: for every training
episode that declared it and read that row before changing it, ``(row in the seed, row as
first read)`` is a pair, and a field's expression (a constant, an argument) is kept when it
reproduces nine pairs in ten. An operation that is also a tool of the pack runs the tool's
learned handler.

A task's initial state is then the seed with its declared setup applied: for a held-out episode
that is all it gets (its own reads are what is measured, never where it starts); a training
episode's observed rows take precedence where it saw them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simforge.synth.entities.catalog import Ref
from simforge.synth.expr.language import same
from simforge.synth.learn.write_effects import learn_fields
from simforge.synth.runtime.effects import apply_effects
from simforge.synth.runtime.interpreter import DictStore, Runtime, run
from simforge.tools.errors import ToolError

Row = dict[str, Any]
AGREE = 0.9


def declared(episode: Any) -> list[tuple[str, dict[str, Any]]]:
    """``[(operation, arguments)]`` of the episode's declared setup, in order."""
    initial = (episode.task.metadata or {}).get("initial_state")
    actions = initial.get("initialization_actions") if isinstance(initial, dict) else None
    out = []
    for action in actions or ():
        if isinstance(action, dict) and isinstance(action.get("func_name"), str):
            args = action.get("arguments")
            out.append((action["func_name"], args if isinstance(args, dict) else {}))
    return out


def _targets(args: Mapping[str, Any], index: Mapping[str, Ref]) -> list[tuple[str, str, str]]:
    """``(argument, entity, id)`` for each argument naming a row."""
    out = []
    for name, value in args.items():
        ref = index.get(value) if isinstance(value, str) else None
        if ref is not None and ref.sub is None:
            out.append((name, ref.entity, value))
    return out


def learn_setup(
    episodes: Sequence[tuple[Any, Any]],
    base: Mapping[str, Mapping[str, Row]],
    index: Mapping[str, Ref],
) -> dict[str, list[dict[str, Any]]]:
    """``{operation: [{"arg", "entity", "effects"}]}`` from training ``(episode, state)``."""
    pairs: dict[tuple[str, str, str], list[tuple[Row, dict[str, Any]]]] = {}
    for episode, state in episodes:
        for name, args in declared(episode):
            for arg, entity, id in _targets(args, index):
                before = base.get(entity, {}).get(id)
                after = state.first_seen.get((entity, id))
                if before is None or after is None:
                    continue  # never read before written: where it started is unknown
                after = {**before, **after}
                pairs.setdefault((name, arg, entity), []).append(
                    (after, {"args": args, "old": before})
                )
    learned: dict[str, list[dict[str, Any]]] = {}
    for (name, arg, entity), found in pairs.items():
        fields = [
            k
            for k in dict.fromkeys(k for new, env in found for k in new)
            if any(not same(env["old"].get(k), new.get(k)) for new, env in found)
        ]
        changes = learn_fields(found, fields, base=lambda k: {"p": ["old", k]}, scope=None)
        kept = {}
        for field, expr in changes.items():
            hits = sum(
                1
                for new, env in found
                if same(apply_effects({field: expr}, env, None).get(field), new.get(field))
            )
            if hits >= AGREE * len(found):
                kept[field] = expr
        if kept:
            learned.setdefault(name, []).append({"arg": arg, "entity": entity, "effects": kept})
    return learned


def initial_state(
    episode: Any,
    setup: Mapping[str, list[dict[str, Any]]],
    handlers: Mapping[str, Mapping[str, Any]],
    base: Mapping[str, Mapping[str, Row]],
    pks: Mapping[str, str],
    rt: Runtime,
) -> dict[str, dict[str, Row]]:
    """The rows the episode's declared setup changes, applied to the seed in order."""
    store = DictStore(base, pks)
    for name, args in declared(episode):
        if name in setup:
            for rule in setup[name]:
                id = args.get(rule["arg"])
                row = store.get(rule["entity"], id) if isinstance(id, str) else None
                if row is None or not isinstance(id, str):
                    continue
                changes = apply_effects(rule["effects"], {"args": args, "old": row}, None)
                store.update(rule["entity"], id, changes)
        elif name in handlers and handlers[name].get("kind") in ("update", "create"):
            try:
                run(handlers[name], store, dict(args), rt)
            except ToolError:
                continue
    return {
        entity: {
            id: {k: v for k, v in row.items() if k != pks.get(entity)}
            for id, row in rows.items()
            if row is not None
        }
        for entity, rows in store.overlay.items()
    }
