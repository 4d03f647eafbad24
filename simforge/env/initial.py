"""A task's initial world: the pack's seeded tables with the task's overrides on top.

Built once per (scenario, task) and shared read-only by every episode of that task, so that
``reset`` costs nothing but a new overlay. Only the overridden tables are copied.
"""

from __future__ import annotations

import threading
from typing import Any

from simforge.config import at_line
from simforge.scenario.loader import ScenarioError
from simforge.scenario.model import Task
from simforge.scenario.registry import LoadedScenario
from simforge.world.frozen import freeze
from simforge.world.schema import SeedDataError
from simforge.world.store import Row

_cache: dict[int, tuple[LoadedScenario, dict[str, dict[str, dict[str, Row]]]]] = {}
_lock = threading.Lock()


def task_base(loaded: LoadedScenario, task: Task) -> dict[str, dict[str, Row]]:
    with _lock:
        entry = _cache.get(id(loaded))
        if entry is None or entry[0] is not loaded:
            # the entry holds `loaded`, so its id() cannot be reused while it is cached
            entry = _cache[id(loaded)] = (loaded, {})
        bases = entry[1]
        if task.id not in bases:
            bases[task.id] = _build(loaded, task)
        return bases[task.id]


def _build(loaded: LoadedScenario, task: Task) -> dict[str, dict[str, Row]]:
    world = loaded.scenario.world
    base = loaded.pack.base(world.seed, world.size)
    if not task.initial_state:
        return base
    out = dict(base)
    for entity, rows in task.initial_state.items():
        schema = loaded.pack.schemas[entity]
        table = dict(base.get(entity, {}))
        for id, fields in rows.items():
            if fields is None:
                table.pop(id, None)
                continue
            merged: dict[str, Any] = {**table.get(id, {}), **fields, schema.primary_key: id}
            try:
                table[id] = schema.validate_row(merged)
            except Exception as exc:
                where = loaded.path or loaded.scenario.id
                index = next(i for i, t in enumerate(loaded.scenario.tasks) if t.id == task.id)
                problem = f"task {task.id!r}: initial_state.{entity}.{id}: {_first_error(exc)}"
                loc = ["tasks", index, "initial_state", entity, id, *_first_field(exc)]
                raise ScenarioError(where, [at_line(loaded.path, loc, problem)]) from None
        out[entity] = table
    return freeze(out)  # the base rows are frozen already: only the task's are walked


def _first_field(exc: Exception) -> list[Any]:
    errors = getattr(exc, "errors", None)
    return list(errors()[0]["loc"]) if callable(errors) else []


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"field {'.'.join(str(p) for p in first['loc'])!r}: {first['msg']}"
    if isinstance(exc, SeedDataError):
        return str(exc)
    return str(exc)
