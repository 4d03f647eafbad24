"""Policies: whatever acts in an episode. ``reset`` sees the first observation; ``act`` maps an
observation to an action. Scripted baselines that need ground truth (the oracle) say so with
``privileged = True`` and are handed the task by the runner; nothing else ever sees it.

Policies that wait on I/O (an LLM endpoint, an external harness) also offer ``async def
aact(observation)``; :func:`act_async` calls it when present and falls back to ``act``, so a
plain synchronous policy never has to implement it (``aact`` is deliberately not a member of the
runtime-checked protocol, which would reject every synchronous policy). :class:`PolicyBase`
gives subclasses that default.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Protocol, runtime_checkable

from simforge.errors import PolicyUnavailable as PolicyUnavailable  # re-exported
from simforge.scenario.model import Task


@runtime_checkable
class Policy(Protocol):
    name: ClassVar[str]
    privileged: ClassVar[bool]

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None: ...

    def act(self, observation: dict[str, Any]) -> Any: ...


class PolicyBase:
    """Optional base class: the default ``aact`` runs ``act``; ``close`` releases nothing."""

    name: ClassVar[str] = "policy"
    privileged: ClassVar[bool] = False

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        return None

    def act(self, observation: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def aact(self, observation: dict[str, Any]) -> Any:
        return self.act(observation)

    def close(self) -> None:
        return None


async def act_async(policy: Policy, observation: dict[str, Any]) -> Any:
    """The policy's action, awaiting ``aact`` when the policy has a coroutine one."""
    aact = getattr(policy, "aact", None)
    if aact is not None and inspect.iscoroutinefunction(aact):
        return await aact(observation)
    return policy.act(observation)
