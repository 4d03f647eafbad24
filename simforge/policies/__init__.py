"""Policies: scripted baselines (and, later, LLM agents and external harnesses)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from simforge.config import NotFound
from simforge.policies.base import Policy
from simforge.policies.scripted import NOOP_ANSWER, NoopPolicy, OraclePolicy
from simforge.policies.specs import BASELINES

POLICIES: dict[str, Callable[[], Policy]] = {
    "oracle": OraclePolicy,
    "noop": NoopPolicy,
    **BASELINES,
    "cheater": lambda: import_module("simforge.policies.cheater").CheaterPolicy(),
}


def get_policy(name: str) -> Policy:
    try:
        factory = POLICIES[name]
    except KeyError:
        raise NotFound(f"unknown policy {name!r}; available: {sorted(POLICIES)}") from None
    return factory()


__all__ = ["NOOP_ANSWER", "POLICIES", "NoopPolicy", "OraclePolicy", "Policy", "get_policy"]
