"""What a write handler makes and what it models, beyond its row's effects.

``learn_creates``: records a write makes besides changing its row (a cancelled order's credit
note, a ledger entry for a credit) are learned like a created row's fields, with the written row
visible as ``new``. ``modelled_fields``: which fields of which entity a handler sets, so that a
task's expected state asks only for what the environment can produce (:mod:`.episode_tasks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simforge.synth.expr.language import same
from simforge.synth.learn.observations import CallObservation
from simforge.synth.learn.write_effects import MAX_SAMPLES, learn_fields

Row = dict[str, Any]


def learn_creates(good: Sequence[CallObservation], pks: Mapping[str, str]) -> list[dict[str, Any]]:
    """``[{"entity", "pk", "fields"}]`` for the records the calls made besides their row."""
    made: dict[str, list[tuple[Row, dict[str, Any]]]] = {}
    for c in good:
        for entity, record in c.made:
            made.setdefault(entity, []).append((record, {**c.env, "new": c.new}))
    out = []
    for entity, samples in made.items():
        keys: list[str] = []
        for record, _ in samples:
            keys.extend(k for k in record if k not in keys)
        fields = learn_fields(samples[:MAX_SAMPLES], keys, scope=None)
        out.append({"entity": entity, "pk": pks[entity], "fields": fields})
    return out


def modelled_fields(
    desc: Mapping[str, Any], good: Sequence[CallObservation]
) -> dict[str, set[str]]:
    """Per entity, the fields a write handler sets (the row's effects, the records it creates,
    its side effects), less those set to a constant that some observed call contradicts: a
    value nothing explained, taken from one call (a sender's address, a creation time), is a
    guess, not a model of the field."""
    out: dict[str, set[str]] = {}

    def check(entity: str, exprs: Mapping[str, Any], samples: list[tuple[Row, Any]]) -> None:
        fields = out.setdefault(entity, set())
        for name, expr in exprs.items():
            if not ("c" in expr and any(not same(new.get(name), expr["c"]) for new, _ in samples)):
                fields.add(name)

    if desc["kind"] == "update":
        pairs = [(c.new, c.env) for c in good if c.new is not None and c.env.get("old")]
        check(desc["entity"], desc.get("effects") or {}, pairs)
        for made in desc.get("creates") or []:
            samples = [
                (record, {**c.env, "new": c.new})
                for c in good
                for entity, record in c.made
                if entity == made["entity"]
            ]
            check(made["entity"], made["fields"], samples)
    elif desc["kind"] == "create":
        made_ = [(c.new, {**c.env, "old": None}) for c in good if c.created and c.new]
        check(desc["entity"], desc.get("fields") or {}, made_)
    for rule in desc.get("side") or []:
        out.setdefault(rule["entity"], set()).update(rule["changes"])
    return out
