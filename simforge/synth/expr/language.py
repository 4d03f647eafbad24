"""The small expression language of learned effects, and the search for expressions that
explain an observed value.

An expression is plain JSON, so a learned handler is data in ``tools.json`` that anyone can read
and edit, never generated code. It is evaluated against an environment::

    {"args": call arguments, "old": the entity before the call,
     "ref": {argument: the record(s) its id names}, "elem": the element being mapped,
     "new": fields of the row being written that are already computed (in effect order),
     "target": a record a side effect changes, "db": the store (for ``row`` lookups)}

Forms: ``{"c": value}`` (constant), ``{"p": [path]}`` (a value in the environment),
``{"neg"|"abs"|"sorted"|"len": e}``, ``{"round": [e, digits]}``, ``{"add"|"sub"|"mul": [a, b]}``,
``{"sum": [list, key]}``, ``{"pairdiff": [list_a, list_b, key]}`` (the sum of
``a[i][key] - b[i][key]``, accumulated in order as a loop would), ``{"obj": {key: e}}``,
``{"if_pos": [e, then, else]}``, ``{"if_true": [flag, then, else]}`` (a boolean argument), the
list forms ``append``, ``appendmap``, ``map`` and
``replace`` (see :func:`evaluate`), and the joins ``{"row": [entity, key]}`` (the row of another
entity table that a value names, read through the store) and ``{"at": [e, seg, ...]}`` (a path
into a value whose segments are themselves expressions: ``flights[elem.flight_number]
.dates[elem.date].prices[args.cabin]``). A hand-written search over these forms is small and
predictable; a general program synthesiser would be neither.

:data:`FORMS` is the language: each form's argument shape (the schema :func:`check` holds an
expression to, and :func:`json_schema` writes out), its evaluation and its compilation, so that
the interpreter and the compiler dispatch on one table.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from simforge.errors import UserError
from simforge.synth.expr.joins import joined
from simforge.world.frozen import FrozenDict

Expr = dict[str, Any]
Path = list[str | int]

_SOURCES = ("elem", "args", "ref", "old", "new", "target")


class Unresolved(Exception):
    """A path that does not exist in this environment (the expression does not apply)."""


def same(a: Any, b: Any) -> bool:
    """JSON equality, with numbers equal within 1e-9 relative (a sum's order is not meaning)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def get_path(env: Any, path: Path) -> Any:
    node = env
    for part in path:
        if isinstance(node, dict):
            if part not in node:
                raise Unresolved(path)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int):
            if not -len(node) <= part < len(node):
                raise Unresolved(path)
            node = node[part]
        else:
            raise Unresolved(path)
    return node


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unresolved(value)
    return value


def evaluate(expr: Expr, env: dict[str, Any]) -> Any:
    """The value of ``expr``; raises :class:`Unresolved` when it does not apply, and
    ``ValueError`` for what is no expression (not exactly one form, an unknown form)."""
    ((op, arg),) = expr.items()  # one form: an unpacking, as cheap as taking the first
    run = _EVALUATE.get(op)
    if run is None:
        raise ValueError(f"unknown expression form {op!r}")
    return run(arg, env)


# -- each form's evaluation (the interpreter's dispatch table is :data:`FORMS`) ---------------


def _e_neg(arg: Expr, env: dict[str, Any]) -> Any:
    return -_num(evaluate(arg, env))


def _e_abs(arg: Expr, env: dict[str, Any]) -> Any:
    return abs(_num(evaluate(arg, env)))


def _e_round(arg: list[Any], env: dict[str, Any]) -> Any:
    return round(_num(evaluate(arg[0], env)), arg[1])


def _e_len(arg: Expr, env: dict[str, Any]) -> Any:
    return _len(evaluate(arg, env))


def _e_sorted(arg: Expr, env: dict[str, Any]) -> Any:
    return _sorted(evaluate(arg, env))


def _e_binary(
    binary: Callable[[float, float], float],
) -> Callable[[list[Any], dict[str, Any]], Any]:
    def run(arg: list[Any], env: dict[str, Any]) -> Any:
        return binary(_num(evaluate(arg[0], env)), _num(evaluate(arg[1], env)))

    return run


def _e_sum(arg: list[Any], env: dict[str, Any]) -> Any:
    return _sum(get_path(env, arg[0]), arg[1])


def _e_pairdiff(arg: list[Any], env: dict[str, Any]) -> Any:
    return _pairdiff(get_path(env, arg[0]), get_path(env, arg[1]), arg[2])


def _e_obj(arg: dict[str, Any], env: dict[str, Any]) -> Any:
    return {k: evaluate(v, env) for k, v in arg.items()}


def _e_if_pos(arg: list[Any], env: dict[str, Any]) -> Any:
    return evaluate(arg[1] if _num(evaluate(arg[0], env)) > 0 else arg[2], env)


def _e_if_true(arg: list[Any], env: dict[str, Any]) -> Any:
    flag = evaluate(arg[0], env)
    if not isinstance(flag, bool):
        raise Unresolved("if_true")
    return evaluate(arg[1] if flag else arg[2], env)


def _e_append(arg: list[Any], env: dict[str, Any]) -> Any:
    base = evaluate(arg[0], env)
    if not isinstance(base, list):
        raise Unresolved("append")
    return [*base, *(evaluate(e, env) for e in arg[1])]


def _e_appendmap(arg: list[Any], env: dict[str, Any]) -> Any:
    base = evaluate(arg[0], env)
    source = get_path(env, arg[1])
    if not isinstance(base, list) or not isinstance(source, list):
        raise Unresolved("appendmap")
    return [*base, *(evaluate(arg[2], {**env, "elem": item}) for item in source)]


def _e_map(arg: list[Any], env: dict[str, Any]) -> Any:
    source = evaluate(arg[0], env)
    if not isinstance(source, list):
        raise Unresolved("map")
    return [evaluate(arg[1], {**env, "elem": item}) for item in source]


def _e_at(arg: list[Any], env: dict[str, Any]) -> Any:
    node = evaluate(arg[0], env)
    return get_path(node, [_segment(evaluate(seg, env)) for seg in arg[1:]])


def _row(arg: list[Any], env: dict[str, Any]) -> Any:
    """The row of table ``arg[0]`` whose key is the value of ``arg[1]`` (a join: a flight number
    in an argument names a row of the flights table)."""
    db = env.get("db")
    key = evaluate(arg[1], env)
    if db is None or not isinstance(key, str):
        raise Unresolved("row")
    row = db.get(arg[0], key)
    if row is None:
        raise Unresolved("row")
    return row


def _segment(value: Any) -> str | int:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise Unresolved("segment")


def _replace(arg: dict[str, Any], env: dict[str, Any]) -> list[Any]:
    """Elements of ``list`` whose ``key`` is the i-th of ``ids`` become the i-th of ``with``
    (projected on ``keys``): how an order's items are swapped for new variants."""
    base = evaluate(arg["list"], env)
    ids = evaluate(arg["ids"], env)
    new = evaluate(arg["with"], env)
    if not (isinstance(base, list) and isinstance(ids, list) and isinstance(new, list)):
        raise Unresolved("replace")
    if len(ids) != len(new):
        raise Unresolved("replace")
    out = list(base)
    used: set[int] = set()
    for old_id, record in zip(ids, new, strict=True):
        for i, item in enumerate(out):
            if i not in used and isinstance(item, dict) and item.get(arg["key"]) == old_id:
                if not isinstance(record, dict):
                    raise Unresolved("replace")
                out[i] = {k: record.get(k) for k in arg["keys"]}
                used.add(i)
                break
        else:
            raise Unresolved("replace")
    return out


def _records(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise Unresolved("records")
    return value


def evaluates_to(expr: Expr, env: dict[str, Any], want: Any) -> bool:
    try:
        return same(evaluate(expr, env), want)
    except (Unresolved, TypeError, ValueError, OverflowError):
        return False


# -- searching for explanations ------------------------------------------------------------------


def leaves(env: dict[str, Any], *, limit: int = 4000) -> list[tuple[Path, Any]]:
    """Every value in the environment with its path, sources in order of preference."""
    out: list[tuple[Path, Any]] = []

    def walk(node: Any, path: Path, depth: int) -> None:
        if len(out) >= limit:
            return
        out.append((path, node))
        if depth >= 6:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, [*path, k], depth + 1)
        elif isinstance(node, list):
            for i, v in enumerate(node[:50]):
                walk(v, [*path, i], depth + 1)
            if len(node) > 1:  # what a call appended is "the last one", wherever it lands
                walk(node[-1], [*path, -1], depth + 1)

    for source in _SOURCES:
        if source in env and env[source] is not None:
            walk(env[source], [source], 0)
    return out


class Explainer:
    """Candidate expressions for values, against one environment (indexes built once)."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.all = leaves(env)
        self.numbers: list[tuple[Expr, float]] = []
        self._by_key: dict[str, list[tuple[Expr, Any]]] = {}
        for path, value in self.all:
            if _is_number(value):
                self.numbers.append(({"p": path}, float(value)))
            if not isinstance(value, dict | list) or len(path) > 1:
                self._by_key.setdefault(_key(value), []).append(({"p": path}, value))
        self.numbers.extend(self._aggregates())
        for expr, value in joined(env):
            if _is_number(value):
                self.numbers.append((expr, float(value)))
            self._by_key.setdefault(_key(value), []).append((expr, value))
        self.numbers = self.numbers[:700]
        self.counts = self._counts()
        self._sorted = sorted(((v, i) for i, (_, v) in enumerate(self.numbers)))
        self._values = [v for v, _ in self._sorted]

    def _aggregates(self) -> list[tuple[Expr, float]]:
        lists = [
            (path, value)
            for path, value in self.all
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        ][:30]
        out: list[tuple[Expr, float]] = []
        for path, value in lists:
            for key in _numeric_keys(value):
                total: float = 0
                for item in value:
                    total += item[key]
                out.append(({"sum": [path, key]}, total))
        for pa, a in lists:
            for pb, b in lists:
                if pa is pb or len(a) != len(b):
                    continue
                for key in _numeric_keys(a) & _numeric_keys(b):
                    diff: float = 0
                    for x, y in zip(a, b, strict=True):
                        diff += x[key] - y[key]
                    out.append(({"pairdiff": [pa, pb, key]}, diff))
        return out

    def _counts(self) -> list[tuple[Expr, float]]:
        """Multipliers: list lengths and integer arguments of at least 2 (a fare is charged
        per passenger), one expression per distinct list."""
        out: list[tuple[Expr, float]] = []
        for path, value in self.all:
            if isinstance(value, list) and len(value) >= 2 and path[-1] != -1:
                out.append(({"len": {"p": path}}, float(len(value))))
            elif path[:1] == ["args"] and _is_number(value) and value >= 2 and value == int(value):
                out.append(({"p": path}, float(value)))
        return out[:12]

    def paths(self, value: Any) -> list[Expr]:
        """Expressions holding exactly the value: paths, then joins."""
        return [e for e, v in self._by_key.get(_key(value), []) if same(v, value)]

    def sorted_paths(self, value: list[Any]) -> list[Expr]:
        """Lists in the environment that, sorted, are the value (ids stored in order)."""
        out: list[Expr] = []
        for path, node in self.all:
            if isinstance(node, list) and len(node) == len(value) and len(path) > 1:
                try:
                    if same(sorted(node), value):
                        out.append({"p": path})
                except TypeError:
                    continue
        return out

    def scalar(self, value: Any) -> list[Expr]:
        """Paths holding the value, arithmetic over numbers in the environment, a constant."""
        found = self.paths(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.extend(self._arithmetic(float(value)))
        found.append({"c": value})
        return found

    def _near(self, target: float, tol: float) -> Iterator[int]:
        lo = bisect.bisect_left(self._values, target - tol)
        hi = bisect.bisect_right(self._values, target + tol)
        for pos in range(lo, min(hi, lo + 8)):
            yield self._sorted[pos][1]

    def _arithmetic(self, t: float) -> list[Expr]:
        out: list[Expr] = []
        tol = 1e-9 * max(1.0, abs(t))
        for i in self._near(-t, tol):
            out.append({"neg": self.numbers[i][0]})
        for expr, value in self.numbers:
            if "p" not in expr and math.isclose(value, t, rel_tol=1e-9, abs_tol=1e-9):
                out.append(expr)
            if "p" not in expr and math.isclose(abs(value), t, rel_tol=1e-9, abs_tol=1e-9):
                out.append({"abs": expr})
            if "p" not in expr and round(value, 2) == t:
                out.append({"round": [expr, 2]})
        if len(out) > 3:
            return out
        out.extend(self._pairs(t))
        for count, n in self.counts:
            # a per-unit value times a count: (new fare - old fare) * passengers
            unit = t / n
            near = [self.numbers[i][0] for i in self._near(unit, 1e-9 * max(1.0, abs(unit)))]
            for expr in [*near, *self._pairs(unit)]:
                out.append({"mul": [expr, count]})
        return out

    def _pairs(self, t: float) -> list[Expr]:
        out: list[Expr] = []
        tol = 1e-9 * max(1.0, abs(t))
        for expr_a, a in self.numbers:
            for j in self._near(a - t, tol):
                out.append({"sub": [expr_a, self.numbers[j][0]]})
            for j in self._near(t - a, tol):
                out.append({"add": [expr_a, self.numbers[j][0]]})
            if len(out) > 12:
                break
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numeric_keys(items: list[dict[str, Any]]) -> set[str]:
    keys = set(items[0])
    for item in items:
        keys &= {
            k for k, v in item.items() if isinstance(v, int | float) and not isinstance(v, bool)
        }
    return keys


def _key(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return f"n:{round(float(value), 6)}"
    if isinstance(value, str):
        return "s:" + value
    return f"{type(value).__name__}:{len(value)}"


# -- compiled expressions --------------------------------------------------------------------------

Compiled = Callable[[dict[str, Any]], Any]


def compile_expr(expr: Expr) -> Compiled:
    """``expr`` as a closure ``f(env)`` with exactly :func:`evaluate`'s value or exception,
    built once (a pack's handlers are compiled when it loads, :mod:`.compiled`). A form the
    compiler does not take apart (malformed, unknown) is evaluated by the interpreter, so that
    it fails the same way, when evaluated and not before."""
    try:
        return _compile(expr)
    except Exception:
        return lambda env: evaluate(expr, env)


def _compile(expr: Expr) -> Compiled:
    if not isinstance(expr, dict) or len(expr) != 1:
        raise ValueError("not a single-form expression")
    op, arg = next(iter(expr.items()))
    form = FORMS.get(op)
    if form is None:
        raise ValueError(f"unknown expression form {op!r}")
    return form.compile(arg)


# -- each form's compilation (the compiler's dispatch table is :data:`FORMS`) ----------------


def _c_p(arg: Path) -> Compiled:
    path = list(arg)
    if all(isinstance(p, str) for p in path):
        return _compile_keys(path, arg)  # type: ignore[arg-type]
    return lambda env: get_path(env, path)


def _c_unary(run: Callable[[Any], Any]) -> Callable[[Expr], Compiled]:
    def compile_(arg: Expr) -> Compiled:
        inner = compile_expr(arg)
        return lambda env: run(inner(env))

    return compile_


def _c_round(arg: list[Any]) -> Compiled:
    inner, digits = compile_expr(arg[0]), arg[1]
    return lambda env: round(_num(inner(env)), digits)


def _c_binary(binary: Callable[[float, float], float]) -> Callable[[list[Any]], Compiled]:
    def compile_(arg: list[Any]) -> Compiled:
        fa, fb = compile_expr(arg[0]), compile_expr(arg[1])
        return lambda env: binary(_num(fa(env)), _num(fb(env)))

    return compile_


def _c_sum(arg: list[Any]) -> Compiled:
    path, key = list(arg[0]), arg[1]
    return lambda env: _sum(get_path(env, path), key)


def _c_pairdiff(arg: list[Any]) -> Compiled:
    pa, pb, key = list(arg[0]), list(arg[1]), arg[2]
    return lambda env: _pairdiff(get_path(env, pa), get_path(env, pb), key)


def _c_obj(arg: dict[str, Any]) -> Compiled:
    parts = [(k, compile_expr(v)) for k, v in arg.items()]
    return lambda env: {k: f(env) for k, f in parts}


def _c_if_pos(arg: list[Any]) -> Compiled:
    fc, ft, fe = (compile_expr(e) for e in arg[:3])
    return lambda env: ft(env) if _num(fc(env)) > 0 else fe(env)


def _c_if_true(arg: list[Any]) -> Compiled:
    fc, ft, fe = (compile_expr(e) for e in arg[:3])
    return lambda env: _if_true(fc(env), ft, fe, env)


def _c_append(arg: list[Any]) -> Compiled:
    fbase, items = compile_expr(arg[0]), [compile_expr(e) for e in arg[1]]
    return lambda env: _append(fbase(env), items, env)


def _c_appendmap(arg: list[Any]) -> Compiled:
    fbase, source, fitem = compile_expr(arg[0]), list(arg[1]), compile_expr(arg[2])
    return lambda env: _appendmap(fbase(env), get_path(env, source), fitem, env)


def _c_map(arg: list[Any]) -> Compiled:
    fsource, fitem = compile_expr(arg[0]), compile_expr(arg[1])
    return lambda env: _map(fsource(env), fitem, env)


def _c_row(arg: list[Any]) -> Compiled:
    table, fkey = arg[0], compile_expr(arg[1])
    return lambda env: _row_of(table, fkey(env), env)


def _c_at(arg: list[Any]) -> Compiled:
    fnode, segments = compile_expr(arg[0]), [compile_expr(s) for s in arg[1:]]
    return lambda env: get_path(fnode(env), [_segment(f(env)) for f in segments])


def _compile_keys(path: list[str], original: Any) -> Compiled:
    """A path of keys only (``args.user_id``, ``old.total``): dict probes, falling back to
    :func:`get_path` for anything but dicts along the way (a list met on the path)."""
    if len(path) == 2:
        first, second = path

        def two(env: dict[str, Any]) -> Any:
            node = env.get(first, _MISSING) if type(env) is dict else _MISSING
            if type(node) is dict or type(node) is FrozenDict:
                value = node.get(second, _MISSING)
                if value is not _MISSING:
                    return value
            return get_path(env, original)

        return two
    return lambda env: get_path(env, original)


_MISSING = object()


def _len(value: Any) -> int:
    if not isinstance(value, list | dict | str):
        raise Unresolved("len")
    return len(value)


def _sorted(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise Unresolved("sorted")
    try:
        return sorted(value)
    except TypeError:
        raise Unresolved("sorted") from None


def _add(a: float, b: float) -> float:
    return a + b


def _sub(a: float, b: float) -> float:
    return a - b


def _mul(a: float, b: float) -> float:
    return a * b


def _sum(value: Any, key: str) -> float:
    total: float = 0
    for item in _records(value):
        total += _num(item.get(key))
    return total


def _pairdiff(a: Any, b: Any, key: str) -> float:
    a_items, b_items = _records(a), _records(b)
    if len(a_items) != len(b_items):
        raise Unresolved("pairdiff")
    diff: float = 0
    for x, y in zip(a_items, b_items, strict=True):
        diff += _num(x.get(key)) - _num(y.get(key))
    return diff


def _if_true(flag: Any, then: Compiled, other: Compiled, env: dict[str, Any]) -> Any:
    if not isinstance(flag, bool):
        raise Unresolved("if_true")
    return then(env) if flag else other(env)


def _append(base: Any, items: list[Compiled], env: dict[str, Any]) -> list[Any]:
    if not isinstance(base, list):
        raise Unresolved("append")
    return [*base, *(f(env) for f in items)]


def _appendmap(base: Any, source: Any, item: Compiled, env: dict[str, Any]) -> list[Any]:
    if not isinstance(base, list) or not isinstance(source, list):
        raise Unresolved("appendmap")
    return [*base, *(item({**env, "elem": x}) for x in source)]


def _map(source: Any, item: Compiled, env: dict[str, Any]) -> list[Any]:
    if not isinstance(source, list):
        raise Unresolved("map")
    return [item({**env, "elem": x}) for x in source]


def _row_of(table: str, key: Any, env: dict[str, Any]) -> Any:
    db = env.get("db")
    if db is None or not isinstance(key, str):
        raise Unresolved("row")
    row = db.get(table, key)
    if row is None:
        raise Unresolved("row")
    return row


def _compile_replace(arg: dict[str, Any]) -> Compiled:
    flist, fids, fwith = (compile_expr(arg[k]) for k in ("list", "ids", "with"))
    key, keys = arg["key"], arg["keys"]

    def replace(env: dict[str, Any]) -> list[Any]:
        # what _replace evaluates, in its order; the element swap is its own
        spec = {"list": {"c": flist(env)}, "ids": {"c": fids(env)}, "with": {"c": fwith(env)},
                "key": key, "keys": keys}
        return _replace(spec, env)

    return replace


# -- the forms: schema and dispatch table ----------------------------------------------------
#
# A shape says what a form's argument is: "expr" (an expression), "path" (a list of keys and
# indexes into the environment), "str", "int", "any" (a JSON value), ("list", shape),
# ("tuple", (shape, ...), rest) (a fixed list, then any number of ``rest`` when not None),
# ("map", shape) (an object of names to shape) and ("record", {key: shape}) (exactly those keys).

Shape = Any


@dataclass(frozen=True)
class Form:
    """One form of the language: its argument's shape (the schema :func:`check` holds it to,
    :func:`json_schema` writes out), how the interpreter evaluates it and how it compiles."""

    name: str
    shape: Shape
    evaluate: Callable[[Any, dict[str, Any]], Any]
    compile: Callable[[Any], Compiled]


def _pair(shape: Shape) -> Shape:
    return ("tuple", (shape, shape), None)


_THREE = ("tuple", ("expr", "expr", "expr"), None)

FORMS: dict[str, Form] = {
    form.name: form
    for form in [
        Form("c", "any", lambda arg, env: arg, lambda arg: lambda env: arg),
        Form("p", "path", lambda arg, env: get_path(env, arg), _c_p),
        Form("neg", "expr", _e_neg, _c_unary(lambda v: -_num(v))),
        Form("abs", "expr", _e_abs, _c_unary(lambda v: abs(_num(v)))),
        Form("len", "expr", _e_len, _c_unary(_len)),
        Form("sorted", "expr", _e_sorted, _c_unary(_sorted)),
        Form("round", ("tuple", ("expr", "int"), None), _e_round, _c_round),
        Form("add", _pair("expr"), _e_binary(_add), _c_binary(_add)),
        Form("sub", _pair("expr"), _e_binary(_sub), _c_binary(_sub)),
        Form("mul", _pair("expr"), _e_binary(_mul), _c_binary(_mul)),
        Form("sum", ("tuple", ("path", "str"), None), _e_sum, _c_sum),
        Form("pairdiff", ("tuple", ("path", "path", "str"), None), _e_pairdiff, _c_pairdiff),
        Form("obj", ("map", "expr"), _e_obj, _c_obj),
        Form("if_pos", _THREE, _e_if_pos, _c_if_pos),
        Form("if_true", _THREE, _e_if_true, _c_if_true),
        Form("append", ("tuple", ("expr", ("list", "expr")), None), _e_append, _c_append),
        Form("appendmap", ("tuple", ("expr", "path", "expr"), None), _e_appendmap,
             _c_appendmap),
        Form("map", _pair("expr"), _e_map, _c_map),
        Form("row", ("tuple", ("str", "expr"), None), _row, _c_row),
        Form("at", ("tuple", ("expr",), "expr"), _e_at, _c_at),
        Form("replace", ("record", {"list": "expr", "ids": "expr", "with": "expr", "key": "str",
                                    "keys": ("list", "str")}), _replace, _compile_replace),
    ]
}
"""Every form by name: the language's schema and the interpreter's and compiler's dispatch."""

_EVALUATE = {name: form.evaluate for name, form in FORMS.items()}


class ExprError(UserError, ValueError):
    """A malformed expression, naming where it is (a JSON path) and the form it breaks."""


def check(expr: Any, where: str = "$") -> None:
    """Hold ``expr`` to the schema of :data:`FORMS`, every nested expression too; raises
    :class:`ExprError` naming the place (``$.effects.total.add[1]``) and the form."""
    if not isinstance(expr, dict) or len(expr) != 1:
        raise ExprError(f"{where}: an expression is an object of exactly one form "
                        f"({', '.join(FORMS)}), got {_excerpt(expr)}")
    ((op, arg),) = expr.items()
    form = FORMS.get(op)
    if form is None:
        raise ExprError(f"{where}: unknown expression form {op!r}")
    _check_shape(form.shape, arg, f"{where}.{op}", op)


def _check_shape(shape: Shape, value: Any, where: str, op: str) -> None:
    def fail() -> ExprError:
        return ExprError(f"{where}: the {op!r} form wants {_describe(shape)} here, got "
                         f"{_excerpt(value)}")

    if shape == "any":
        return
    if shape == "expr":
        check(value, where)
    elif shape == "path":
        if not isinstance(value, list) or not all(_is_segment(p) for p in value):
            raise fail()
    elif shape == "str":
        if not isinstance(value, str):
            raise fail()
    elif shape == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise fail()
    elif shape[0] == "list":
        if not isinstance(value, list):
            raise fail()
        for i, item in enumerate(value):
            _check_shape(shape[1], item, f"{where}[{i}]", op)
    elif shape[0] == "tuple":
        _, fixed, rest = shape
        if not isinstance(value, list) or len(value) < len(fixed) or (
            rest is None and len(value) != len(fixed)
        ):
            raise fail()
        for i, item in enumerate(value):
            _check_shape(fixed[i] if i < len(fixed) else rest, item, f"{where}[{i}]", op)
    elif shape[0] == "map":
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise fail()
        for key, item in value.items():
            _check_shape(shape[1], item, f"{where}.{key}", op)
    elif shape[0] == "record":
        if not isinstance(value, dict) or set(value) != set(shape[1]):
            raise fail()
        for key, sub in shape[1].items():
            _check_shape(sub, value[key], f"{where}.{key}", op)


def _is_segment(part: Any) -> bool:
    return isinstance(part, str) or (isinstance(part, int) and not isinstance(part, bool))


def _describe(shape: Shape) -> str:
    words = {"any": "any JSON value", "expr": "an expression", "str": "a string",
             "int": "an integer", "path": "a path (a list of keys and indexes)"}
    if isinstance(shape, str):
        return words[shape]
    if shape[0] == "list":
        return f"a list of {_plural(shape[1])}"
    if shape[0] == "map":
        return f"an object of {_plural(shape[1])}"
    if shape[0] == "record":
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in shape[1].items()) + "}"
    _, fixed, rest = shape
    parts = [_describe(s) for s in fixed] + ([f"{_describe(rest)}..."] if rest else [])
    return "[" + ", ".join(parts) + "]"


def _plural(shape: Shape) -> str:
    return {"expr": "expressions", "str": "strings"}.get(shape, _describe(shape))


def _excerpt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def json_schema() -> dict[str, Any]:
    """The language as a JSON Schema (draft 2020-12), written from :data:`FORMS`: what
    :func:`check` accepts, for editors and other tools that read ``tools.json``."""

    def of(shape: Shape) -> dict[str, Any]:
        if shape == "any":
            return {}
        if shape == "expr":
            return {"$ref": "#/$defs/expr"}
        if shape == "path":
            return {"type": "array", "items": {"type": ["string", "integer"]}}
        if shape == "str":
            return {"type": "string"}
        if shape == "int":
            return {"type": "integer"}
        if shape[0] == "list":
            return {"type": "array", "items": of(shape[1])}
        if shape[0] == "map":
            return {"type": "object", "additionalProperties": of(shape[1])}
        if shape[0] == "record":
            return {"type": "object", "properties": {k: of(v) for k, v in shape[1].items()},
                    "required": list(shape[1]), "additionalProperties": False}
        _, fixed, rest = shape
        return {"type": "array", "prefixItems": [of(s) for s in fixed],
                "items": of(rest) if rest else False, "minItems": len(fixed)}

    forms = [
        {"type": "object", "properties": {name: of(form.shape)}, "required": [name],
         "additionalProperties": False}
        for name, form in FORMS.items()
    ]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"expr": {"oneOf": forms}}, "$ref": "#/$defs/expr"}
