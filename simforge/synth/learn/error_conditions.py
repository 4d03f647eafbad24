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
- ``{"not_subset": [arg, list, key]}``: ids in an argument that the entity's list lacks;
- ``{"any_not_in": [path, key, allowed]}``: a record of a list (the variants an argument names)
  whose field holds a value outside ``allowed`` (see :mod:`.preconditions`, which also learns
  ``not_in`` and ``ne`` conditions from what every success shares);
- ``{"ne"|"lt"|"gt": [a, b]}``: two expressions compare so, where the recorded text carries
  numbers that the expressions compute (``Error: Payment amount does not add up, total price is
  375, but paid 299``: ``total`` is the sum of the fares the call would store times the
  passengers, ``paid`` the sum of the payment arguments). Such a text is kept as a template
  (``total price is {0}, but paid {1}``) with the expressions that fill it (``format``).

An error with no consistent condition stays in the replay table only. The learned form keeps the
recorded text verbatim (or its template): an agent trained on these environments sees what
production says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from simforge.synth.entities.catalog import is_key_name
from simforge.synth.expr.language import Explainer, Unresolved, evaluate, same
from simforge.synth.runtime.error_rules import ErrorObservation, holds, status_for

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)")
"""A number standing alone in a message (not a digit of an id such as ``gift_card_7``)."""


def template(text: str) -> tuple[str, list[float]]:
    """The text with its numbers replaced by ``{0}``, ``{1}``..., and the numbers."""
    numbers: list[float] = []
    parts: list[str] = []
    last = 0
    for match in _NUMBER.finditer(text):
        parts.append(text[last : match.start()].replace("{", "{{").replace("}", "}}"))
        parts.append("{" + str(len(numbers)) + "}")
        numbers.append(float(match.group()))
        last = match.end()
    parts.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(parts), numbers


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
    learned: list[dict[str, Any]] = []
    # texts that differ only in their numbers are one error whose numbers are computed: learned
    # as one rule first, rather than one coincidental condition per text
    groups: dict[str, list[ErrorObservation]] = {}
    for o in observations:
        if o.error is not None:
            groups.setdefault(template(o.error)[0], []).append(o)
    explained: set[str] = set()
    for form, errs in groups.items():
        if len({o.error for o in errs}) > 1:
            rule = _computed(form, errs, ok)
            if rule is not None:
                learned.append(rule)
                explained.update(o.error or "" for o in errs)
    by_text = Counter(o.error for o in observations if o.error not in (None, *explained))
    for text, _ in by_text.most_common():
        assert text is not None
        errs = [o for o in observations if o.error == text]
        for condition in _candidates(errs, ok):
            if all(holds(condition, o) for o in errs) and not any(holds(condition, o) for o in ok):
                learned.append(
                    {"when": condition, "message": text, "status": status_for(text, condition)}
                )
                explained.add(text)
                break
    for form, errs in groups.items():
        errs = [o for o in errs if o.error not in explained]
        rule = _computed(form, errs, ok) if errs else None
        if rule is not None:
            learned.append(rule)
    order = {"missing": 0, "no_match": 0, "missing_ref": 1, "len_ne": 2, "pair_eq": 3}
    learned.sort(key=lambda e: order.get(next(iter(e["when"])), 4))
    return learned


def _computed(
    form: str, errs: list[ErrorObservation], ok: list[ErrorObservation]
) -> dict[str, Any] | None:
    """A comparison of two computed values that separates these errors from the successes,
    the values being the numbers of the text (each explained in every erring call)."""
    numbers = [template(o.error or "")[1] for o in errs]
    slots: list[list[dict[str, Any]]] = []
    explainers = [Explainer(o.env) for o in errs[:4]]  # a count of 1 hides a multiplication
    for i in range(len(numbers[0])):
        proposed = [e for x, n in zip(explainers, numbers, strict=False) for e in x.scalar(n[i])]
        fits = [
            e
            for e in proposed
            if "c" not in e
            and all(_value_is(e, o.env, n[i]) for o, n in zip(errs, numbers, strict=True))
        ]
        if not fits:
            return None
        slots.append(_distinct(fits)[:16])
    # every slot must be filled; the condition compares two of them, the successes telling
    # apart expressions that agree on the errors (a count of passengers or of flights)
    for a in range(len(slots)):
        for b in range(a + 1, len(slots)):
            for ea in slots[a]:
                for eb in slots[b]:
                    for op in ("ne", "lt", "gt"):
                        condition = {op: [ea, eb]}
                        if all(holds(condition, o) for o in errs) and not any(
                            holds(condition, o) for o in ok
                        ):
                            fill = [
                                ea if i == a else eb if i == b else s[0]
                                for i, s in enumerate(slots)
                            ]
                            return {
                                "when": condition,
                                "message": form,
                                "format": fill,
                                "status": 422,
                            }
    return None


def _distinct(exprs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for e in exprs:
        if repr(e) not in seen:
            seen.add(repr(e))
            out.append(e)
    return out


def _value_is(expr: dict[str, Any], env: dict[str, Any], want: float) -> bool:
    try:
        return same(float(evaluate(expr, env)), want)
    except (Unresolved, TypeError, ValueError, KeyError):
        return False
