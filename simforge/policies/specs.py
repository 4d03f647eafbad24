"""Policy specs: ``NAME`` or ``NAME:ARGUMENT``, one string that a worker process or a Ray task
can rebuild the policy from (a policy object itself need not be picklable).

The argument is the one thing each configurable policy needs: ``replay:PATH`` (the source
trajectories), ``llm:MODEL`` (the rest comes from ``SIMFORGE_LLM_*``), ``harness:COMMAND`` (the
program to start per episode, built by the runs layer: :mod:`simforge.runs.specs`),
``adversary:NAME`` (one of :data:`simforge.policies.adversaries.ADVERSARIES`). Anything else is
a name in :data:`POLICIES`.

The tables are plain dicts a caller can extend and hand to :func:`build_policy` (the runs layer
adds the external harness, which needs the serving stack this layer must not import).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from simforge.config import NotFound
from simforge.errors import UsageError
from simforge.policies.base import Policy
from simforge.policies.scripted import NoopPolicy, OraclePolicy


def _replay(arg: str) -> Policy:
    from simforge.policies.baselines import ReplayPolicy

    return ReplayPolicy(arg)


def _llm(arg: str) -> Policy:
    from simforge.policies.llm import LLMPolicy

    return LLMPolicy(arg)


def _adversary(arg: str) -> Policy:
    from simforge.policies.adversaries import build_adversary

    return build_adversary(arg)


WITH_ARGUMENT: dict[str, Callable[[str], Policy]] = {
    "replay": _replay,
    "llm": _llm,
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
}
"""The policies with a module of their own, imported when first built."""

POLICIES: dict[str, Callable[[], Policy]] = {
    "oracle": OraclePolicy,
    "noop": NoopPolicy,
    **BASELINES,
    "cheater": _lazy("simforge.policies.cheater", "CheaterPolicy"),
}
"""Every policy built from its name alone."""


def get_policy(name: str, policies: Mapping[str, Callable[[], Policy]] | None = None) -> Policy:
    """The policy ``name`` in ``policies`` (default :data:`POLICIES`); ``NotFound`` says which
    there are."""
    table = POLICIES if policies is None else policies
    try:
        factory = table[name]
    except KeyError:
        raise NotFound(f"unknown policy {name!r}; available: {sorted(table)}") from None
    return factory()


def build_policy(
    spec: str,
    *,
    policies: Mapping[str, Callable[[], Policy]] | None = None,
    with_argument: Mapping[str, Callable[[str], Policy]] | None = None,
) -> Policy:
    """The policy a spec names, from ``policies`` and ``with_argument`` (default: this layer's
    :data:`POLICIES` and :data:`WITH_ARGUMENT`); ``UsageError``/``NotFound`` with the reason
    when it cannot be."""
    name, sep, arg = spec.partition(":")
    if not sep:
        return get_policy(name, policies)
    if with_argument is None:
        with_argument = WITH_ARGUMENT
    if name not in with_argument:
        raise NotFound(
            f"policy {name!r} takes no argument; policies with one: {sorted(with_argument)}"
        )
    if not arg:
        raise UsageError(f"policy spec {spec!r}: the argument after ':' is empty")
    return with_argument[name](arg)
