"""Scripted baselines: the oracle (the scenario's reference solution) and the no-op."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.errors import UsageError
from simforge.policies.base import PolicyBase
from simforge.scenario.model import Task

NOOP_ANSWER = "I could not complete the request."


class OraclePolicy(PolicyBase):
    """Plays the task's reference solution step by step, then its answer."""

    name: ClassVar[str] = "oracle"
    privileged: ClassVar[bool] = True

    def __init__(self) -> None:
        self._steps: list[dict[str, Any]] = []
        self._next = 0

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        if task is None:
            raise UsageError("the oracle policy needs the task (it is privileged)")
        if not task.oracle:
            raise UsageError(f"task {task.id!r} has no oracle solution")
        self._steps = oracle_actions(task)
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        if self._next >= len(self._steps):
            return {"final_answer": NOOP_ANSWER}
        self._next += 1
        return self._steps[self._next - 1]


def oracle_actions(task: Task) -> list[dict[str, Any]]:
    """A task's reference solution as environment actions, one per oracle step."""
    actions: list[dict[str, Any]] = []
    for step in task.oracle:
        action: dict[str, Any]
        if step.answer is not None:
            action = {"final_answer": step.answer}
        elif step.message is not None:
            action = {"message": step.message}
        else:
            calls = [{"name": c.tool, "arguments": dict(c.args)} for c in step.calls]
            action = {"tool_calls": calls}
        if step.think is not None:
            action["think"] = step.think
        actions.append(action)
    return actions


class NoopPolicy(PolicyBase):
    """Does nothing and says so: the floor every task must be far above."""

    name: ClassVar[str] = "noop"

    def act(self, observation: dict[str, Any]) -> Any:
        return {"final_answer": NOOP_ANSWER}
