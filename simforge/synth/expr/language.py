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
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator
from typing import Any

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
    if op == "c":
        return arg
    if op == "p":
        return get_path(env, arg)
    if op == "neg":
        return -_num(evaluate(arg, env))
    if op == "abs":
        return abs(_num(evaluate(arg, env)))
    if op == "round":
        return round(_num(evaluate(arg[0], env)), arg[1])
    if op == "len":
        value = evaluate(arg, env)
        if not isinstance(value, list | dict | str):
            raise Unresolved(op)
        return len(value)
    if op == "sorted":
        value = evaluate(arg, env)
        if not isinstance(value, list):
            raise Unresolved(op)
        try:
            return sorted(value)
        except TypeError:
            raise Unresolved(op) from None
    if op in ("add", "sub", "mul"):
        a, b = _num(evaluate(arg[0], env)), _num(evaluate(arg[1], env))
        return a + b if op == "add" else a - b if op == "sub" else a * b
    if op == "sum":
        items = _records(evaluate({"p": arg[0]}, env))
        total: float = 0
        for item in items:
            total += _num(item.get(arg[1]))
        return total
    if op == "pairdiff":
        a_items = _records(evaluate({"p": arg[0]}, env))
        b_items = _records(evaluate({"p": arg[1]}, env))
        if len(a_items) != len(b_items):
            raise Unresolved(op)
        diff: float = 0
        for x, y in zip(a_items, b_items, strict=True):
            diff += _num(x.get(arg[2])) - _num(y.get(arg[2]))
        return diff
    if op == "obj":
        return {k: evaluate(v, env) for k, v in arg.items()}
    if op == "if_pos":
        return evaluate(arg[1] if _num(evaluate(arg[0], env)) > 0 else arg[2], env)
    if op == "if_true":
        flag = evaluate(arg[0], env)
        if not isinstance(flag, bool):
            raise Unresolved(op)
        return evaluate(arg[1] if flag else arg[2], env)
    if op == "append":
        base = evaluate(arg[0], env)
        if not isinstance(base, list):
            raise Unresolved(op)
        return [*base, *(evaluate(e, env) for e in arg[1])]
    if op == "appendmap":
        base = evaluate(arg[0], env)
        source = evaluate({"p": arg[1]}, env)
        if not isinstance(base, list) or not isinstance(source, list):
            raise Unresolved(op)
        return [*base, *(evaluate(arg[2], {**env, "elem": item}) for item in source)]
    if op == "map":
        source = evaluate(arg[0], env)
        if not isinstance(source, list):
            raise Unresolved(op)
        return [evaluate(arg[1], {**env, "elem": item}) for item in source]
    if op == "row":
        return _row(arg, env)
    if op == "at":
        node = evaluate(arg[0], env)
        return get_path(node, [_segment(evaluate(seg, env)) for seg in arg[1:]])
    if op == "replace":
        return _replace(arg, env)
    raise ValueError(f"unknown expression form {op!r}")


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
    if op == "c":
        return lambda env: arg
    if op == "p":
        path = list(arg)
        if all(isinstance(p, str) for p in path):
            return _compile_keys(path, arg)
        return lambda env: get_path(env, path)
    if op in ("neg", "abs", "len", "sorted"):
        inner = compile_expr(arg)
        if op == "neg":
            return lambda env: -_num(inner(env))
        if op == "abs":
            return lambda env: abs(_num(inner(env)))
        if op == "len":
            return lambda env: _len(inner(env))
        return lambda env: _sorted(inner(env))
    if op == "round":
        inner, digits = compile_expr(arg[0]), arg[1]
        return lambda env: round(_num(inner(env)), digits)
    if op in ("add", "sub", "mul"):
        fa, fb = compile_expr(arg[0]), compile_expr(arg[1])
        binary = {"add": _add, "sub": _sub, "mul": _mul}[op]
        return lambda env: binary(_num(fa(env)), _num(fb(env)))
    if op == "sum":
        path, key = list(arg[0]), arg[1]
        return lambda env: _sum(get_path(env, path), key)
    if op == "pairdiff":
        pa, pb, key = list(arg[0]), list(arg[1]), arg[2]
        return lambda env: _pairdiff(get_path(env, pa), get_path(env, pb), key)
    if op == "obj":
        parts = [(k, compile_expr(v)) for k, v in arg.items()]
        return lambda env: {k: f(env) for k, f in parts}
    if op == "if_pos":
        fc, ft, fe = (compile_expr(e) for e in arg[:3])
        return lambda env: ft(env) if _num(fc(env)) > 0 else fe(env)
    if op == "if_true":
        fc, ft, fe = (compile_expr(e) for e in arg[:3])
        return lambda env: _if_true(fc(env), ft, fe, env)
    if op == "append":
        fbase, items = compile_expr(arg[0]), [compile_expr(e) for e in arg[1]]
        return lambda env: _append(fbase(env), items, env)
    if op == "appendmap":
        fbase, source, fitem = compile_expr(arg[0]), list(arg[1]), compile_expr(arg[2])
        return lambda env: _appendmap(fbase(env), get_path(env, source), fitem, env)
    if op == "map":
        fsource, fitem = compile_expr(arg[0]), compile_expr(arg[1])
        return lambda env: _map(fsource(env), fitem, env)
    if op == "row":
        table, fkey = arg[0], compile_expr(arg[1])
        return lambda env: _row_of(table, fkey(env), env)
    if op == "at":
        fnode, segments = compile_expr(arg[0]), [compile_expr(s) for s in arg[1:]]
        return lambda env: get_path(fnode(env), [_segment(f(env)) for f in segments])
    if op == "replace":
        return _compile_replace(arg)
    raise ValueError(f"unknown expression form {op!r}")


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
