"""Scoring: validators, verdicts and the rubric that turns them into a reward.

Importing this package registers the built-in validators; domain validators come from plugins
(``load_validator_plugins``). See ``docs/validators.md`` for every validator and its settings.
"""

from simforge.scoring import correctness as _correctness  # noqa: F401  (registers built-ins)
from simforge.scoring import efficiency as _efficiency  # noqa: F401
from simforge.scoring import integrity as _integrity  # noqa: F401
from simforge.scoring import invariants as _invariants  # noqa: F401
from simforge.scoring import policy as _policy  # noqa: F401
from simforge.scoring import robustness as _robustness  # noqa: F401
from simforge.scoring import safety as _safety  # noqa: F401
from simforge.scoring.context import ScoringContext
from simforge.scoring.metrics import pass_hat_k
from simforge.scoring.plugins import load_validator_plugins
from simforge.scoring.registry import (
    INVARIANTS,
    POLICY_CHECKS,
    VALIDATORS,
    ValidatorDef,
    ValidatorParamsError,
    invariant,
    policy_check,
    validator,
)
from simforge.scoring.rubric import Rubric, Score, combine, default_validators, resolve, score
from simforge.scoring.verdict import Category, Verdict

__all__ = [
    "INVARIANTS",
    "POLICY_CHECKS",
    "VALIDATORS",
    "Category",
    "Rubric",
    "Score",
    "ScoringContext",
    "ValidatorDef",
    "ValidatorParamsError",
    "Verdict",
    "combine",
    "default_validators",
    "invariant",
    "load_validator_plugins",
    "pass_hat_k",
    "policy_check",
    "resolve",
    "score",
    "validator",
]
