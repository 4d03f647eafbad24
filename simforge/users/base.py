"""What every simulated user is: ``reset`` per episode, ``reply`` per message of the agent.

A reply either carries the user's next message, or ends the conversation (``ended``), possibly
with a last message. A user that cannot answer (its endpoint is down, its model's reply is not
a reply) raises :class:`SimulatedUserError`: the episode is then invalid, never a failure of
the agent.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from simforge.errors import InfrastructureError
from simforge.scenario.model import Task


class SimulatedUserError(InfrastructureError, RuntimeError):
    """The user simulator failed; the episode is invalid (infrastructure, not the agent)."""


@dataclass(frozen=True)
class Turn:
    """One message of the dialogue: ``user`` (the simulated user) or ``agent``."""

    speaker: Literal["user", "agent"]
    text: str


@dataclass
class UserReply:
    """The user's answer to a message. ``text`` is what the user says (``None``: nothing more);
    ``ended`` closes the conversation, after which the agent's message just answered is its
    final answer. ``metadata`` goes into the trajectory beside the user's message (token usage
    of an LLM user); it must not depend on wall time, so that reruns stay byte-identical."""

    text: str | None
    ended: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class User(Protocol):
    name: str

    def reset(self, task: Task, *, seed: int, scenario: str) -> None: ...

    def reply(self, dialogue: list[Turn]) -> UserReply: ...


async def reply_async(user: User, dialogue: list[Turn]) -> UserReply:
    """The user's reply, awaiting ``areply`` when the user has a coroutine one (an LLM user
    inside a server's event loop must not block it)."""
    areply = getattr(user, "areply", None)
    if areply is not None and inspect.iscoroutinefunction(areply):
        reply: UserReply = await areply(dialogue)
        return reply
    return user.reply(dialogue)
