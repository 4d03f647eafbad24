"""What the trainer adapters share: the scenarios they play, an environment per rollout, the
tasks a seed picks, tool answers as text, and an episode's outcome as a trainer wants it.

``scenario`` may be anything :func:`simforge.env.gym.open_scenario` takes (a registered id, a
scenario YAML path, a :class:`~simforge.tools.pack.Pack` or ``PackRef`` served as a sandbox, a
``LoadedScenario``) or a list of them: one pool whose tasks are named ``scenario#task``, as
``simforge.make([...])`` names them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from simforge.env.core import SimforgeEnv, Split, sample_task
from simforge.env.gym import open_scenario
from simforge.env.pool import SEPARATOR
from simforge.errors import UsageError
from simforge.scenario.registry import LoadedScenario
from simforge.users.base import User

UserSpec = str | Callable[[], User] | None
"""A user spec (``scripted``, ``llm:MODEL``; default ``$SIMFORGE_USER``) or a factory of
users: every rollout gets a user of its own (a user keeps the state of its conversation)."""

MESSAGE_TOOL = "message_user"
"""The tool that says something to the user and returns the reply, where a trainer's loop has
no other way to hear one (the name MCP uses; ``simforge_message_user`` when a pack has a tool
of that name)."""
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"content": {"type": "string", "description": "What you say to the user."}},
    "required": ["content"],
    "additionalProperties": False,
}
MESSAGE_DESCRIPTION = (
    "Send a message to the user you are helping and get their reply. When the reply says the "
    "conversation ended, your message was your final answer."
)


def message_tool_name(tools: Iterable[str]) -> str:
    return MESSAGE_TOOL if MESSAGE_TOOL not in set(tools) else f"simforge_{MESSAGE_TOOL}"


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def result_text(result: dict[str, Any]) -> str:
    """A call's answer as the model reads it: the result's JSON, or ``{"error": ...}``."""
    if result.get("ok"):
        return dump(result.get("result"))
    return dump({"error": result.get("error")})


@dataclass(frozen=True)
class Outcome:
    """How an episode ended, for a trainer: ``reward`` is simforge's (0 for an invalid episode,
    whose ``invalid_reason`` says why; it is never the agent's fault), ``score`` the scorer's
    summary (verdicts with evidence: for the trainer, never for the agent's prompt)."""

    reward: float
    passed: bool
    invalid: bool
    invalid_reason: str | None
    failed: list[str]
    truncation_reason: str | None
    score: dict[str, Any]

    @classmethod
    def of(cls, env: SimforgeEnv) -> Outcome:
        result = env.score()
        session = env.session
        return cls(
            reward=float(result.reward) if result.reward is not None else 0.0,
            passed=bool(result.passed),
            invalid=result.reward is None,
            invalid_reason=result.invalid_reason,
            failed=list(result.failed),
            truncation_reason=None if session is None else session.truncation_reason,
            score=result.summary(),
        )

    def metrics(self) -> dict[str, Any]:
        return {
            "reward": self.reward, "passed": self.passed, "invalid": self.invalid,
            "invalid_reason": self.invalid_reason, "failed": self.failed,
            "truncation_reason": self.truncation_reason,
        }


class Episodes:
    """The tasks of one scenario or a pool, and a new environment per rollout."""

    def __init__(
        self,
        scenario: Any,
        *,
        split: Split | None = None,
        faults: str | None = None,
        user: UserSpec = None,
        task: str | None = None,
    ) -> None:
        refs = list(scenario) if isinstance(scenario, list | tuple) else [scenario]
        if not refs:
            raise UsageError("a trainer environment needs at least one scenario")
        self.loaded: dict[str, LoadedScenario] = {}
        for ref in refs:
            loaded = open_scenario(ref)
            if loaded.scenario.id in self.loaded:
                raise UsageError(f"scenario {loaded.scenario.id!r} is given twice")
            self.loaded[loaded.scenario.id] = loaded
        self.pooled = len(self.loaded) > 1
        self.split = split
        self.faults = faults
        self.user = user
        self._tasks: dict[str, list[str]] = {}
        for sid in self.loaded:  # an env per scenario checks split, task and faults now
            probe = self.env(sid, task=task if not self.pooled else None)
            self._tasks[sid] = [task] if task is not None and not self.pooled else probe.tasks
        if task is not None and self.pooled:
            sid, name = self.resolve(task, 0)
            self._tasks = {sid: [name]}
        self.first_seed = next(iter(self.loaded.values())).scenario.seeds[0]

    @property
    def tasks(self) -> list[str]:
        """Every task a rollout may play: task ids, or ``scenario#task`` for a pool."""
        if not self.pooled:
            return list(next(iter(self._tasks.values())))
        return [f"{sid}{SEPARATOR}{t}" for sid, tasks in self._tasks.items() for t in tasks]

    def env(self, scenario_id: str | None = None, *, task: str | None = None) -> SimforgeEnv:
        sid = scenario_id or next(iter(self.loaded))
        user = self.user() if callable(self.user) else self.user
        return SimforgeEnv(
            self.loaded[sid], task=task, faults=self.faults, split=self.split, user=user
        )

    def resolve(self, task: str | None, seed: int, scenario: str | None = None) -> tuple[str, str]:
        """``(scenario id, task id)`` of a rollout: the task named (``scenario#task`` in a
        pool, or a task id with ``scenario``), else the one ``seed`` samples, as ``reset``
        without a task would."""
        if task is None:
            task = sample_task(self.tasks, seed)
        head, sep, rest = task.partition(SEPARATOR)
        if sep and head in self.loaded:
            return head, rest
        if scenario is not None:
            if scenario not in self.loaded:
                raise UsageError(f"scenario {scenario!r}: not one of {sorted(self.loaded)}")
            return scenario, task
        if not self.pooled:
            return next(iter(self.loaded)), task
        raise UsageError(
            f"task {task!r}: expected 'scenario#task' of this pool; "
            f"scenarios: {sorted(self.loaded)}"
        )

    def task_name(self, scenario_id: str, task_id: str) -> str:
        return f"{scenario_id}{SEPARATOR}{task_id}" if self.pooled else task_id

    def seeds(self, seeds: int | Iterable[int] | None) -> list[int]:
        """``None``: one block of seeds from the first scenario's first seed (every task once);
        an int ``n``: ``n`` seeds from there; else the seeds given."""
        if seeds is None:
            seeds = len(self.tasks)
        if isinstance(seeds, int):
            return list(range(self.first_seed, self.first_seed + seeds))
        return [int(s) for s in seeds]

    def offered(self) -> dict[str, dict[str, Any]]:
        """``{name: OpenAI tool}`` over every task a rollout may play (for trainers that fix
        one tool list for all rollouts). A name two scenarios give different tools is an
        error: such a pool needs one environment per scenario."""
        out: dict[str, dict[str, Any]] = {}
        for sid, tasks in self._tasks.items():
            loaded = self.loaded[sid]
            for task in tasks:
                for tool in loaded.tools(task).to_openai():
                    name = tool["function"]["name"]
                    if name in out and out[name] != tool:
                        raise UsageError(
                            f"tool {name!r} differs between the scenarios of this pool; give "
                            "each scenario an environment of its own"
                        )
                    out.setdefault(name, tool)
        return out


def last_text(completion: Any) -> str | None:
    """The text a completion ends with: a string completion itself, or the content of its
    last assistant message when that message calls no tool (``None`` when it does: the
    rollout was cut off before its calls ran)."""
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, Sequence):
        return None
    for message in reversed(completion):
        role = _get(message, "role")
        if role != "assistant":
            continue
        if _get(message, "tool_calls"):
            return None
        return content_text(_get(message, "content"))
    return None


def content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_get(p, "text") or "") for p in content if _get(p, "type") == "text")
    return str(content)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
