"""Compiled handlers: a handler description of ``tools.json`` turned, once, into closures.

:func:`simforge.synth.runtime.interpreter.run` interprets a description on every call: it reads the
description's keys, walks each expression's JSON form and scans a table for a search. That
interpreter stays the reference (learning checks candidates with it, and the tests compare every
call of the real traces and of generated cases with it); a session runs :func:`compile_handler`'s
closure instead, which gives the same results, errors and writes:

- expressions (effects, computed error conditions) are closures built by
  :func:`~simforge.synth.expr.language.compile_expr`, the view's key sets are built once;
- a ``search`` or ``find`` over the world probes an index of the shared seeded table, built once
  per table (:class:`TableIndex`) — the bucket of rows whose field equals the argument — plus the
  rows the episode changed (its overlay, a handful), instead of scanning every row; results come
  out in the order a scan gives them. A row the index cannot place (a field that a merged
  sub-record may overwrite, a value that is not hashable) is always checked;
- what a description does not use is skipped (ids resolved for error conditions that do not
  exist, empty effect lists).

``replay`` and ``constant`` answer straight from the replay table or the value, skipping the
interpreter's dispatch. Kinds with nothing to compile (``compute``, ``state``, ``declared``)
run through the interpreter. The plain pack files stay what is written and read; the compiled
form is derived from them, cached in-process by the description's content hash.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from simforge.synth.expr.language import Unresolved, compile_expr, same
from simforge.synth.runtime import interpreter as interp
from simforge.synth.runtime.error_rules import ErrorObservation, holds, render
from simforge.synth.runtime.side_effects import RESULT, apply_side_effects
from simforge.synth.runtime.text_model import op
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError
from simforge.world.frozen import FrozenDict

Row = dict[str, Any]
Handler = Callable[[Any, dict[str, Any], interp.Runtime], Any]
_CAUGHT = (Unresolved, TypeError, ValueError, OverflowError, ZeroDivisionError)
"""What :func:`~.write_effects.apply_effects` skips a field for."""
_HOLDS_CAUGHT = (Unresolved, TypeError, AttributeError, ValueError, KeyError)
"""What :func:`~.error_conditions.holds` takes as "the condition does not hold"."""


# -- the cache -------------------------------------------------------------------------------


_cache: dict[str, Handler] = {}
_cache_lock = threading.Lock()


def compile_handler(desc: Mapping[str, Any], entities: Iterable[str]) -> Handler:
    """The closure ``f(store, args, runtime)`` that answers like ``handlers.run(desc, ...)``.
    ``entities`` are the pack's entity names (a lookup of an entity the world lacks raises, so
    only lookups of known entities may be skipped). Cached by content: the same description
    over the same entities is compiled once per process."""
    known = sorted(set(entities))
    try:
        key = hashlib.sha256(
            orjson.dumps([desc, known], option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
    except (TypeError, orjson.JSONEncodeError):
        return _compile_handler(desc, frozenset(known))
    with _cache_lock:
        found = _cache.get(key)
    if found is None:
        found = _compile_handler(desc, frozenset(known))
        with _cache_lock:
            found = _cache.setdefault(key, found)
    return found


def _compile_handler(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    try:
        return _compile_kind(desc, known)
    except Exception:
        return lambda store, args, rt: interp.run(desc, store, args, rt)


def _compile_kind(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    kind = desc.get("kind")
    body: Handler | None = None
    if kind in ("get", "update"):
        body = _compile_keyed(desc, known)
    elif kind == "create":
        body = _compile_create(desc, known)
    elif kind == "search":
        body = _compile_search(desc, known)
    elif kind == "find":
        body = _compile_find(desc, known)
    elif kind == "replay":
        body = _compile_replay(desc.get("tool", ""))
    elif kind == "constant":
        body = _compile_constant(desc["value"])
    if kind == "state" or body is None:
        return lambda store, args, rt: interp.run(desc, store, args, rt)
    named = any(r.get("arg") == RESULT for r in desc.get("side") or ())
    records = bool(desc.get("records"))
    if not named and not records:
        return body
    run_body = body

    def full(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        result = run_body(store, args, rt)
        if named:
            interp._named_side_effects(desc, store, args, result, rt)
        if records and rt.state is not None:
            ops = [*interp._history(store), op(desc.get("tool", ""), args)]
            interp._record(store, rt.state, ops)
        return result

    return full


def _compile_replay(tool: str) -> Handler:
    def replay(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        return interp._replay(tool, args, rt)

    return replay


def _compile_constant(value: Any) -> Handler:
    def constant(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        return value

    return constant


# -- pieces shared by the kinds ----------------------------------------------------------------


Check = Callable[[ErrorObservation], None]


def _compile_check(desc: Mapping[str, Any]) -> Check | None:
    """The learned error conditions in order (``None``: there are none); the first that holds
    raises with its rendered text, as :func:`handlers._check` does."""
    rules = list(desc.get("errors") or [])
    if not rules:
        return None
    tests = [(_compile_condition(rule["when"]), rule) for rule in rules]

    def check(obs: ErrorObservation) -> None:
        for test, rule in tests:
            if test(obs):
                raise ToolError(rule["status"], "tool_error", render(rule, obs.env))

    return check


def _compile_condition(condition: dict[str, Any]) -> Callable[[ErrorObservation], bool]:
    """A condition comparing two computed values as compiled expressions; any other as
    :func:`~.error_conditions.holds` (a probe of the observation, nothing to compile)."""
    try:
        op, arg = next(iter(condition.items()))
        if op in ("ne", "lt", "gt") and len(condition) == 1:
            fa, fb = compile_expr(arg[0]), compile_expr(arg[1])
        else:
            raise ValueError(op)
    except Exception:
        return lambda obs: holds(condition, obs)

    def compare(obs: ErrorObservation) -> bool:
        env = obs.env
        try:
            a, b = fa(env), fb(env)
            if op == "ne":
                return not same(a, b)
            return bool(a < b) if op == "lt" else bool(a > b)
        except _HOLDS_CAUGHT:
            return False

    return compare


Effects = Callable[[dict[str, Any]], dict[str, Any]]


def _compile_effects(changes: Mapping[str, Any], scope: str | None = "new") -> Effects:
    """:func:`~.write_effects.apply_effects` of ``changes`` with compiled expressions."""
    fields = [(name, compile_expr(expr)) for name, expr in changes.items()]

    def effects(env: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if scope:
            env = {**env, scope: out}
        for name, fn in fields:
            try:
                out[name] = fn(env)
            except _CAUGHT:
                continue
        return out

    return effects


def _refs_of(
    desc: Mapping[str, Any], known: frozenset[str], needed: bool
) -> Callable[[Mapping[str, Any], Any, interp.Runtime], tuple[dict[str, Any], tuple[str, ...]]]:
    """``handlers._refs``, or nothing when no condition or effect reads the records and every
    entity they would be looked up in exists (the lookup could not raise)."""
    refs = desc.get("refs") or {}
    if not refs or (
        not needed
        and all(
            isinstance(s, dict) and s.get("entity") in known and s.get("sub") is None
            for s in refs.values()
        )
    ):
        return lambda args, store, rt: ({}, ())
    return lambda args, store, rt: interp._refs(desc, args, store, rt)


def _compile_view(view: Mapping[str, Any]) -> Callable[[Row, Mapping[str, Any]], Any]:
    """``handlers._view`` with the key sets built once."""
    if "path" in view:
        return lambda row, args: interp._view(row, view, args)
    omit = frozenset(view.get("omit") or ())
    omit_null = frozenset(view.get("omit_null") or ())
    if not omit and not omit_null:
        return lambda row, args: row
    if not omit_null:
        return lambda row, args: _without(row, omit)

    def show(row: Row, args: Mapping[str, Any]) -> Any:
        out = _without(row, omit)
        for k in omit_null:
            if k in out and out[k] is None:
                del out[k]
        return out

    return show


def _without(row: Row, omit: frozenset[str]) -> Row:
    """``{k: v for k, v in row.items() if k not in omit}``: for the world's rows (a ``dict`` or
    a :class:`FrozenDict`) as a C-level copy (a plain ``dict``, the row's key order) less the
    omitted keys, several times faster than the comprehension on a row of a dozen fields."""
    kind = type(row)
    if kind is dict or kind is FrozenDict:
        out = row.copy()
        for k in omit:
            if k in out:
                del out[k]
        return out
    return {k: v for k, v in row.items() if k not in omit}


# -- get and update --------------------------------------------------------------------------


def _compile_keyed(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    kind = desc["kind"]
    tool = desc.get("tool", "")
    entity = desc.get("entity", "")
    key_arg = desc["key"]
    check = _compile_check(desc)
    effects = desc.get("effects") or {}
    changes_of = _compile_effects(effects) if effects else None
    refs_of = _refs_of(desc, known, needed=check is not None or bool(effects)
                       or kind == "update")
    view0 = desc.get("view") or {}
    show0 = _compile_view(view0)
    others = [(o["entity"], _compile_view(o.get("view") or {})) for o in desc.get("also") or ()]
    side = bool(desc.get("side"))
    creates = list(desc.get("creates") or [])

    def keyed(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        refs, missing_refs = refs_of(args, store, rt)
        key = args.get(key_arg)
        row = store.get(entity, key) if isinstance(key, str) else None
        show = show0
        if row is None and isinstance(key, str):
            for other, other_show in others:
                row = store.get(other, key)
                if row is not None:
                    show = other_show
                    break
        if kind == "get" and check is None and changes_of is None:
            if row is None:
                raise ToolError.not_found(entity, key)
            return show(row, args)
        env = {"args": args, "old": row, "ref": refs, "db": store}
        changes = changes_of(env) if changes_of is not None and row is not None else {}
        if kind == "update" and row is not None:
            env["new"] = {**row, **changes}
        if check is not None:
            check(ErrorObservation(env, None, row is None, False, missing_refs))
        if row is None:
            raise ToolError.not_found(entity, key)
        if kind == "get":
            return show(row, args)
        new = store.update(entity, str(key), changes) if changes else row
        if side:
            apply_side_effects(desc, {**env, "new": new}, store, rt.parent_of)
        for made in creates:
            interp._insert(store, made["entity"], made.get("pk"), made["fields"],
                           {**env, "new": new})
        return interp._returns(desc, new, tool, args, rt)

    return keyed


def _compile_create(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    tool = desc.get("tool", "")
    entity = desc.get("entity", "")
    pk = desc.get("pk")
    check = _compile_check(desc)
    fields_of = _compile_effects(desc.get("fields") or {})
    refs_of = _refs_of(desc, known, needed=True)
    side = bool(desc.get("side"))

    def create(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        refs, missing_refs = refs_of(args, store, rt)
        env = {"args": args, "old": None, "ref": refs, "db": store}
        fields = fields_of(env)
        env["new"] = fields
        if check is not None:
            check(ErrorObservation(env, None, False, False, missing_refs))
        new = interp._insert(store, entity, pk, None, env, fields)
        if side:
            apply_side_effects(desc, {**env, "new": new}, store, rt.parent_of)
        return interp._returns(desc, new, tool, args, rt)

    return create


# -- indexes over the shared seeded tables ---------------------------------------------------


class TableIndex:
    """One seeded table's row positions and, per key (a field, a path), the positions of the
    rows holding each value. Built on first use and kept for the table's life: seeded tables
    are shared and never changed in place (the world writes to an overlay)."""

    def __init__(self, table: Mapping[str, Row]) -> None:
        self.table = table
        self.ids = list(table)
        self.position = {id: i for i, id in enumerate(self.ids)}
        self._keys: dict[Any, tuple[dict[Any, list[int]], list[int]]] = {}
        self._lock = threading.Lock()

    def buckets(
        self, name: Any, place: Callable[[Row], tuple[bool, Any]]
    ) -> tuple[dict[Any, list[int]], list[int]]:
        """``({value: positions}, always)`` for the key ``name``: ``place(row)`` says
        ``(True, value)`` for a row found only under ``value`` (hashable, and a probe finds it
        exactly when ``==`` holds: see :func:`_hashable`), ``(False, _)`` for a row that must
        always be checked; a row ``place`` leaves out (raises :class:`LookupError`) can never
        match."""
        found = self._keys.get(name)
        if found is not None:
            return found
        with self._lock:
            found = self._keys.get(name)
            if found is None:
                found = self._keys[name] = self._build(place)
        return found

    def _build(self, place: Callable[[Row], tuple[bool, Any]]) -> tuple[dict[Any, list[int]],
                                                                         list[int]]:
        buckets: dict[Any, list[int]] = {}
        always: list[int] = []
        for i, row in enumerate(self.table.values()):
            try:
                sure, value = place(row)
            except LookupError:
                continue
            except Exception:
                sure, value = False, None
            if sure:
                buckets.setdefault(value, []).append(i)
            else:
                always.append(i)
        return buckets, always


def _hashable(value: Any) -> bool:
    """A value a dict probe finds exactly when ``==`` holds: JSON scalars but NaN (which a
    probe can find by identity while ``==`` says no)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    return isinstance(value, float) and not math.isnan(value)


_indexes: dict[int, TableIndex] = {}
_indexes_lock = threading.Lock()


def index_of(table: Mapping[str, Row]) -> TableIndex:
    """The index of a seeded table (the entry holds the table, so its ``id()`` stays its own)."""
    found = _indexes.get(id(table))
    if found is not None and found.table is table:
        return found
    with _indexes_lock:
        found = _indexes.get(id(table))
        if found is None or found.table is not table:
            found = _indexes[id(table)] = TableIndex(table)
    return found


def _layers(store: Any, entity: str) -> tuple[Mapping[str, Row], Mapping[str, Row | None]] | None:
    """The seeded table and the episode's changes to it, when ``store`` is a session's world
    read now (a stale read, ``read_as_of``, and any other store are scanned)."""
    if type(store) is not ToolContext or store.read_as_of is not None:
        return None
    world = store.world
    return world.base.get(entity, _EMPTY), world.changes(entity)


_EMPTY: Mapping[str, Row] = {}


def _probed(
    layers: tuple[Mapping[str, Row], Mapping[str, Row | None]],
    index: TableIndex,
    hits: Iterable[int],
) -> Iterator[Row]:
    """The live rows at ``hits`` and every row the episode changed, in the order
    :meth:`~simforge.world.World.rows` yields them (seeded order, then created rows)."""
    base, changes = layers
    positions = set(hits)
    created: list[Row] = []
    position = index.position
    for id, row in changes.items():
        at = position.get(id)
        if at is not None:
            positions.add(at)
        elif row is not None and id not in base:
            created.append(row)
    ids = index.ids
    for at in sorted(positions):
        id = ids[at]
        row = changes[id] if id in changes else base[id]
        if row is not None:
            yield row
    yield from created


# -- search and find -------------------------------------------------------------------------


def _compile_search(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    entity = desc["entity"]
    check = _compile_check(desc)
    refs_of = _refs_of(desc, known, needed=check is not None)
    view = desc.get("view") or {}
    omit = frozenset(view.get("omit") or ())
    merges = [list(segments) for segments in view.get("merge") or []]
    add = dict(view.get("add") or {})
    const = dict(view.get("const") or {})
    filters = [
        (rule["field"], "arg" in rule, rule["arg"] if "arg" in rule else rule["c"])
        for rule in desc.get("filters") or []
    ]
    # filters an index can answer: on a field the row itself holds (not one an ``add`` or a
    # ``const`` sets for every row)
    probes = [
        (field, by_arg, want) for field, by_arg, want in filters
        if field not in add and field not in const
    ]

    def shown(row: Row, args: Mapping[str, Any]) -> Row | None:
        """The record a row is searched as (``None``: a merge does not apply to it)."""
        merged = _without(row, omit)
        try:
            for segments in merges:
                sub = interp._walk(row, segments, args)
                if not isinstance(sub, dict):
                    raise Unresolved(segments)
                merged.update(sub)
        except Unresolved:
            return None
        for name, arg in add.items():
            merged[name] = args.get(arg)
        merged.update(const)
        return merged

    def unsure(row: Row, field: str) -> bool:
        """Whether a merged sub-record may set ``field`` (the row's own value may not stand)."""
        return any(_may_hold(row, segments, field) for segments in merges)

    def value_of(row: Row, field: str) -> Any:
        return None if field in omit else row.get(field)

    def place_for(fields: tuple[str, ...]) -> Callable[[Row], tuple[bool, Any]]:
        def place(row: Row) -> tuple[bool, Any]:
            if any(unsure(row, f) for f in fields):
                return False, None
            values = tuple(value_of(row, f) for f in fields)
            return all(_hashable(v) for v in values), values

        return place

    names = {f: ("search", (f,), omit, repr(merges)) for f, _, _ in probes}
    plans: dict[int, tuple[list[int], tuple[Any, ...]]] = {}

    def plan(index: TableIndex) -> tuple[list[int], tuple[Any, ...]]:
        """The probes whose field nearly every seeded row holds as its own (an index on a field
        a sub-record sets for most rows narrows nothing), answered by one key of all of them."""
        found = plans.get(id(index))
        if found is None or found[1][0] is not index:
            chosen = []
            for i, (field, _, _) in enumerate(probes):
                _, always = index.buckets(names[field], place_for((field,)))
                if len(always) * 4 <= len(index.ids):
                    chosen.append(i)
            fields = tuple(probes[i][0] for i in chosen)
            name = ("search", fields, omit, repr(merges))
            found = plans[id(index)] = (chosen, (index, name, place_for(fields)))
        return found[0], found[1]

    def search(store: Any, args: dict[str, Any], rt: interp.Runtime) -> list[Any]:
        refs, _ = refs_of(args, store, rt)
        if check is not None:
            check(ErrorObservation({"args": args, "ref": refs, "db": store}, None))
        layers = _layers(store, entity)
        rows: Iterable[Row] = store.rows(entity)
        if layers is not None and probes:
            index = index_of(layers[0])
            chosen, (_, name, place) = plan(index)
            key = tuple(
                args.get(probes[i][2]) if probes[i][1] else probes[i][2] for i in chosen
            )
            if chosen and all(_hashable(v) for v in key):
                buckets, always = index.buckets(name, place)
                rows = _probed(layers, index, [*buckets.get(key, ()), *always])
        out = []
        for row in rows:
            merged = shown(row, args)
            if merged is None:
                continue
            for field, by_arg, want in filters:
                # == as the interpreter's filter (``!=`` need not be its negation)
                if not merged.get(field) == (args.get(want) if by_arg else want):  # noqa: SIM201
                    break
            else:
                out.append(merged)
        return out

    return search


def _may_hold(node: Any, segments: list[dict[str, Any]], field: str) -> bool:
    """Whether the sub-record a merge walks to, for any argument, can hold ``field``: an
    argument segment stands for every key (every element) at its level."""
    if not segments:
        return isinstance(node, dict) and field in node
    seg, rest = segments[0], segments[1:]
    if "c" in seg:
        key = seg["c"]
        if isinstance(node, dict):
            return key in node and _may_hold(node[key], rest, field)
        if isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
            return _may_hold(node[key], rest, field)
        return False
    if isinstance(node, dict):
        return any(_may_hold(v, rest, field) for v in node.values())
    if isinstance(node, list):
        return any(_may_hold(v, rest, field) for v in node)
    return False


def _compile_find(desc: Mapping[str, Any], known: frozenset[str]) -> Handler:
    entity = desc.get("entity", "")
    check = _compile_check(desc)
    refs_of = _refs_of(desc, known, needed=check is not None)
    match = [(arg, list(path)) for arg, path in desc["match"].items()]
    returns_key = desc.get("returns", "key") == "key"

    def place_for(path: list[Any]) -> Callable[[Row], tuple[bool, Any]]:
        def place(row: Row) -> tuple[bool, Any]:
            node: Any = row
            for part in path:
                if not isinstance(node, dict) or part not in node:
                    raise LookupError(part)  # the path is not there: never a match
                node = node[part]
            return _hashable(node), node

        return place

    def find(store: Any, args: dict[str, Any], rt: interp.Runtime) -> Any:
        refs, missing_refs = refs_of(args, store, rt)
        layers = _layers(store, entity)
        rows: Iterable[Row] = store.rows(entity)
        if layers is not None and match:
            index = index_of(layers[0])
            best: list[int] | None = None
            for arg, path in match:
                value = args.get(arg)
                if not _hashable(value):
                    continue
                buckets, always = index.buckets(("find", repr(path)), place_for(path))
                hits = buckets.get(value, [])
                if best is None or len(hits) + len(always) < len(best):
                    best = [*hits, *always]
            if best is not None:
                rows = _probed(layers, index, best)
        hit = next(
            (
                row for row in rows
                if all(interp._matches(row, path, args.get(arg)) for arg, path in match)
            ),
            None,
        )
        if check is not None:
            env = {"args": args, "ref": refs, "db": store}
            check(ErrorObservation(env, None, False, hit is None, missing_refs))
        if hit is None:
            raise ToolError(404, "not_found", f"no {entity} matches")
        return hit[desc["pk"]] if returns_key else hit

    return find


