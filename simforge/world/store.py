"""The World: the state of the mocked systems in one session.

Layout, chosen for the hot path of a simulated tool call and for O(changes) resets:

- ``base``: the seeded tables, ``{entity: {id: row}}``, built once per pack and shared, read-only,
  by every session of that pack (rows are plain dicts that nothing mutates in place);
- ``overlay``: the rows this session created, changed or deleted (``None`` marks a delete);
- ``log``: every write as a :class:`Version` ``(time, entity, id, row)``, so a read ``as_of=t``
  and ``diff(since=t)`` are answered from the log without copying the world.

A snapshot is the overlay and the log length; restore puts them back. Reset therefore costs the
number of rows the episode changed, never a rebuild and never a copy of the 10,000 seeded rows.
An in-memory SQLite database serialised and deserialised would cost milliseconds per reset and an
SQL round trip per read; :func:`simforge.world.export.to_sqlite` still writes the state out through
SQLModel, for anyone who wants to inspect a world with SQL.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from simforge.world.schema import EntitySchema

Row = dict[str, Any]


class WorldError(Exception):
    """A write or read the world refuses: unknown entity, missing id, duplicate id."""


class EntityNotFound(WorldError):
    def __init__(self, entity: str, id: str) -> None:
        super().__init__(f"{entity} {id!r} not found")
        self.entity = entity
        self.id = id


@dataclass(frozen=True, slots=True)
class Version:
    """One write: ``row`` is the full row after it, or ``None`` for a delete."""

    time: float
    entity: str
    id: str
    row: Row | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    overlay: dict[str, dict[str, Row | None]]
    log_length: int
    counters: dict[str, int]


class World:
    """Entity tables with versioned writes. Cheap to create per session from a shared base."""

    __slots__ = ("_base", "_counters", "_history", "_log", "_overlay", "_times", "schemas")

    def __init__(
        self,
        schemas: Mapping[str, EntitySchema],
        base: Mapping[str, Mapping[str, Row]],
    ) -> None:
        self.schemas = dict(schemas)
        self._base = base
        self._overlay: dict[str, dict[str, Row | None]] = {name: {} for name in self.schemas}
        self._log: list[Version] = []
        self._times: list[float] = []
        self._history: dict[tuple[str, str], list[int]] = {}
        self._counters: dict[str, int] = {}

    # -- reads ---------------------------------------------------------------------------------

    def get(self, entity: str, id: str, *, as_of: float | None = None) -> Row | None:
        """The row, or ``None`` when absent. Rows are shared: treat them as read-only."""
        if as_of is not None:
            return self._get_as_of(entity, id, as_of)
        overlay = self._overlay_of(entity)
        if id in overlay:
            return overlay[id]
        return self._base.get(entity, {}).get(id)

    def require(self, entity: str, id: str, *, as_of: float | None = None) -> Row:
        row = self.get(entity, id, as_of=as_of)
        if row is None:
            raise EntityNotFound(entity, id)
        return row

    def rows(self, entity: str, *, as_of: float | None = None) -> Iterator[Row]:
        """Every live row of an entity, seeded rows first in seed order, then created ones."""
        if as_of is not None:
            for id in self.ids(entity):
                row = self._get_as_of(entity, id, as_of)
                if row is not None:
                    yield row
            return
        overlay = self._overlay_of(entity)
        base = self._base.get(entity, {})
        for id, row in base.items():
            current = overlay.get(id, row) if overlay else row
            if current is not None:
                yield current
        for id, row in overlay.items():
            if row is not None and id not in base:
                yield row

    def ids(self, entity: str) -> list[str]:
        base = self._base.get(entity, {})
        extra = [id for id in self._overlay_of(entity) if id not in base]
        return [*base.keys(), *extra]

    def find(self, entity: str, predicate: Callable[[Row], bool]) -> list[Row]:
        return [row for row in self.rows(entity) if predicate(row)]

    def count(self, entity: str) -> int:
        return sum(1 for _ in self.rows(entity))

    # -- writes ---------------------------------------------------------------------------------

    def insert(self, entity: str, row: Row, *, now: float) -> Row:
        schema = self.schemas.get(entity)
        if schema is None:
            raise WorldError(f"unknown entity {entity!r}")
        id = row.get(schema.primary_key)
        if id is None:
            id = self.next_id(entity)
            row = {**row, schema.primary_key: id}
        id = str(id)
        if self.get(entity, id) is not None:
            raise WorldError(f"{entity} {id!r} already exists")
        full = {**schema.defaults, **row}
        self._write(entity, id, full, now)
        return full

    def update(self, entity: str, id: str, changes: Mapping[str, Any], *, now: float) -> Row:
        row = self.require(entity, id)
        new = {**row, **changes}
        self._write(entity, id, new, now)
        return new

    def delete(self, entity: str, id: str, *, now: float) -> Row:
        row = self.require(entity, id)
        self._write(entity, id, None, now)
        return row

    def put(self, entity: str, id: str, row: Row | None, *, now: float) -> None:
        """Write a whole row (``None``: delete) as it is: how a delayed write lands later."""
        self._overlay_of(entity)
        self._write(entity, id, row, now)

    def next_id(self, entity: str) -> str:
        """A deterministic new id: the schema's prefix and a per-session counter that starts
        above the highest seeded number. An id that ever existed is never handed out again."""
        schema = self.schemas[entity]
        n = self._counters.get(entity)
        if n is None:
            n = _id_floor(self._base.get(entity, {}), schema.id_prefix) - schema.id_start
        while True:
            n += 1
            candidate = f"{schema.id_prefix}{schema.id_start + n:0{schema.id_width}d}"
            if (entity, candidate) not in self._history and self._initial(
                entity, candidate
            ) is None:
                self._counters[entity] = n
                return candidate

    def _write(self, entity: str, id: str, row: Row | None, now: float) -> None:
        if self._times and now < self._times[-1]:
            raise WorldError(f"write at t={now} precedes the last write at t={self._times[-1]}")
        self._overlay[entity][id] = row
        self._history.setdefault((entity, id), []).append(len(self._log))
        self._log.append(Version(now, entity, id, row))
        self._times.append(now)

    def _overlay_of(self, entity: str) -> dict[str, Row | None]:
        try:
            return self._overlay[entity]
        except KeyError:
            raise WorldError(f"unknown entity {entity!r}") from None

    @property
    def base(self) -> Mapping[str, Mapping[str, Row]]:
        """The initial tables this world started from (shared, read-only)."""
        return self._base

    # -- history --------------------------------------------------------------------------------

    @property
    def log(self) -> list[Version]:
        return self._log

    def _get_as_of(self, entity: str, id: str, t: float) -> Row | None:
        self._overlay_of(entity)
        return self._row_at_index((entity, id), bisect.bisect_right(self._times, t))

    def _initial(self, entity: str, id: str) -> Row | None:
        return self._base.get(entity, {}).get(id)

    def diff(self, since: float | None = None) -> list[Change]:
        """Entities created, updated or deleted after ``since`` (``None``: since the start),
        with field-level changes. A row changed and changed back is not listed."""
        before_end = 0 if since is None else bisect.bisect_right(self._times, since)
        touched: dict[tuple[str, str], None] = {}
        for version in self._log[before_end:]:
            touched[(version.entity, version.id)] = None
        changes: list[Change] = []
        for key in touched:
            old = self._row_at_index(key, before_end)
            new = self.get(*key)
            change = Change.between(key[0], key[1], old, new)
            if change is not None:
                changes.append(change)
        return changes

    def _row_at_index(self, key: tuple[str, str], end: int) -> Row | None:
        """The row as it was after the first ``end`` writes of the log."""
        indices = self._history.get(key)
        if indices:
            pos = bisect.bisect_left(indices, end)
            if pos:
                return self._log[indices[pos - 1]].row
        return self._initial(*key)

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(
            overlay={name: dict(rows) for name, rows in self._overlay.items() if rows},
            log_length=len(self._log),
            counters=dict(self._counters),
        )

    def restore(self, snapshot: Snapshot) -> None:
        self._overlay = {name: dict(snapshot.overlay.get(name, {})) for name in self.schemas}
        n = snapshot.log_length
        for version in self._log[n:]:
            key = (version.entity, version.id)
            indices = self._history.get(key)
            if indices is None:
                continue
            while indices and indices[-1] >= n:
                indices.pop()
            if not indices:
                del self._history[key]
        del self._log[n:]
        del self._times[n:]
        self._counters = dict(snapshot.counters)

    def materialize(self) -> dict[str, dict[str, Row]]:
        """The whole current state as plain tables (for export and tests, not the hot path)."""
        return {
            name: {str(row[schema.primary_key]): row for row in self.rows(name)}
            for name, schema in self.schemas.items()
        }


_floors: dict[int, tuple[Mapping[str, Row], str, int]] = {}


def _id_floor(table: Mapping[str, Row], prefix: str) -> int:
    """The highest number among ``prefix<digits>`` ids of a seeded table, computed once per
    table (the entry keeps the table alive, so its ``id()`` cannot be reused)."""
    cached = _floors.get(id(table))
    if cached is not None and cached[0] is table and cached[1] == prefix:
        return cached[2]
    highest = 0
    for key in table:
        if key.startswith(prefix) and key[len(prefix) :].isdigit():
            highest = max(highest, int(key[len(prefix) :]))
    _floors[id(table)] = (table, prefix, highest)
    return highest


@dataclass(frozen=True, slots=True)
class Change:
    entity: str
    id: str
    op: str
    fields: dict[str, tuple[Any, Any]]
    before: Row | None
    after: Row | None

    @staticmethod
    def between(entity: str, id: str, old: Row | None, new: Row | None) -> Change | None:
        if old is None and new is None:
            return None
        if old is None:
            return Change(entity, id, "created", {}, None, new)
        if new is None:
            return Change(entity, id, "deleted", {}, old, None)
        fields = {
            k: (old.get(k), new.get(k))
            for k in dict.fromkeys([*old, *new])
            if old.get(k) != new.get(k)
        }
        if not fields:
            return None
        return Change(entity, id, "updated", fields, old, new)
