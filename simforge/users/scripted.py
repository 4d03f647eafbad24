"""The scripted user: the task's ``user_turns``, one per message of the agent, in order."""

from __future__ import annotations

from simforge.scenario.model import Task
from simforge.users.base import Turn, UserReply


class ScriptedUser:
    """Replies with the next scripted turn; after the last one, ends the conversation. It does
    not read what the agent said: an agent that asks something the script did not foresee gets
    the next turn all the same (what the LLM user is for)."""

    name = "scripted"
    spec = "scripted"

    def __init__(self) -> None:
        self._turns: list[str] = []
        self._next = 0

    def reset(self, task: Task, *, seed: int, scenario: str) -> None:
        self._turns = list(task.user_turns)
        self._next = 0

    def reply(self, dialogue: list[Turn]) -> UserReply:
        if self._next >= len(self._turns):
            return UserReply(None, ended=True)
        self._next += 1
        return UserReply(self._turns[self._next - 1])
