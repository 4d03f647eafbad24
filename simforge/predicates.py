"""The argument-predicate language shared by fault targets and scoring.

A predicate set maps a field name to a test: a constant (equality) or a mapping of operators to
operands, all of which must hold (``{amount: {gt: 100, le: 500}}``, ``{order_id: O-1001}``,
``{note: {exists: false}}``). A mapping whose keys are not all operators is compared for
equality as a whole. An operator that cannot compare its operands (``"a" > 3``) does not hold.

Fault rules (:class:`simforge.faults.rules.Target`) match a call's arguments with it, and the
scorer matches calls (safety, policy, correctness) and world rows (invariants) with it, so a
scenario writes one language for both. It lives here, below both, so neither layer imports the
other for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "gt": lambda a, b: a is not None and a > b,
    "ge": lambda a, b: a is not None and a >= b,
    "lt": lambda a, b: a is not None and a < b,
    "le": lambda a, b: a is not None and a <= b,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
    "exists": lambda a, b: (a is not None) == bool(b),
    "contains": lambda a, b: (isinstance(a, str) and str(b) in a)
    or (isinstance(a, list | tuple) and b in a),
}


def holds(value: Any, test: Any) -> bool:
    """Whether ``value`` passes ``test`` (a constant, or a mapping of operators)."""
    if isinstance(test, dict) and test and set(test) <= set(OPS):
        try:
            return all(OPS[op](value, arg) for op, arg in test.items())
        except TypeError:
            return False
    return bool(value == test)


def matches(args: Any, tests: Mapping[str, Any]) -> bool:
    """Whether every field test holds on ``args``; no tests match anything, and a non-mapping
    matches only no tests. A missing field is ``None``."""
    if not tests:
        return True
    if not isinstance(args, Mapping):
        return False
    return all(holds(args.get(name), test) for name, test in tests.items())


class Predicates:
    """A predicate set, bound once: ``Predicates({"amount": {"gt": 5}}).matches(args)``."""

    __slots__ = ("tests",)

    def __init__(self, tests: Mapping[str, Any]) -> None:
        self.tests = dict(tests)

    def __bool__(self) -> bool:
        return bool(self.tests)

    def matches(self, args: Any) -> bool:
        return matches(args, self.tests)
