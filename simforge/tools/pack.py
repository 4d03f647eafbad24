"""A pack: the entities, tools and seed data of one mocked enterprise (or one synthesized from
logs). Its seeded base tables are built once per (seed, size) and shared read-only by every
session, which is what makes ``reset`` cost only what an episode changed."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import SQLModel

from simforge.tools.errors import ToolDefinitionError
from simforge.tools.tool import Tool
from simforge.world.frozen import freeze
from simforge.world.schema import EntitySchema, validate_tables
from simforge.world.store import Row, World

SeedFunction = Callable[[int, int], Mapping[str, Iterable[Mapping[str, Any]]]]
"""``seed(seed, scale) -> {entity: rows}``: deterministic for a seed."""

SIZES = {"tiny": 1, "small": 4, "medium": 40, "large": 400}


class ToolCatalog(Mapping[str, Tool]):
    """Tools by name, in declaration order; a duplicate name is a definition error."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ToolDefinitionError(f"duplicate tool name {t.name!r}")
            self._tools[t.name] = t

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    # the dict's own lookups: every call looks its tool up, and ``Mapping``'s versions of these
    # two go through ``__getitem__`` and an exception when the name is unknown
    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str, default: Any = None) -> Any:
        return self._tools.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def to_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        return [t.spec.to_openai(strict=strict) for t in self._tools.values()]


@dataclass
class Pack:
    name: str
    description: str
    entities: list[type[SQLModel]]
    tools: list[Tool]
    seed: SeedFunction
    path: Path | None = None
    policy: dict[str, str] = field(default_factory=dict)
    profiles: list[Any] = field(default_factory=list)
    """Fault profiles of this pack's world (its ``faults/*.yaml``): events and failures that
    only make sense with its tools and entities, usable by every scenario of the pack by
    name (:class:`~simforge.faults.rules.FaultProfile`)."""
    """The domain policy an agent follows, in markdown, by system: ``""`` holds what applies to
    every system, ``"billing"`` what applies to the billing tools, and so on. A pack folder's
    ``policy.md`` and ``policy/<system>.md`` fill it when ``pack.py`` sets none; a scenario
    hands its agent the general part and the parts of the systems it offers."""
    _catalog: ToolCatalog | None = field(default=None, repr=False)
    _schemas: dict[str, EntitySchema] | None = field(default=None, repr=False)
    _bases: dict[tuple[int, int], dict[str, dict[str, Row]]] = field(
        default_factory=dict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)

    @property
    def schemas(self) -> dict[str, EntitySchema]:
        if self._schemas is None:
            self._schemas = {m.__name__: EntitySchema.of(m) for m in self.entities}
        return self._schemas

    @property
    def fingerprint(self) -> str | None:
        """SHA-256 of the files of the pack's folder (:func:`simforge.cache.folder_fingerprint`;
        ``None`` for a pack made in code), the key of what is derived from them."""
        if self._fingerprint is None and self.path is not None:
            from simforge import cache

            self._fingerprint = cache.folder_fingerprint(self.path)
        return self._fingerprint

    @fingerprint.setter
    def fingerprint(self, value: str) -> None:
        self._fingerprint = value

    @property
    def catalog(self) -> ToolCatalog:
        if self._catalog is None:
            self._catalog = ToolCatalog(self.tools)
            unknown = {e for t in self.tools for e in t.outline.entities if e not in self.schemas}
            if unknown:
                raise ToolDefinitionError(
                    f"pack {self.name!r}: tools touch unknown entities {sorted(unknown)}"
                )
        return self._catalog

    def base(self, seed: int = 0, size: str | int = "small") -> dict[str, dict[str, Row]]:
        """The validated seed tables for ``(seed, size)``, built once, read-only and cached."""
        scale = SIZES[size] if isinstance(size, str) else int(size)
        key = (seed, scale)
        with self._lock:
            if key not in self._bases:
                # Frozen once here, so an in-place edit of a shared row raises instead of
                # leaking into every later session (simforge.world.frozen).
                self._bases[key] = freeze(self._cached_base(seed, scale))
                # The base lives as long as the process and is never mutated: move it out of
                # the collector's generations, or every collection re-scans all seeded rows
                # (measured: about 20% of a simulated call with 10,000 rows).
                gc.freeze()
            return self._bases[key]

    def _cached_base(self, seed: int, scale: int) -> dict[str, dict[str, Row]]:
        """The seed tables from the disk cache (:mod:`simforge.cache`) when an earlier process
        built them from the same pack files, else built, validated and stored there. A pack
        made in code (no folder) is always built."""
        from simforge import cache

        if self.path is None or cache.cache_root() is None:
            return validate_tables(self.schemas, self.seed(seed, scale))
        entry = cache.entry_key("seed-tables", self.fingerprint, seed, scale)
        tables = cache.load("worlds", entry)
        if isinstance(tables, dict) and set(tables) == set(self.schemas):
            return tables
        tables = validate_tables(self.schemas, self.seed(seed, scale))
        cache.store("worlds", entry, tables)
        return tables

    def world(self, seed: int = 0, size: str | int = "small") -> World:
        return World(self.schemas, self.base(seed, size))
