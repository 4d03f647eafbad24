"""The simplest rule consistent with training, before a deep tree.

A decision tree grown on a few dozen episodes splits on whatever separates them, and on a
combination it never saw it answers whatever its deepest branch happened to hold. Where a value
appears when *any one* of several conditions holds (a phone has no signal when airplane mode is
on, or the SIM is missing, or it is locked), the disjunction of those single conditions is
consistent with every example and says the right thing about a combination of three conditions
learned from examples of at most one or two.

:func:`decision_list` learns an ordered list of rules ``if l1 or l2 or ... then value``:

- **Elimination** (the classic algorithm for monotone disjunctions): for a value, the literals
  true on no example of another value are the only ones a consistent disjunction may use.
- **Occam**: of those, a greedy set cover keeps the fewest that cover every example of the
  value, and of the values whose examples can be covered the rule with the fewest literals comes
  first (ties: the rarer value, so that the common one is the default); its examples are removed
  and the rest learned the same way, until one value is left (the default) or none can be
  covered, where :func:`~simforge.synth.learn.text_state.grow` (a tree) takes over.
- **Tiers**: the literal pools are tried in order (the values of other fields before the raw
  history), so a rule speaks of the state where the state explains the data.

The result is a tree in the same plain JSON as a grown one (``{"f": literal, "t": ..., "e":
...}`` / ``{"v": value}``): a rule of three literals is three nodes whose ``t`` is the value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

Row = tuple[set[str], Any]


def _k(value: Any) -> str:
    return repr(value)


def _cover(
    positives: Sequence[set[str]], pool: set[str], rank: Callable[[str], Any], limit: int
) -> list[str] | None:
    """The fewest literals of ``pool`` (greedy set cover) such that every positive has one;
    ``None`` when the pool cannot cover them in ``limit`` literals. ``rank``: the tie-break
    between literals covering as many (smaller first)."""
    left = list(range(len(positives)))
    chosen: list[str] = []
    while left:
        counts: Counter[str] = Counter()
        for i in left:
            counts.update(lit for lit in pool if holds(lit, positives[i]))
        if not counts or len(chosen) >= limit:
            return None
        best = min(counts, key=lambda lit: (-counts[lit], rank(lit), lit))
        chosen.append(best)
        left = [i for i in left if not holds(best, positives[i])]
    return chosen


NOT = "!"
"""A negated literal: ``!f`` holds where feature ``f`` does not."""


def holds(literal: str, features: set[str]) -> bool:
    if literal.startswith(NOT):
        return literal[1:] not in features
    return literal in features


def _pure(
    positives: Sequence[set[str]],
    negatives: Sequence[set[str]],
    allowed: Callable[[str], bool],
) -> set[str]:
    """Elimination: the literals (features and their negations) true on some positive and on
    no negative."""
    seen: set[str] = set()
    for f in positives:
        seen |= f
    against: set[str] = set()
    for f in negatives:
        against |= f
    everywhere = set.intersection(*map(set, negatives)) if negatives else set()
    pool = {lit for lit in seen if lit not in against and allowed(lit)}
    # ``!f`` is pure where every negative has f; it holds on the positives without it
    pool |= {
        NOT + lit for lit in everywhere if allowed(lit) and any(lit not in f for f in positives)
    }
    return pool


def decision_list(
    rows: Sequence[Row],
    tiers: Sequence[Callable[[str], bool]],
    fallback: Callable[[list[Row]], dict[str, Any]],
    rank: Callable[[str], Any] = lambda lit: 0,
    support: int = 2,
) -> dict[str, Any]:
    """Rules ``(literals, value)`` learned from ``rows`` as above, as a tree. Where no value's
    examples can all be covered, a rule of one pure literal covering at least ``support`` of
    them (the most) is taken and the rest learned after it."""
    remaining = list(rows)
    rules: list[tuple[list[str], Any]] = []
    tail: dict[str, Any]

    def order(lit: str) -> Any:
        return (rank(lit.lstrip(NOT)), lit.startswith(NOT), lit)

    while True:
        counts = Counter(_k(v) for _, v in remaining)
        if len(counts) <= 1:
            tail = {"v": remaining[0][1] if remaining else None}
            break
        values = {_k(v): v for _, v in remaining}
        found: tuple[Any, list[str], str] | None = None
        partial: tuple[Any, list[str], str] | None = None
        for allowed in tiers:
            for key in sorted(counts):
                positives = [f for f, v in remaining if _k(v) == key]
                negatives = [f for f, v in remaining if _k(v) != key]
                pool = _pure(positives, negatives, allowed)
                # a rule must say less than its examples: no literal per example
                chosen = _cover(positives, pool, order, max(1, len(positives) // 2))
                if chosen is not None:
                    score: tuple[Any, ...] = (
                        len(chosen),
                        len(positives),
                        sorted(map(order, chosen)),
                        key,
                    )
                    if found is None or score < found[0]:
                        found = (score, chosen, key)
                    continue
                for lit in pool:
                    n = sum(holds(lit, f) for f in positives)
                    if n >= support:
                        rest: tuple[Any, ...] = (-n, order(lit), key)
                        if partial is None or rest < partial[0]:
                            partial = (rest, [lit], key)
            if found is not None:
                break
        found = found or partial
        if found is None:
            tail = fallback(remaining)
            break
        _, chosen, key = found
        rules.append((chosen, values[key]))
        remaining = [(f, v) for f, v in remaining if not any(holds(c, f) for c in chosen)]
    node = tail
    for literals, value in reversed(rules):
        for lit in reversed(literals):
            if lit.startswith(NOT):
                node = {"f": lit[1:], "t": node, "e": {"v": value}}
            else:
                node = {"f": lit, "t": {"v": value}, "e": node}
    return node


def size(tree: dict[str, Any]) -> int:
    """Internal nodes: how many tests the tree makes."""
    if "v" in tree:
        return 0
    return 1 + size(tree["t"]) + size(tree["e"])
