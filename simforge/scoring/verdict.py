"""Verdicts: what one validator concluded about one finished episode."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["correctness", "safety", "robustness", "efficiency", "integrity"]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    category: Category
    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    evidence: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, name: str, category: Category, passed: bool, **evidence: Any) -> Verdict:
        return cls(
            name=name,
            category=category,
            passed=passed,
            score=1.0 if passed else 0.0,
            evidence=evidence,
        )
