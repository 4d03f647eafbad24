"""Scoring: validators, verdicts and the rubric that turns them into a reward."""

from simforge.scoring import correctness as _correctness  # noqa: F401  (registers built-ins)
from simforge.scoring.context import ScoringContext
from simforge.scoring.registry import VALIDATORS, ValidatorDef, validator
from simforge.scoring.rubric import Rubric, Score, combine, default_validators, score
from simforge.scoring.verdict import Category, Verdict

__all__ = [
    "VALIDATORS",
    "Category",
    "Rubric",
    "Score",
    "ScoringContext",
    "ValidatorDef",
    "Verdict",
    "combine",
    "default_validators",
    "score",
    "validator",
]
