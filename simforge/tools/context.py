"""What a handler sees: the world at the moment its call runs, the clock, and its RNG stream.

Handlers read and write only through the context, so the kernel (and the fault layer) decide
what "now" means for a call: a stale read sets ``read_as_of`` and every read of that call sees
the world as it was then, without the handler knowing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from simforge.tools.errors import ToolError
from simforge.world.store import Row, World


class ToolContext:
    __slots__ = ("call_id", "call_index", "now", "read_as_of", "rng", "tool", "world", "writes")

    def __init__(
        self,
        world: World,
        now: float,
        rng: random.Random,
        *,
        tool: str = "",
        call_id: str = "",
        call_index: int = 0,
        read_as_of: float | None = None,
    ) -> None:
        self.world = world
        self.now = now
        self.rng = rng
        self.tool = tool
        self.call_id = call_id
        self.call_index = call_index
        self.read_as_of = read_as_of
        self.writes = 0

    # Reads honour read_as_of, so stale-read faults work for every handler.
    def get(self, entity: str, id: str) -> Row | None:
        return self.world.get(entity, id, as_of=self.read_as_of)

    def require(self, entity: str, id: str) -> Row:
        row = self.world.get(entity, id, as_of=self.read_as_of)
        if row is None:
            raise ToolError.not_found(entity, id)
        return row

    def rows(self, entity: str) -> Iterator[Row]:
        return self.world.rows(entity, as_of=self.read_as_of)

    def find(self, entity: str, predicate: Callable[[Row], bool]) -> list[Row]:
        return [row for row in self.rows(entity) if predicate(row)]

    def insert(self, entity: str, row: Mapping[str, Any]) -> Row:
        self.writes += 1
        return self.world.insert(entity, row, now=self.now)  # a new row: ``row`` is not kept

    def update(self, entity: str, id: str, changes: Mapping[str, Any]) -> Row:
        if self.world.get(entity, id) is None:
            raise ToolError.not_found(entity, id)
        self.writes += 1
        return self.world.update(entity, id, changes, now=self.now)

    def delete(self, entity: str, id: str) -> Row:
        if self.world.get(entity, id) is None:
            raise ToolError.not_found(entity, id)
        self.writes += 1
        return self.world.delete(entity, id, now=self.now)

    def next_id(self, entity: str) -> str:
        return self.world.next_id(entity)
