"""Policies: the oracle, the no-op, scripted baselines, the cheater, adversaries, an LLM agent.
Built from a spec (``NAME`` or ``NAME:ARGUMENT``) by :mod:`simforge.policies.specs`; the
external harness is the runs layer's (:mod:`simforge.runs.harness`, :mod:`simforge.runs.specs`).
"""

from __future__ import annotations

from simforge.policies.base import Policy
from simforge.policies.scripted import NOOP_ANSWER, NoopPolicy, OraclePolicy
from simforge.policies.specs import POLICIES, get_policy

__all__ = ["NOOP_ANSWER", "POLICIES", "NoopPolicy", "OraclePolicy", "Policy", "get_policy"]
