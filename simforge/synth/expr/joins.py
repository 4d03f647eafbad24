"""Joins for the expression search: values reachable by looking up, in another entity table,
the row that a value of the call names.

A booking's flight list says ``{"flight_number": "HAT028", "date": "2024-05-21"}``; the price
stored with it lives in the flights table under ``HAT028`` at ``dates["2024-05-21"]
.prices["economy"]``, where the date is the element's and the cabin an argument. The search
therefore looks up every id-valued field of the element being mapped (and every id argument
that is not already a ``ref``), walks the row it names, and writes each segment of the walk as
the value of the call that equals it (``elem.date``, ``args.cabin``) where one does, as a
constant otherwise. A keyed collection (a dict of many entries, such as a flight's dates) is only
entered under keys that the call names: its other entries are other days, not this call's data.

What the learner needs from the store is :class:`Lookup`: ``get`` (used by evaluation, at
learning time and in sessions alike) and ``entity_of`` (which table an id belongs to, learning
time only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

Expr = dict[str, Any]
Row = dict[str, Any]

KEYED = 12
"""A dict with more entries than this is a keyed collection, entered only under named keys."""
MAX_JOINED = 400


class Lookup(Protocol):
    def get(self, entity: str, id: str) -> Row | None: ...


class JoinIndex:
    """The store as of one call, plus which entity each id is the primary key of."""

    def __init__(self, get: Callable[[str, str], Row | None], index: Mapping[str, str]) -> None:
        self._get = get
        self._index = index

    def get(self, entity: str, id: str) -> Row | None:
        return self._get(entity, id)

    def entity_of(self, value: str) -> str | None:
        return self._index.get(value)


def _scalars(env: dict[str, Any]) -> list[tuple[Expr, str]]:
    """String values the call itself supplies: fields of the element, then top-level
    arguments (the sources a join segment may name)."""
    out: list[tuple[Expr, str]] = []
    elem = env.get("elem")
    if isinstance(elem, str):
        out.append(({"p": ["elem"]}, elem))
    elif isinstance(elem, dict):
        out.extend(({"p": ["elem", k]}, v) for k, v in elem.items() if isinstance(v, str))
    args = env.get("args") or {}
    out.extend(({"p": ["args", k]}, v) for k, v in args.items() if isinstance(v, str))
    return out


def joined(env: dict[str, Any]) -> list[tuple[Expr, Any]]:
    """``(expression, value)`` for every value reachable through a join in this environment."""
    db = env.get("db")
    entity_of = getattr(db, "entity_of", None)
    if db is None or entity_of is None:
        return []
    scalars = _scalars(env)
    named: dict[str, Expr] = {}
    for expr, value in scalars:
        named.setdefault(value, expr)
    refs = env.get("ref") or {}
    out: list[tuple[Expr, Any]] = []
    for key_expr, value in scalars:
        if key_expr["p"][0] == "args" and key_expr["p"][1] in refs:
            continue  # already joined as ``ref``
        entity = entity_of(value)
        row = db.get(entity, value) if entity else None
        if row is None:
            continue
        _walk(row, {"row": [entity, key_expr]}, [], named, out, 0)
        if len(out) >= MAX_JOINED:
            break
    return out[:MAX_JOINED]


def _walk(
    node: Any,
    base: Expr,
    segs: list[Expr],
    named: dict[str, Expr],
    out: list[tuple[Expr, Any]],
    depth: int,
) -> None:
    if len(out) >= MAX_JOINED:
        return
    out.append(({"at": [base, *segs]} if segs else base, node))
    if depth >= 5 or not isinstance(node, dict):
        return
    keyed = len(node) > KEYED
    for key, value in node.items():
        seg = named.get(key) if isinstance(key, str) else None
        if seg is None and keyed:
            continue
        _walk(value, base, [*segs, seg or {"c": key}], named, out, depth + 1)
