"""The validator registry: built-ins and plugins register with ``@validator``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simforge.scoring.context import ScoringContext
from simforge.scoring.verdict import Category, Verdict

ValidatorFn = Callable[..., Verdict]


@dataclass(frozen=True)
class ValidatorDef:
    name: str
    category: Category
    fn: ValidatorFn
    description: str

    def __call__(self, ctx: ScoringContext, **params: Any) -> Verdict:
        return self.fn(ctx, **params)


VALIDATORS: dict[str, ValidatorDef] = {}


def validator(name: str, category: Category) -> Callable[[ValidatorFn], ValidatorFn]:
    """Register ``fn(ctx, **params) -> Verdict`` under ``name``; a second use of a name fails."""

    def register(fn: ValidatorFn) -> ValidatorFn:
        existing = VALIDATORS.get(name)
        if existing is not None and existing.fn is not fn:
            raise ValueError(
                f"validator {name!r} is already registered by {existing.fn.__module__}"
            )
        VALIDATORS[name] = ValidatorDef(name, category, fn, (fn.__doc__ or "").strip())
        return fn

    return register
