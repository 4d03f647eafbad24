"""The World: the state of the mocked systems in one session.

Layout, chosen for the hot path of a simulated tool call and for O(changes) resets:

- ``base``: the seeded tables, ``{entity: {id: row}}``, built once per pack and shared, read-only,
  by every session of that pack (rows are plain dicts that nothing mutates in place);
- ``overlay``: the rows this session created, changed or deleted (``None`` marks a delete);
- ``log``: every write as a :class:`Version` ``(time, entity, id, row)``, so a read ``as_of=t``
  and ``diff(since=t)`` are answered from the log without copying the world. The log is kept
  as columns (times, entities, ids, rows), so a write appends to four lists and allocates no
  object of its own for the garbage collector to walk; :attr:`World.log` builds the versions
  when asked. The per-key index of the log (which versions belong to a row) is brought up to
  date when a history read needs it, not on every write, and a long-running server that never
  asks for history never builds it.

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

from simforge.errors import SimforgeError
from simforge.world.schema import EntitySchema

Row = dict[str, Any]


class WorldError(SimforgeError):
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

    __slots__ = (
        "_base",
        "_counters",
        "_entities",
        "_history",
        "_ids",
        "_indexed",
        "_overlay",
        "_rows",
        "_times",
        "schemas",
    )

    def __init__(
        self,
        schemas: Mapping[str, EntitySchema],
        base: Mapping[str, Mapping[str, Row]],
    ) -> None:
        self.schemas = dict(schemas)
        self._base = base
        self._overlay: dict[str, dict[str, Row | None]] = {name: {} for name in self.schemas}
        # the log, as columns: write i is (_times[i], _entities[i], _ids[i], _rows[i])
        self._times: list[float] = []
        self._entities: list[str] = []
        self._ids: list[str] = []
        self._rows: list[Row | None] = []
        self._history: dict[tuple[str, str], list[int]] = {}
        """Log positions per ``(entity, id)``, covering the first ``_indexed`` writes."""
        self._indexed = 0
        self._counters: dict[str, int] = {}

    # -- reads ---------------------------------------------------------------------------------

    def get(self, entity: str, id: str, *, as_of: float | None = None) -> Row | None:
        """The row, or ``None`` when absent. Rows are shared: treat them as read-only."""
        if as_of is not None:
            return self._get_as_of(entity, id, as_of)
        overlay = self._overlay.get(entity)
        if overlay is None:
            overlay = self._overlay_of(entity)  # raises: unknown entity
        if id in overlay:
            return overlay[id]
        return self._base.get(entity, _NO_ROWS).get(id)

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

    def insert(self, entity: str, row: Mapping[str, Any], *, now: float) -> Row:
        """A new row: the schema's defaults, then ``row`` (a new dict; ``row`` is not kept).
        Without a primary key, the next id is assigned (and cannot exist: see :meth:`next_id`)."""
        schema = self.schemas.get(entity)
        if schema is None:
            raise WorldError(f"unknown entity {entity!r}")
        key = schema.primary_key
        given = row.get(key)
        full = {**schema.defaults, **row}
        if given is None:
            id = full[key] = self.next_id(entity)
        else:
            id = str(given)
            if self.get(entity, id) is not None:
                raise WorldError(f"{entity} {id!r} already exists")
        self._write(entity, id, full, now)
        return full

    def update(self, entity: str, id: str, changes: Mapping[str, Any], *, now: float) -> Row:
        row = self.require(entity, id)
        if type(row) is dict:
            new = {**row, **changes}
        else:  # a seeded row (FrozenDict): see :func:`_plain`
            new = _plain(row)
            new.update(changes)
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
        # Every id ever written has an overlay entry (a delete leaves ``None``), so the overlay
        # and the base together are every id that ever existed.
        written = self._overlay[entity]
        base = self._base.get(entity, _NO_ROWS)
        prefix, start, width = schema.id_prefix, schema.id_start, schema.id_width
        n = self._counters.get(entity)
        if n is None:
            n = _id_floor(base, prefix) - start
        while True:
            n += 1
            candidate = prefix + str(start + n).zfill(width)  # = f"{prefix}{start + n:0{width}d}"
            if candidate not in written and base.get(candidate) is None:
                self._counters[entity] = n
                return candidate

    def _write(self, entity: str, id: str, row: Row | None, now: float) -> None:
        times = self._times
        if times and now < times[-1]:
            raise WorldError(f"write at t={now} precedes the last write at t={times[-1]}")
        self._overlay[entity][id] = row
        times.append(now)
        self._entities.append(entity)
        self._ids.append(id)
        self._rows.append(row)

    def _index(self) -> dict[tuple[str, str], list[int]]:
        """The per-key index of the log, brought up to date (it lags behind writes)."""
        done = self._indexed
        end = len(self._times)
        if done < end:
            history = self._history
            for i, key in enumerate(
                zip(self._entities[done:end], self._ids[done:end], strict=True), done
            ):
                indices = history.get(key)
                if indices is None:
                    history[key] = [i]
                else:
                    indices.append(i)
            self._indexed = end
        return self._history

    def _overlay_of(self, entity: str) -> dict[str, Row | None]:
        try:
            return self._overlay[entity]
        except KeyError:
            raise WorldError(f"unknown entity {entity!r}") from None

    @property
    def base(self) -> Mapping[str, Mapping[str, Row]]:
        """The initial tables this world started from (shared, read-only)."""
        return self._base

    def changes(self, entity: str) -> Mapping[str, Row | None]:
        """The rows of ``entity`` this session wrote, by id (``None``: deleted), in the order
        they were first written: with :attr:`base`, what an index over the seeded table needs to
        answer like :meth:`rows` (read-only: the world's own table)."""
        return self._overlay_of(entity)

    # -- history --------------------------------------------------------------------------------

    @property
    def log(self) -> list[Version]:
        """Every write, oldest first (built on each access: not for a hot path)."""
        return self.log_since(0)

    def log_since(self, start: int) -> list[Version]:
        """The writes after the first ``start`` (e.g. a snapshot's ``log_length``)."""
        return [
            Version(*version)
            for version in zip(
                self._times[start:],
                self._entities[start:],
                self._ids[start:],
                self._rows[start:],
                strict=True,
            )
        ]

    def _get_as_of(self, entity: str, id: str, t: float) -> Row | None:
        self._overlay_of(entity)
        return self._row_at_index((entity, id), bisect.bisect_right(self._times, t))

    def _initial(self, entity: str, id: str) -> Row | None:
        return self._base.get(entity, {}).get(id)

    @property
    def log_length(self) -> int:
        """How many writes the log holds (a mark for :meth:`diff_from`)."""
        return len(self._times)

    def diff(self, since: float | None = None) -> list[Change]:
        """Entities created, updated or deleted after ``since`` (``None``: since the start),
        with field-level changes. A row changed and changed back is not listed."""
        before_end = 0 if since is None else bisect.bisect_right(self._times, since)
        return self.diff_from(before_end)

    def diff_from(self, before_end: int) -> list[Change]:
        """What the writes after the first ``before_end`` of the log changed."""
        touched: dict[tuple[str, str], None] = {}
        for key in zip(self._entities[before_end:], self._ids[before_end:], strict=True):
            touched[key] = None
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
        indices = self._index().get(key)
        if indices:
            pos = bisect.bisect_left(indices, end)
            if pos:
                return self._rows[indices[pos - 1]]
        return self._initial(*key)

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(
            overlay={name: dict(rows) for name, rows in self._overlay.items() if rows},
            log_length=len(self._times),
            counters=dict(self._counters),
        )

    def restore(self, snapshot: Snapshot) -> None:
        self._overlay = {name: dict(snapshot.overlay.get(name, {})) for name in self.schemas}
        n = snapshot.log_length
        # only the indexed part of the log is in the index
        for key in zip(
            self._entities[n : self._indexed], self._ids[n : self._indexed], strict=True
        ):
            indices = self._history.get(key)
            if indices is None:
                continue
            while indices and indices[-1] >= n:
                indices.pop()
            if not indices:
                del self._history[key]
        del self._times[n:]
        del self._entities[n:]
        del self._ids[n:]
        del self._rows[n:]
        self._indexed = min(self._indexed, n)
        self._counters = dict(snapshot.counters)

    def materialize(self) -> dict[str, dict[str, Row]]:
        """The whole current state as plain tables (for export and tests, not the hot path)."""
        return {
            name: {str(row[schema.primary_key]): row for row in self.rows(name)}
            for name, schema in self.schemas.items()
        }


_NO_ROWS: Mapping[str, Row] = {}
_floors: dict[int, tuple[Mapping[str, Row], str, int]] = {}


def _plain(row: Mapping[str, Any]) -> Row:
    """A plain copy of a seeded row (a :class:`~simforge.world.frozen.FrozenDict`) that the
    garbage collector does not track when it holds only scalars. A subclass of ``dict`` is
    always tracked, and a copy made with ``{**row}`` or ``dict(row)`` inherits that, as does
    every later version copied from it: each written version of a row would stay in the
    collector's generations (the log keeps them all) and be walked at every collection it
    passes through. Built item by item, the copy is tracked only if a value needs it, and so
    are the versions after it."""
    return dict(row.items())


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
