"""Rewrites of a result for the ``result``-stage faults. Each returns a new value; the result it
is given is already the agent's private copy, never a row of the world."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simforge.faults.kinds import PartialResult

_LIST_KEYS = ("items", "results", "data", "records")


def _list_in(result: Any) -> tuple[list[Any] | None, str | None]:
    if isinstance(result, list):
        return result, None
    if isinstance(result, dict):
        for key in _LIST_KEYS:
            if isinstance(result.get(key), list):
                return result[key], key
    return None, None


def _with_list(result: Any, key: str | None, items: list[Any]) -> Any:
    if key is None:
        return items
    return {**result, key: items}


def partial(result: Any, fault: PartialResult, rng: Callable[[], random.Random]) -> Any:
    mode = fault.mode
    if mode in ("truncate_list", "missing_page"):
        items, key = _list_in(result)
        if not items:
            return result
        keep = max(0, int(len(items) * (1 - fault.fraction)))
        if mode == "truncate_list":
            return _with_list(result, key, items[:keep])
        drop = len(items) - keep
        start = rng().randrange(0, keep + 1)
        return _with_list(result, key, items[:start] + items[start + drop :])
    if mode in ("missing_fields", "null_fields"):
        return _fields(result, fault, rng)
    return _cut_text(result, fault.fraction)


def _fields(result: Any, fault: PartialResult, rng: Callable[[], random.Random]) -> Any:
    def rewrite(row: dict[str, Any]) -> dict[str, Any]:
        names = fault.fields or [k for k in row if k not in ("id",) and not k.endswith("_id")]
        if not fault.fields and names:
            count = max(1, int(len(names) * fault.fraction))
            names = rng().sample(names, count)
        if fault.mode == "missing_fields":
            return {k: v for k, v in row.items() if k not in names}
        return {k: (None if k in names else v) for k, v in row.items()}

    items, key = _list_in(result)
    if items is not None:
        return _with_list(result, key, [rewrite(r) if isinstance(r, dict) else r for r in items])
    if isinstance(result, dict):
        return rewrite(result)
    return result


def _cut_text(value: Any, fraction: float) -> Any:
    """Cut every string short, except identifiers (a cut id is a different id, not cut text)."""
    if isinstance(value, str):
        return value[: int(len(value) * (1 - fraction))]
    if isinstance(value, dict):
        return {
            k: v if (k == "id" or k.endswith("_id")) else _cut_text(v, fraction)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_cut_text(v, fraction) for v in value]
    return value


_CASTS = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
}


def drift(value: Any, rename: Mapping[str, str], retype: Mapping[str, str]) -> Any:
    if isinstance(value, list):
        return [drift(v, rename, retype) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in retype and v is not None and not isinstance(v, dict | list):
            try:
                v = _CASTS[retype[k]](v)
            except (TypeError, ValueError):
                v = str(v)
        else:
            v = drift(v, rename, retype)
        out[rename.get(k, k)] = v
    return out


def inject(value: Any, text: str, field: str | None) -> Any:
    """Put ``text`` into the named string field, or the first string field found."""
    done = False

    def walk(v: Any) -> Any:
        nonlocal done
        if done:
            return v
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if not done and isinstance(x, str) and (field is None or k == field):
                    out[k] = f"{x}\n\n{text}"
                    done = True
                else:
                    out[k] = walk(x)
            return out
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    result = walk(value)
    if not done:
        if isinstance(result, dict):
            return {**result, field or "note": text}
        if isinstance(result, str):
            return f"{result}\n\n{text}"
    return result
