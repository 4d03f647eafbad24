"""Learned error conditions: when a tool refuses, and with which recorded words.

Each distinct recorded error text of a tool is explained, where possible, by a condition over
the call that holds for every call that got that error and for no call that succeeded:

- ``{"missing": "target"}``: the entity the key argument names does not exist
  (``get_order_details`` of an unknown id gives ``Error: Order not found``);
- ``{"no_match": true}``: a lookup found nothing (``Error: User not found``);
- ``{"missing_ref": arg}``: an id argument names nothing;
- ``{"not_in": [path, allowed]}``: a field of the entity holds a value never seen in a
  successful call (``Error: Non-delivered order cannot be returned``);
- ``{"len_ne": [a, b]}``, ``{"pair_eq": [a, b]}``: list arguments of different lengths, or a
  pair that is equal (``Error: The new item id should be different from the old item id``);
- ``{"not_subset": [arg, list, key]}``: ids in an argument that the entity's list lacks.

An error with no consistent condition stays in the replay table only. The learned form keeps the
recorded text verbatim: an agent trained on these environments sees what production says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simforge.synth.entities import is_key_name
from simforge.synth.expr import Unresolved, get_path


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
    if "not_in" in condition:
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
    except (Unresolved, TypeError, AttributeError):
        return False
    raise ValueError(f"unknown error condition {op!r}")


def _candidates(errs: list[ErrorObservation], ok: list[ErrorObservation]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"missing": "target"}, {"no_match": True}]
    refs = {r for o in errs for r in o.missing_refs}
    out.extend({"missing_ref": r} for r in sorted(refs))
    env = errs[0].env
    old = env.get("old")
    if isinstance(old, dict):
        states = []
        for name, value in old.items():
            if is_key_name(name) or not (isinstance(value, str | bool | int) or value is None):
                continue
            values = [o.env["old"].get(name) for o in ok if isinstance(o.env.get("old"), dict)]
            allowed = _unique(values)
            # a state field repeats its few values; a field unique per row (a date, a name) is
            # no precondition, however well it happens to separate a handful of calls
            if allowed and len(allowed) <= 8 and (len(allowed) < len(values) or len(values) <= 2):
                states.append((len(allowed), {"not_in": [["old", name], allowed]}))
        out.extend(c for _, c in sorted(states, key=lambda s: s[0]))
    args = env.get("args") or {}
    lists = [k for k, v in args.items() if isinstance(v, list)]
    for a in lists:
        for b in lists:
            if a < b:
                out.append({"len_ne": [a, b]})
            if a != b:
                out.append({"pair_eq": [a, b]})
        if isinstance(old, dict):
            for name, value in old.items():
                if isinstance(value, list) and value and isinstance(value[0], dict):
                    for key in value[0]:
                        out.append({"not_subset": [a, name, key]})
    return out


def _unique(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def learn_errors(observations: Sequence[ErrorObservation]) -> list[dict[str, Any]]:
    """``[{"when": condition, "message": text, "status": code}]`` in the order to check them."""
    ok = [o for o in observations if o.error is None]
    by_text = Counter(o.error for o in observations if o.error is not None)
    learned: list[dict[str, Any]] = []
    for text, _ in by_text.most_common():
        assert text is not None
        errs = [o for o in observations if o.error == text]
        for condition in _candidates(errs, ok):
            if all(holds(condition, o) for o in errs) and not any(holds(condition, o) for o in ok):
                learned.append(
                    {"when": condition, "message": text, "status": status_for(text, condition)}
                )
                break
    order = {"missing": 0, "no_match": 0, "missing_ref": 1, "len_ne": 2, "pair_eq": 3}
    learned.sort(key=lambda e: order.get(next(iter(e["when"])), 4))
    return learned
