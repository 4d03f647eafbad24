"""Read-only rows for the shared seeded base of a :class:`~simforge.world.World`.

A pack's seeded tables are built once and shared by every session (and every task without
overrides). An in-place edit of one of their rows (``row["status"] = "x"``,
``row["items"].append(...)``) would leak into every later environment and :meth:`World.diff`
would never see it. :func:`freeze` turns the tables, once, into :class:`FrozenDict` and
:class:`FrozenList`: subclasses of ``dict`` and ``list`` whose every mutating method raises
``TypeError``. They stay a ``dict`` and a ``list`` for everything that reads them
(``isinstance``, ``==``, ``{**row}``, ``orjson``), with the built-in C methods for reads, so a read
costs what it did; copies (``dict(row)``, ``row.copy()``, ``copy.deepcopy``, slicing) are plain,
mutable ``dict`` and ``list``, which is how a write makes its new row.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn

_WHY = (
    "the seeded rows of a world are shared by every session and read-only: build a new row "
    "(dict(row), {**row, ...}) and write it through the World"
)


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} cannot be changed in place: {_WHY}")


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses every in-place change."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    update = _refuse
    pop = _refuse
    popitem = _refuse
    clear = _refuse
    setdefault = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}


class FrozenList(list[Any]):
    """A ``list`` that refuses every in-place change."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    clear = _refuse
    sort = _refuse
    reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]


def freeze(value: Any) -> Any:
    """``value`` with every ``dict`` and ``list`` in it read-only (already frozen parts kept)."""
    kind = type(value)
    if kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(v) for v in value])
    return value
