"""Scripted baselines: the oracle (the scenario's reference solution) and the no-op."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.scenario.model import Task

NOOP_ANSWER = "I could not complete the request."


class OraclePolicy:
    """Plays the task's reference solution step by step, then its answer."""

    name: ClassVar[str] = "oracle"
    privileged: ClassVar[bool] = True

    def __init__(self) -> None:
        self._steps: list[Any] = []
        self._next = 0

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        if task is None:
            raise ValueError("the oracle policy needs the task (it is privileged)")
        if not task.oracle:
            raise ValueError(f"task {task.id!r} has no oracle solution")
        self._steps = list(task.oracle)
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        if self._next >= len(self._steps):
            return {"final_answer": NOOP_ANSWER}
        step = self._steps[self._next]
        self._next += 1
        if step.answer is not None:
            return {"final_answer": step.answer, "think": step.think}
        if step.message is not None:
            return {"message": step.message, "think": step.think}
        return {
            "tool_calls": [{"name": c.tool, "arguments": dict(c.args)} for c in step.calls],
            "think": step.think,
        }


class NoopPolicy:
    """Does nothing and says so: the floor every task must be far above."""

    name: ClassVar[str] = "noop"
    privileged: ClassVar[bool] = False

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        return None

    def act(self, observation: dict[str, Any]) -> Any:
        return {"final_answer": NOOP_ANSWER}


TRANSIENT_STATUSES = frozenset({0, 429, 500, 502, 503, 504})


class RetryingOraclePolicy(OraclePolicy):
    """The reference solution played by a careful client: a call that failed transiently (a
    reset, 429, 5xx, a timeout) is issued again after ``retry_after`` or an exponential backoff,
    up to ``max_retries`` times, before the next step. The audit uses it to check that a task is
    still solvable under the fault profiles its scenario declares."""

    name: ClassVar[str] = "oracle-retrying"

    def __init__(self, max_retries: int = 4, backoff: float = 1.0) -> None:
        super().__init__()
        self.max_retries = max_retries
        self.backoff = backoff
        self._last: list[dict[str, Any]] = []
        self._attempt = 0

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        super().reset(observation, task=task, seed=seed)
        self._last = []
        self._attempt = 0

    def act(self, observation: dict[str, Any]) -> Any:
        failed = [
            call
            for call, result in zip(self._last, observation.get("results", []), strict=False)
            if not result.get("ok") and result.get("error", {}).get("status") in TRANSIENT_STATUSES
        ]
        if failed and self._attempt < self.max_retries:
            self._attempt += 1
            waits = [
                r["error"].get("retry_after") or 0.0
                for r in observation["results"]
                if not r.get("ok") and r.get("error", {}).get("retry_after")
            ]
            wait = max([self.backoff * 2 ** (self._attempt - 1), *waits])
            self._last = failed
            return {"tool_calls": failed, "think": wait}
        self._attempt = 0
        action = super().act(observation)
        self._last = list(action.get("tool_calls", []))
        return action
