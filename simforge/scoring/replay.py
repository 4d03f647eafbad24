"""The expected state as "what the reference actions reach": the task's oracle calls replayed on
a fresh world from the task's initial state, then compared with the episode's final world.

Writing every expected field by hand is where scenario authors make mistakes; replaying the
reference solution gives the whole expected diff for free. The replay calls handlers directly
through a :class:`ToolContext` (no kernel, no faults, no latency: the scorer must not depend on
how a trajectory was produced) and is cached per (task, initial world), since every episode of a
task shares both. Created rows are matched by content, because their ids and timestamps depend
on what else the agent created and when.
"""

from __future__ import annotations

import fnmatch
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from simforge.errors import UserError
from simforge.scoring.context import ScoringContext
from simforge.scoring.matching import values_equal
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError
from simforge.world.store import Change, World


class ReferenceReplayError(UserError, RuntimeError):
    """The reference solution does not replay: a scenario bug, so the episode is invalid."""


@dataclass
class ReplayComparison:
    checked: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    missing_created: list[dict[str, Any]] = field(default_factory=list)


_cache: dict[tuple[int, int], tuple[object, object, list[Change]]] = {}
_lock = threading.Lock()


def reference_diff(ctx: ScoringContext) -> list[Change]:
    """The changes the task's reference calls make to its initial world."""
    base = ctx.world.base  # the task's initial tables, shared read-only by its sessions
    key = (id(ctx.task), id(base))
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is ctx.task and hit[1] is base:
            return hit[2]
    tools = ctx.catalog()
    if tools is None:
        raise ReferenceReplayError(
            "replay_oracle needs the pack's tools: pass ScoringContext(tools=...)"
        )
    world = World(ctx.world.schemas, base)
    index: dict[str, int] = {}
    for step_no, step in enumerate(ctx.task.oracle):
        for call in step.calls:
            tool = tools.get(call.tool)
            if tool is None:
                raise ReferenceReplayError(f"oracle step {step_no}: unknown tool {call.tool!r}")
            n = index.get(call.tool, 0)
            index[call.tool] = n + 1
            tc = ToolContext(
                world,
                0.0,
                random.Random(f"replay\x1f{call.tool}\x1f{n}"),
                tool=call.tool,
                call_id=f"ref-{step_no}-{n}",
                call_index=n,
            )
            try:
                tool.invoke(tc, dict(call.args))
            except ToolError as exc:
                raise ReferenceReplayError(
                    f"oracle step {step_no}: {call.tool} failed on replay: {exc.message}"
                ) from None
    changes = world.diff()
    with _lock:
        _cache[key] = (ctx.task, base, changes)
    return changes


def compare_with_reference(
    ctx: ScoringContext, ignore: list[str], entities: list[str] | None
) -> ReplayComparison:
    out = ReplayComparison()
    reference = [c for c in reference_diff(ctx) if entities is None or c.entity in entities]
    created_by_ref = {c.id for c in reference if c.op == "created"}
    episode_created = {
        (c.entity, c.id): ctx.world.get(c.entity, c.id)
        for c in ctx.world.diff()
        if c.op == "created"
    }
    used: set[tuple[str, str]] = set()
    for change in reference:
        out.checked += 1
        found = ctx.world.get(change.entity, change.id)
        if change.op == "deleted":
            if found is not None:
                out.mismatches.append(_absent(change))
        elif change.op == "updated":
            if found is None:
                out.mismatches.append(
                    {
                        "entity": change.entity,
                        "id": change.id,
                        "expected": "present",
                        "found": "absent",
                        "source": "replay",
                    }
                )
                continue
            for name, (_old, new) in change.fields.items():
                if _ignored(name, ignore) or values_equal(found.get(name), new):
                    continue
                out.mismatches.append(
                    {
                        "entity": change.entity,
                        "id": change.id,
                        "field": name,
                        "expected": new,
                        "found": found.get(name),
                        "source": "replay",
                    }
                )
        else:
            assert change.after is not None
            pk = ctx.world.schemas[change.entity].primary_key
            want = {
                k: v
                for k, v in change.after.items()
                if k != pk and not _ignored(k, ignore) and v not in created_by_ref
            }
            match = next(
                (
                    key
                    for key, row in episode_created.items()
                    if key[0] == change.entity
                    and key not in used
                    and row is not None
                    and all(values_equal(row.get(k), v) for k, v in want.items())
                ),
                None,
            )
            if match is None:
                out.missing_created.append(
                    {"entity": change.entity, "match": want, "source": "replay"}
                )
            else:
                used.add(match)
    return out


def _absent(change: Change) -> dict[str, Any]:
    return {
        "entity": change.entity,
        "id": change.id,
        "expected": "absent",
        "found": "present",
        "source": "replay",
    }


def _ignored(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)
