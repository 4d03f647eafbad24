"""World invariants: predicates the final world must satisfy whatever path the agent took
("no order both refunded and shipped", "the ledger matches the refunds").

A declarative rule is ``{name, entity, where, require}``: every row of ``entity`` matching the
``where`` predicates satisfies the ``require`` predicates (:mod:`simforge.predicates`). By
default only rows the episode changed are checked (``scope: changed``): the seed data is not
the agent's doing, and scanning ten thousand rows per episode would cost more than the whole
episode.
A rule may instead name a ``check`` that a ``validators/`` plugin registered with
``@invariant``, for predicates across entities.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from simforge.predicates import Predicates
from simforge.scoring.context import ScoringContext
from simforge.scoring.registry import plugins_of, validator
from simforge.scoring.verdict import Verdict


class InvariantRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    entity: str | None = None
    where: dict[str, Any] = Field(default_factory=dict)
    require: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["changed", "all"] = "changed"
    check: str | None = None

    @model_validator(mode="after")
    def _one_kind(self, info: ValidationInfo) -> InvariantRule:
        if self.check is not None:
            if self.entity is not None or self.require:
                raise ValueError("a rule has either `check` or `entity`/`require`, not both")
            known = plugins_of(info).invariants
            if self.check not in known:
                raise ValueError(
                    f"unknown invariant {self.check!r}; registered: {sorted(known)}"
                )
        elif self.entity is None or not self.require:
            raise ValueError("a rule needs `check`, or `entity` and `require`")
        return self

    @property
    def label(self) -> str:
        return self.name or self.check or f"{self.entity}: {self.require}"


class InvariantParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[InvariantRule] = Field(min_length=1)


@validator("invariants", "correctness", params=InvariantParams)
def invariants(ctx: ScoringContext, rules: list[InvariantRule]) -> Verdict:
    """Every rule holds on the final world. Evidence: ``violations`` naming the rule and the row
    (or what the named check reported)."""
    violations: list[dict[str, Any]] = []
    changed: dict[str, set[str]] | None = None
    for rule in rules:
        if rule.check is not None:
            check = ctx.plugins.invariants[rule.check]
            violations.extend({"rule": rule.label, **v} for v in check(ctx))
            continue
        assert rule.entity is not None
        where = Predicates(rule.where)
        require = Predicates(rule.require)
        if rule.scope == "changed":
            if changed is None:
                changed = _changed_ids(ctx)
            rows = [
                r
                for i in sorted(changed.get(rule.entity, ()))
                if (r := ctx.world.get(rule.entity, i)) is not None
            ]
        else:
            rows = list(ctx.world.rows(rule.entity))
        pk = ctx.world.schemas[rule.entity].primary_key
        for row in rows:
            if where.matches(row) and not require.matches(row):
                violations.append(
                    {
                        "rule": rule.label,
                        "entity": rule.entity,
                        "id": row.get(pk),
                        "found": {k: row.get(k) for k in rule.require},
                    }
                )
    return Verdict.of("invariants", "correctness", not violations, violations=violations)


def _changed_ids(ctx: ScoringContext) -> dict[str, set[str]]:
    sim = ctx.trajectory.simulation
    out: dict[str, set[str]] = {}
    for change in sim.world_diff if sim else []:
        out.setdefault(change.entity, set()).add(change.id)
    return out
