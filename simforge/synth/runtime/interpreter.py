"""Running a learned handler: the interpreter of the handler descriptions in ``tools.json``.

The same code checks a candidate handler against the recorded calls while learning (through
:class:`DictStore`) and is the reference of what a session runs: sessions (and fidelity, which
replays through a loaded pack) run each description compiled once (:mod:`.compiled`), which
answers exactly as this interpreter does, on a :class:`~simforge.tools.ToolContext`. Kinds:

``get`` (an entity by its key argument, whole or a path into it; ``also``: other entities tried
in turn for an id the first lacks), ``find`` (the key of the row
whose fields equal the arguments), ``search`` (rows filtered by arguments and constants, merged
with a sub-record an argument selects), ``update`` and ``create`` (learned effects; an update may
also insert the records it makes, ``creates``), ``compute``
(arithmetic), ``constant``, ``replay``, ``state`` (an answer rendered from the session's
history of state-changing calls, :mod:`.text_state`) and ``declared`` (a tool the traces
declare and no training call used: in the catalog, with nothing known of what it answers).
Every kind checks
the learned error conditions first; a write computes its effects before (a condition may
compare an argument with a computed total) and applies its learned side effects after
(:mod:`.side_effects`).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from simforge.synth.entities.catalog import Ref, resolve
from simforge.synth.expr.language import Unresolved
from simforge.synth.runtime.effects import apply_effects
from simforge.synth.runtime.error_rules import ErrorObservation, holds, render
from simforge.synth.runtime.replay_table import ReplayTable
from simforge.synth.runtime.side_effects import RESULT, TOKEN, apply_side_effects
from simforge.synth.runtime.text_model import STATE_ENTITY, STATE_ID, STATE_KEY, Model, op
from simforge.synth.runtime.text_model import render as render_text
from simforge.tools.errors import ToolError

Row = dict[str, Any]


class Store(Protocol):
    def get(self, entity: str, id: str) -> Row | None: ...
    def rows(self, entity: str) -> Iterator[Row]: ...
    def update(self, entity: str, id: str, changes: Mapping[str, Any]) -> Row: ...
    def insert(self, entity: str, row: Mapping[str, Any]) -> Row: ...


class DictStore:
    """A store over plain tables (learning-time checks); writes go to an overlay."""

    def __init__(self, base: Mapping[str, Mapping[str, Row]], pks: Mapping[str, str]) -> None:
        self.base = base
        self.pks = pks
        self.overlay: dict[str, dict[str, Row]] = {}

    def get(self, entity: str, id: str) -> Row | None:
        over = self.overlay.get(entity, {})
        if id in over:
            return over[id]
        return self.base.get(entity, {}).get(id)

    def rows(self, entity: str) -> Iterator[Row]:
        over = self.overlay.get(entity, {})
        base = self.base.get(entity, {})
        for id, row in base.items():
            yield over.get(id, row)
        for id, row in over.items():
            if id not in base:
                yield row

    def snapshot(self) -> DictStore:
        """The store as it is now, unaffected by later writes (rows are replaced on write,
        never edited in place, so copying the overlay's tables is enough)."""
        copy = DictStore(self.base, self.pks)
        copy.overlay = {entity: dict(rows) for entity, rows in self.overlay.items()}
        return copy

    def put(self, entity: str, id: str, row: Row) -> None:
        self.overlay.setdefault(entity, {})[id] = row

    def update(self, entity: str, id: str, changes: Mapping[str, Any]) -> Row:
        row = {**(self.get(entity, id) or {}), **changes}
        self.put(entity, id, row)
        return row

    def insert(self, entity: str, row: Mapping[str, Any]) -> Row:
        new = dict(row)
        pk = self.pks[entity]
        if new.get(pk) is None:
            new[pk] = f"{entity}-{len(self.overlay.get(entity, {})) + 1}"
        self.put(entity, str(new[pk]), new)
        return new


class Runtime:
    """What a handler needs beyond the store: sub-record parents, replay tables and the model of
    state shown only in text (:mod:`.text_state`)."""

    def __init__(
        self,
        parent_of: Mapping[str, str],
        replays: Mapping[str, ReplayTable],
        state: Model | None = None,
    ) -> None:
        self.parent_of = parent_of
        self.replays = replays
        self.state = state


def _walk(node: Any, segments: list[dict[str, Any]], args: Mapping[str, Any]) -> Any:
    for seg in segments:
        key = seg["c"] if "c" in seg else args.get(seg["arg"])
        if isinstance(node, dict) and key in node:
            node = node[key]
            continue
        if isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
            node = node[key]
            continue
        raise Unresolved(segments)
    return node


def _refs(
    desc: Mapping[str, Any], args: Mapping[str, Any], store: Store, rt: Runtime
) -> tuple[dict[str, Any], tuple[str, ...]]:
    out: dict[str, Any] = {}
    missing: list[str] = []
    for name, spec in (desc.get("refs") or {}).items():
        ref = Ref(spec["entity"], spec.get("sub"))
        value = args.get(name)
        if isinstance(value, list):
            records = [
                resolve(ref, v, store.get, rt.parent_of) if isinstance(v, str) else None
                for v in value
            ]
            if any(r is None for r in records):
                missing.append(name)
            out[name] = records
        elif isinstance(value, str):
            record = resolve(ref, value, store.get, rt.parent_of)
            if record is None:
                missing.append(name)
            out[name] = record
    return out, tuple(missing)


def _check(desc: Mapping[str, Any], obs: ErrorObservation) -> None:
    for rule in desc.get("errors") or []:
        if holds(rule["when"], obs):
            raise ToolError(rule["status"], "tool_error", render(rule, obs.env))


def run(desc: Mapping[str, Any], store: Store, args: dict[str, Any], rt: Runtime) -> Any:
    """The result of one call, or a :class:`ToolError` with the learned (or recorded) text. A
    call of a state-changing tool (``records``) enters the session's history."""
    if desc["kind"] == "state":
        return _state(desc, store, args, rt)
    result = _run(desc, store, args, rt)
    _named_side_effects(desc, store, args, result, rt)
    if desc.get("records") and rt.state is not None:
        _record(store, rt.state, [*_history(store), op(desc.get("tool", ""), args)])
    return result


def _named_side_effects(
    desc: Mapping[str, Any], store: Store, args: dict[str, Any], result: Any, rt: Runtime
) -> None:
    """Side effects on the row a write's text answer names (``@result``: the bill a payment
    says it paid)."""
    rules = [r for r in desc.get("side") or () if r.get("arg") == RESULT]
    if not rules or not isinstance(result, str):
        return
    for rule in rules:
        for token in dict.fromkeys(TOKEN.findall(result)):
            if store.get(rule["entity"], token) is not None:
                env = {"args": {**args, RESULT: token}, "old": None, "db": store}
                apply_side_effects({"side": [rule]}, env, store, rt.parent_of)
                break


def _history(store: Store) -> list[str]:
    row = store.get(STATE_ENTITY, STATE_ID)
    return list(row.get("ops") or []) if row is not None else []


def _record(store: Store, model: Model, ops: list[str]) -> None:
    if store.get(STATE_ENTITY, STATE_ID) is None:
        store.insert(STATE_ENTITY, {STATE_KEY: STATE_ID, **model.row(ops)})
    else:
        store.update(STATE_ENTITY, STATE_ID, model.row(ops))


def _state(desc: Mapping[str, Any], store: Store, args: dict[str, Any], rt: Runtime) -> Any:
    """An answer rendered from the session's history (see :mod:`.text_state`)."""
    model = rt.state
    if model is None:
        raise ToolError(501, "not_implemented", f"{desc.get('tool')}: no state model")
    ops = _history(store)
    if desc.get("records"):
        ops.append(op(desc.get("tool", ""), args))
        _record(store, model, ops)
    return render_text(desc, model, model.features.of(ops, args))


def _run(desc: Mapping[str, Any], store: Store, args: dict[str, Any], rt: Runtime) -> Any:
    kind = desc["kind"]
    tool = desc.get("tool", "")
    if kind == "constant":
        return desc["value"]
    if kind == "replay":
        return _replay(tool, args, rt)
    if kind == "declared":
        raise ToolError(501, "not_implemented", f"{tool}: declared by the traces, never called")
    if kind == "compute":
        _check(desc, ErrorObservation({"args": args}, None))
        return _compute(desc, args)
    entity = desc.get("entity", "")
    refs, missing_refs = _refs(desc, args, store, rt)
    if kind in ("get", "update"):
        key = args.get(desc["key"])
        row = store.get(entity, key) if isinstance(key, str) else None
        view = desc.get("view") or {}
        if row is None and isinstance(key, str):
            for other in desc.get("also") or ():
                # one read over several tables (a details-by-id lookup): the first with the id
                row = store.get(other["entity"], key)
                if row is not None:
                    view = other.get("view") or {}
                    break
        env = {"args": args, "old": row, "ref": refs, "db": store}
        changes = apply_effects(desc.get("effects") or {}, env) if row is not None else {}
        if kind == "update" and row is not None:
            env["new"] = {**row, **changes}
        obs = ErrorObservation(env, None, row is None, False, missing_refs)
        _check(desc, obs)
        if row is None:
            raise ToolError.not_found(entity, key)
        if kind == "get":
            return _view(row, view, args)
        new = store.update(entity, str(key), changes) if changes else row
        apply_side_effects(desc, {**env, "new": new}, store, rt.parent_of)
        for made in desc.get("creates") or []:
            _insert(store, made["entity"], made.get("pk"), made["fields"], {**env, "new": new})
        return _returns(desc, new, tool, args, rt)
    if kind == "find":
        match = desc["match"].items()
        hit = next(
            (
                row
                for row in store.rows(entity)
                if all(_matches(row, path, args.get(arg)) for arg, path in match)
            ),
            None,
        )
        env = {"args": args, "ref": refs, "db": store}
        _check(desc, ErrorObservation(env, None, False, hit is None, missing_refs))
        if hit is None:
            raise ToolError(404, "not_found", f"no {entity} matches")
        return hit[desc["pk"]] if desc.get("returns", "key") == "key" else hit
    if kind == "search":
        _check(desc, ErrorObservation({"args": args, "ref": refs, "db": store}, None))
        return _search(desc, store, args)
    if kind == "create":
        env = {"args": args, "old": None, "ref": refs, "db": store}
        fields = apply_effects(desc.get("fields") or {}, env)
        env["new"] = fields
        _check(desc, ErrorObservation(env, None, False, False, missing_refs))
        new = _insert(store, entity, desc.get("pk"), None, env, fields)
        apply_side_effects(desc, {**env, "new": new}, store, rt.parent_of)
        return _returns(desc, new, tool, args, rt)
    raise ValueError(f"unknown handler kind {kind!r}")


def _insert(
    store: Store,
    entity: str,
    pk: str | None,
    effects: Mapping[str, Any] | None,
    env: dict[str, Any],
    fields: dict[str, Any] | None = None,
) -> Row:
    """Insert a row computed from ``effects`` (or given as ``fields``); an id already taken is
    dropped, and the world hands out a fresh one."""
    if fields is None:
        fields = apply_effects(dict(effects or {}), env, None)
    if pk and (not isinstance(fields.get(pk), str) or store.get(entity, fields[pk]) is not None):
        fields.pop(pk, None)
    return store.insert(entity, fields)


def _returns(
    desc: Mapping[str, Any], row: Row, tool: str, args: dict[str, Any], rt: Runtime
) -> Any:
    returns = desc.get("returns", "row")
    if returns == "row":
        return _view(row, desc.get("view") or {}, args)
    if returns == "replay":
        return _replay(tool, args, rt)
    if "template" in returns:
        return fill(returns["template"], args)
    return returns["c"]


def fill(template: str, args: Mapping[str, Any]) -> str:
    """A text answer with the call's arguments in its slots (``{user_id}``)."""
    return template.format_map({k: _text(v) for k, v in args.items()})


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else str(value)


def _matches(row: Row, path: list[Any], value: Any) -> bool:
    node: Any = row
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return bool(node == value)


def _view(row: Row, view: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    if "path" in view:
        try:
            return _walk(row, view["path"], args)
        except Unresolved:
            raise ToolError(404, "not_found", "no such record") from None
    omit = set(view.get("omit") or ())
    omit_null = set(view.get("omit_null") or ())
    if not omit and not omit_null:
        return row
    return {k: v for k, v in row.items() if k not in omit and not (v is None and k in omit_null)}


def _search(desc: Mapping[str, Any], store: Store, args: Mapping[str, Any]) -> list[Any]:
    view = desc.get("view") or {}
    omit = set(view.get("omit") or ())
    out = []
    for row in store.rows(desc["entity"]):
        try:
            merged = {k: v for k, v in row.items() if k not in omit}
            for segments in view.get("merge") or []:
                sub = _walk(row, segments, args)
                if not isinstance(sub, dict):
                    raise Unresolved(segments)
                merged.update(sub)
            for name, arg in (view.get("add") or {}).items():
                merged[name] = args.get(arg)
            merged.update(view.get("const") or {})
        except Unresolved:
            continue
        if all(_filter(merged, f, args) for f in desc.get("filters") or []):
            out.append(merged)
    return out


def _filter(record: Row, rule: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    want = args.get(rule["arg"]) if "arg" in rule else rule["c"]
    return bool(record.get(rule["field"]) == want)


def _replay(tool: str, args: dict[str, Any], rt: Runtime) -> Any:
    table = rt.replays.get(tool)
    match = table.lookup(args) if table is not None else None
    if match is None:
        raise ToolError(501, "not_implemented", f"{tool}: no recorded response")
    if "error" in match.response:
        raise ToolError(400, "tool_error", match.response["error"])
    return match.response["result"]


_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def arithmetic(text: str) -> float:
    """An arithmetic expression of numbers, + - * / ** % // and parentheses; nothing else."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            right = ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            return _OPS[type(node.op)](ev(node.left), right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError("not an arithmetic expression")

    return float(ev(ast.parse(text, mode="eval")))


def _compute(desc: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    text = args.get(desc["arg"])
    try:
        value = arithmetic(str(text))
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError) as exc:
        raise ToolError(422, "invalid_expression", f"Error: {exc}") from None
    digits = desc.get("digits")
    result: Any = round(value, digits) if digits is not None else value
    return str(result) if desc.get("as_string") else result
