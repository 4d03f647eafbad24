"""Scripted baselines for stress tests: replay, random, no-retry and retrying.

Each marks a point a real agent can be placed against. ``replay`` plays back what an agent did
in a source episode (a production trace or a stored simulated run); ``random`` issues seeded,
schema-valid calls (the floor: anything that merely calls tools scores about this); ``no-retry``
and ``retrying`` play the task's reference solution and differ only in how they meet an error,
so the gap between them *is* the value of retrying under a fault profile. They are privileged
(they read the oracle), like the oracle itself.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from simforge.errors import UsageError
from simforge.policies.base import PolicyBase
from simforge.policies.scripted import NOOP_ANSWER, oracle_actions
from simforge.scenario.model import Task
from simforge.trace.episode import Episode

REPLAY_SOURCE_ENV = "SIMFORGE_REPLAY_SOURCE"
TRANSIENT_STATUSES = frozenset({0, 408, 409, 425, 429, 500, 502, 503, 504})
"""Statuses worth retrying; 0 is a connection reset (no HTTP answer at all)."""
_ID_TOKEN = re.compile(r"\b[A-Z]{1,4}-\d{2,}\b")


def replay_actions(episode: Episode) -> list[dict[str, Any]]:
    """The agent's moves in ``episode`` as environment actions, in order.

    Assistant messages with calls become ``tool_calls`` (their text rides along as ``message``);
    the last assistant text without calls is the final answer, earlier ones are messages to the
    user. Calls the simulated *user* made (tau2 telecom) are not the agent's and are left out.
    """
    calls = {c.call_id: c for c in episode.tool_calls if c.requestor == "assistant"}
    texts = [i for i, m in enumerate(episode.messages)
             if m.role == "assistant" and not [c for c in m.tool_call_ids if c in calls]]
    last_text = texts[-1] if texts else None
    actions: list[dict[str, Any]] = []
    for i, message in enumerate(episode.messages):
        if message.role != "assistant":
            continue
        own = [calls[c] for c in message.tool_call_ids if c in calls]
        if own:
            action: dict[str, Any] = {"tool_calls": [
                {"name": c.tool,
                 "arguments": c.args if c.args is not None else (c.raw_args or "")}
                for c in own
            ]}
            if message.content:
                action["message"] = message.content
            actions.append(action)
        elif message.content is not None:
            key = "final_answer" if i == last_text else "message"
            actions.append({key: message.content})
    return actions


class ReplayPolicy(PolicyBase):
    """Plays back a source episode's actions. The source is a list of Episodes or a trace file
    of any ingestible format (``replay:PATH``, or ``$SIMFORGE_REPLAY_SOURCE``).

    Each task plays the source episode it came from: the one whose id is the task's
    ``metadata["episode_id"]`` (a task synthesized from traces), else those with the task's id
    (the same seed preferred when several match, as in a stored run exported ``native``). A
    source holding a single episode that names no task (a bare conversation) is played for every
    task. Anything else is an error naming the task, never another task's episode played
    silently.

    It is privileged only to read that link (the task's metadata); it never reads the oracle.
    """

    name: ClassVar[str] = "replay"
    privileged: ClassVar[bool] = True

    def __init__(self, source: str | os.PathLike[str] | Iterable[Episode] | None = None) -> None:
        if source is None:
            source = os.environ.get(REPLAY_SOURCE_ENV)
            if not source:
                raise UsageError(
                    f"the replay policy needs a source: 'replay:PATH' or ${REPLAY_SOURCE_ENV}"
                )
        if isinstance(source, str | os.PathLike):
            from simforge.trace import iter_episodes

            path = Path(source)
            if not path.exists():
                raise UsageError(f"replay source {str(path)!r} does not exist")
            self.episodes = list(iter_episodes(path))
        else:
            self.episodes = list(source)
        if not self.episodes:
            raise UsageError("the replay source holds no episodes")
        self._actions: list[dict[str, Any]] = []
        self._next = 0

    def pick(self, task_id: str | None, seed: int, *, episode_id: str | None = None) -> Episode:
        """The source episode to play for task ``task_id`` (synthesized from the source episode
        ``episode_id``, when known) at ``seed``; ``ValueError`` when the source has none."""
        if episode_id is not None:
            for episode in self.episodes:
                if episode.id == episode_id:
                    return episode
        same = [e for e in self.episodes if _task_id(e) == task_id]
        for episode in same:
            if episode.simulation is not None and episode.simulation.seed == seed:
                return episode
        if same:
            return same[0]
        if len(self.episodes) == 1 and _task_id(self.episodes[0]) is None:
            return self.episodes[0]
        named = sorted({str(_task_id(e)) for e in self.episodes})
        wanted = f"task {task_id!r}" + (f" (source episode {episode_id!r})" if episode_id else "")
        raise UsageError(
            f"no source episode for {wanted} to replay; the source's {len(self.episodes)} "
            f"episode(s) are for tasks {named[:10]}{' ...' if len(named) > 10 else ''}"
        )

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        task_id = (observation.get("task") or {}).get("id")
        source = task.metadata.get("episode_id") if task is not None else None
        picked = self.pick(task_id, seed, episode_id=str(source) if source is not None else None)
        self._actions = replay_actions(picked)
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        if self._next >= len(self._actions):
            return {"final_answer": NOOP_ANSWER}
        self._next += 1
        return self._actions[self._next - 1]


def _task_id(episode: Episode) -> str | None:
    if episode.simulation is not None:
        return episode.simulation.task
    return episode.task.id


class RandomPolicy(PolicyBase):
    """Seeded, schema-valid calls to random tools for a random number of steps, then gives up.
    Ids are drawn from id-like tokens the agent has seen (instruction and results), so some
    calls hit real entities, as a careless agent's would."""

    name: ClassVar[str] = "random"

    def __init__(self, max_steps: int = 5, max_parallel: int = 2) -> None:
        self.max_steps = max_steps
        self.max_parallel = max_parallel
        self._rng = random.Random(0)
        self._tools: list[dict[str, Any]] = []
        self._seen: list[str] = []
        self._left = 0

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        self._rng = random.Random(f"random-policy:{seed}")
        self._tools = [t["function"] for t in observation.get("tools", [])]
        self._seen = sorted(set(_ID_TOKEN.findall(str(observation.get("task", "")))))
        self._left = self._rng.randint(1, self.max_steps)

    def act(self, observation: dict[str, Any]) -> Any:
        for token in _ID_TOKEN.findall(str(observation.get("results", ""))):
            if token not in self._seen:
                self._seen.append(token)
        if self._left <= 0 or not self._tools:
            return {"final_answer": NOOP_ANSWER}
        self._left -= 1
        n = self._rng.randint(1, self.max_parallel)
        return {"tool_calls": [self._call(self._rng.choice(self._tools)) for _ in range(n)]}

    def _call(self, fn: dict[str, Any]) -> dict[str, Any]:
        params = fn.get("parameters") or {}
        props: dict[str, Any] = params.get("properties") or {}
        args = {
            name: self._value(name, props.get(name) or {}) for name in params.get("required", [])
        }
        return {"name": fn["name"], "arguments": args}

    def _value(self, name: str, schema: dict[str, Any]) -> Any:
        rng = self._rng
        if "enum" in schema:
            return rng.choice(schema["enum"])
        kinds = [schema.get("type")] + [o.get("type") for o in schema.get("anyOf", [])]
        if "integer" in kinds:
            return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 10)))
        if "number" in kinds:
            return round(rng.uniform(0, 200), 2)
        if "boolean" in kinds:
            return rng.random() < 0.5
        if "array" in kinds:
            return []
        if "object" in kinds:
            return {}
        if name.endswith("_id") and self._seen:
            return rng.choice(self._seen)
        return rng.choice(["test", "refund", "update", "hello", "urgent"])


class _PlanFollower(PolicyBase):
    """Plays the task's reference solution; subclasses decide what an error means."""

    privileged: ClassVar[bool] = True

    def __init__(self) -> None:
        self._steps: list[dict[str, Any]] = []
        self._next = 0
        self._pending: dict[str, Any] | None = None
        self._rng = random.Random(0)

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        if task is None or not task.oracle:
            raise UsageError(f"the {self.name} policy needs a task with an oracle solution")
        self._steps = oracle_actions(task)
        self._next = 0
        self._pending = None
        self._rng = random.Random(f"{self.name}:{seed}")

    def _advance(self) -> Any:
        if self._next >= len(self._steps):
            return {"final_answer": NOOP_ANSWER}
        self._next += 1
        return self._steps[self._next - 1]


class NoRetryPolicy(_PlanFollower):
    """The reference solution, but the first tool error ends the episode with an apology: the
    behaviour of a harness with no error handling at all."""

    name: ClassVar[str] = "no-retry"

    def act(self, observation: dict[str, Any]) -> Any:
        if any(not r.get("ok", True) for r in observation.get("results") or []):
            self._next = len(self._steps)
            return {"final_answer": NOOP_ANSWER}
        return self._advance()


class RetryingPolicy(_PlanFollower):
    """The reference solution, retrying transient errors (5xx, 429, timeouts) with exponential
    backoff and full jitter, waiting at least ``retry_after`` when the server names it. Waiting is
    think time, so the backoff costs simulated seconds against the episode's budget, as it would
    cost wall-clock time in production."""

    name: ClassVar[str] = "retrying"

    def __init__(self, max_attempts: int = 5, base: float = 1.0, cap: float = 30.0) -> None:
        super().__init__()
        self.max_attempts = max_attempts
        self.base = base
        self.cap = cap
        self._attempt = 0
        self._last: dict[str, Any] | None = None

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        super().reset(observation, task=task, seed=seed)
        self._attempt = 0
        self._last = None
        self._pending_refresh: list[dict[str, Any]] = []
        self._tools = {(t.get("function") or t).get("name") for t in observation.get("tools", [])}

    def _refresh_tool(self, failed: list[dict[str, Any]]) -> str | None:
        """The tool an expired token's error tells the client to call, when it offers one."""
        for r in failed:
            error = r.get("error") or {}
            if error.get("code") != "token_expired":
                continue
            for name in sorted(self._tools, key=len, reverse=True):
                if name and name in str(error.get("message", "")):
                    return name
        return None

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        delay = self._rng.uniform(0, min(self.cap, self.base * 2 ** (attempt - 1)))
        return max(delay, retry_after or 0.0)

    def act(self, observation: dict[str, Any]) -> Any:
        results = observation.get("results") or []
        failed = [r for r in results if not r.get("ok", True)]
        refresh = self._refresh_tool(failed)
        if refresh is not None and self._last is not None and self._attempt < self.max_attempts:
            # an expired token: follow the refresh flow the error names, then retry
            self._attempt += 1
            expired = [r["name"] for r in failed
                       if (r.get("error") or {}).get("code") == "token_expired"]
            calls = [c for c in self._last["tool_calls"] if c["name"] in expired]
            self._last = {"tool_calls": calls}
            self._pending_refresh = calls
            return {"tool_calls": [{"name": refresh, "arguments": {}}]}
        if self._pending_refresh and results and all(r.get("ok") for r in results):
            calls, self._pending_refresh = self._pending_refresh, []
            self._last = {"tool_calls": calls}
            return {"tool_calls": calls}
        retry = [r for r in failed if _transient(r.get("error") or {})]
        if retry and self._last is not None and self._attempt < self.max_attempts:
            self._attempt += 1
            names = [r["name"] for r in retry]
            calls = _match_calls(self._last["tool_calls"], results, names)
            wait = max(
                self.backoff(self._attempt, (r.get("error") or {}).get("retry_after"))
                for r in retry
            )
            self._last = {"tool_calls": calls}
            return {"tool_calls": calls, "think": round(wait, 6)}
        self._attempt = 0
        action = self._advance()
        self._last = action if "tool_calls" in action else None
        return action


WIRE_CODES = frozenset({"malformed_body", "truncated_body", "garbage_body"})
"""Answers whose bytes were broken on the way (a retry of a read gets a whole one)."""


def _transient(error: dict[str, Any]) -> bool:
    return int(error.get("status") or 0) in TRANSIENT_STATUSES or error.get("code") in WIRE_CODES


def _match_calls(
    sent: list[dict[str, Any]], results: list[dict[str, Any]], failed_names: list[str]
) -> list[dict[str, Any]]:
    """The calls to send again: results come back in the order the calls were sent."""
    if len(sent) == len(results):
        return [
            call for call, r in zip(sent, results, strict=True)
            if not r.get("ok", True) and _transient(r.get("error") or {})
        ]
    return [c for c in sent if c["name"] in failed_names]
