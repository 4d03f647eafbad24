"""Side effects on a record that a write names but does not return: a payment charged to a
gift card debits the card's balance on the user.

Observation: the walk of an episode remembers, for each write, the rows its id arguments name
(a ``payment_id`` names a payment method inside a user row). When a later read returns such a
row before anything else wrote it, the difference is that write's doing, and the pair
``(row before, row after)`` is recorded on the write's observation.

Learning: per id argument, the changed fields of the named record (the sub-record for an id of a
sub-record) are learned like an update's fields, with ``target`` the record before and ``new``
the row the write produced, so ``amount = target.amount - new.payment_history[-1].amount`` is an
ordinary expression. A record for which the expression does not apply (a credit card has no
balance) is left alone. Only what reads after writes show is learned: nothing is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from simforge.synth.expr.language import same
from simforge.synth.learn.write_effects import learn_fields, reproduces
from simforge.synth.runtime.side_effects import Row, target_of


class _Observed(Protocol):
    args: dict[str, Any]
    env: dict[str, Any]
    new: Row | None
    side: list[tuple[str, Row, Row]]


def learn_side_effects(
    calls: Sequence[_Observed], refs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``[{"arg", "entity", "sub", "changes"}]`` for each id argument whose records were seen
    changing after the call."""
    rules: list[dict[str, Any]] = []
    for arg, spec in refs.items():
        sub = spec.get("sub")
        pairs: list[tuple[Row, dict[str, Any]]] = []
        for c in calls:
            for name, before, after in c.side:
                if name != arg:
                    continue
                old = target_of(before, sub, c.args.get(arg))
                new = target_of(after, sub, c.args.get(arg))
                if old is not None and new is not None:
                    pairs.append((new, {**c.env, "new": c.new, "target": old}))
        fields = [
            k
            for k in dict.fromkeys(k for new, env in pairs for k in [*env["target"], *new])
            if any(not same(env["target"].get(k), new.get(k)) for new, env in pairs)
            # a field the record never had a value for, shown by a later view (a usage view
            # joining a limit), is the view's, not the write's doing
            and any(env["target"].get(k) is not None for _, env in pairs)
        ]
        if not fields:
            continue
        changes = learn_fields(pairs, fields, base=lambda name: {"p": ["target", name]}, scope=None)
        if changes and any(reproduces(changes, env, new, None) for new, env in pairs):
            rules.append({"arg": arg, "entity": spec["entity"], "sub": sub, "changes": changes})
    return rules


