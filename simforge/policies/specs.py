"""Policy specs: ``NAME`` or ``NAME:ARGUMENT``, one string that a worker process or a Ray task
can rebuild the policy from (a policy object itself need not be picklable).

The argument is the one thing each configurable policy needs: ``replay:PATH`` (the source
trajectories), ``llm:MODEL`` (the rest comes from ``SIMFORGE_LLM_*``), ``harness:COMMAND`` (the
program to start per episode), ``adversary:NAME`` (one of
:data:`simforge.policies.adversaries.ADVERSARIES`). Anything else is a name in
:data:`simforge.policies.POLICIES`.
"""

from __future__ import annotations

from collections.abc import Callable

from simforge.config import NotFound
from simforge.errors import UsageError
from simforge.policies.base import Policy


def _replay(arg: str) -> Policy:
    from simforge.policies.baselines import ReplayPolicy

    return ReplayPolicy(arg)


def _llm(arg: str) -> Policy:
    from simforge.policies.llm import LLMPolicy

    return LLMPolicy(arg)


def _harness(arg: str) -> Policy:
    from simforge.policies.harness import HarnessPolicy

    return HarnessPolicy(arg)


def _adversary(arg: str) -> Policy:
    from simforge.policies.adversaries import build_adversary

    return build_adversary(arg)


WITH_ARGUMENT: dict[str, Callable[[str], Policy]] = {
    "replay": _replay,
    "llm": _llm,
    "harness": _harness,
    "adversary": _adversary,
}


def _lazy(module: str, cls: str) -> Callable[[], Policy]:
    """A factory that imports its policy on first use (httpx, subprocess plumbing)."""

    def factory() -> Policy:
        import importlib

        made: Policy = getattr(importlib.import_module(module), cls)()
        return made

    factory.__name__ = cls
    return factory


BASELINES: dict[str, Callable[[], Policy]] = {
    "replay": _lazy("simforge.policies.baselines", "ReplayPolicy"),
    "random": _lazy("simforge.policies.baselines", "RandomPolicy"),
    "no-retry": _lazy("simforge.policies.baselines", "NoRetryPolicy"),
    "retrying": _lazy("simforge.policies.baselines", "RetryingPolicy"),
    "llm": _lazy("simforge.policies.llm", "LLMPolicy"),
    "harness": _lazy("simforge.policies.harness", "HarnessPolicy"),
}
"""The policies of the runs layer, merged into :data:`simforge.policies.POLICIES`."""


def build_policy(spec: str) -> Policy:
    """The policy a spec names; ``ValueError``/``NotFound`` with the reason when it cannot be."""
    from simforge.policies import get_policy

    name, sep, arg = spec.partition(":")
    if not sep:
        return get_policy(name)
    if name not in WITH_ARGUMENT:
        raise NotFound(
            f"policy {name!r} takes no argument; policies with one: {sorted(WITH_ARGUMENT)}"
        )
    if not arg:
        raise UsageError(f"policy spec {spec!r}: the argument after ':' is empty")
    return WITH_ARGUMENT[name](arg)
