"""Learned error rules as a session evaluates them: whether a rule's condition holds of a call
(:func:`holds`), the status it answers with and its message filled with the call's values
(:func:`render`). Learned by :mod:`simforge.synth.learn.error_conditions`; the runtime layer
holds what the interpreter and the compiled handlers need, so that learning builds on the
runtime and never the other way round."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simforge.synth.expr.language import Unresolved, evaluate, get_path, same


@dataclass
class ErrorObservation:
    env: dict[str, Any]
    error: str | None
    missing_target: bool = False
    no_match: bool = False
    missing_refs: tuple[str, ...] = ()


def status_for(message: str, condition: dict[str, Any]) -> int:
    lowered = message.lower()
    if "missing" in condition or "no_match" in condition or "not found" in lowered:
        return 404
    if "not_in" in condition or "any_not_in" in condition:
        return 409
    return 422


def holds(condition: dict[str, Any], obs: ErrorObservation) -> bool:
    """Whether the condition is true of a call."""
    op, arg = next(iter(condition.items()))
    env = obs.env
    args = env.get("args") or {}
    try:
        if op == "missing":
            return obs.missing_target
        if op == "no_match":
            return obs.no_match
        if op == "missing_ref":
            return arg in obs.missing_refs
        if op == "not_in":
            return get_path(env, arg[0]) not in arg[1]
        if op == "any_not_in":
            records = get_path(env, arg[0])
            return isinstance(records, list) and any(
                isinstance(r, dict) and r.get(arg[1]) not in arg[2] for r in records
            )
        if op == "len_ne":
            a, b = args.get(arg[0]), args.get(arg[1])
            return isinstance(a, list) and isinstance(b, list) and len(a) != len(b)
        if op == "pair_eq":
            a, b = args.get(arg[0]), args.get(arg[1])
            return (
                isinstance(a, list)
                and isinstance(b, list)
                and any(x == y for x, y in zip(a, b, strict=False))
            )
        if op == "not_subset":
            wanted = args.get(arg[0])
            items = get_path(env, ["old", arg[1]])
            have = {i.get(arg[2]) for i in items if isinstance(i, dict)}
            return isinstance(wanted, list) and any(w not in have for w in wanted)
        if op in ("ne", "lt", "gt"):
            a, b = evaluate(arg[0], env), evaluate(arg[1], env)
            if op == "ne":
                return not same(a, b)
            return bool(a < b) if op == "lt" else bool(a > b)
    except (Unresolved, TypeError, AttributeError, ValueError, KeyError):
        return False
    raise ValueError(f"unknown error condition {op!r}")


def render(rule: dict[str, Any], env: dict[str, Any]) -> str:
    """The rule's message, its template filled with the values of this call."""
    exprs = rule.get("format")
    if not exprs:
        return str(rule["message"])
    values = []
    for expr in exprs:
        try:
            values.append(_show(evaluate(expr, env)))
        except (Unresolved, TypeError, ValueError, KeyError):
            values.append("?")
    return str(rule["message"]).format(*values)


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
