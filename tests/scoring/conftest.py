"""A small builder of trajectories for validator tests: calls, messages, faults and writes on the
mini pack's world, turned into a ScoringContext exactly as the environment would build one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simforge.scenario import load_pack
from simforge.scenario.model import Task
from simforge.scoring import ScoringContext
from simforge.sim.recorder import entity_change
from simforge.trace.episode import (
    Episode,
    InjectedFault,
    Message,
    SimulationRecord,
    Source,
    ToolCall,
)

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "packs" / "mini"


class Trace:
    """Build one episode step by step; ``ctx()`` freezes it into a ScoringContext."""

    def __init__(self) -> None:
        self.pack = load_pack(str(MINI))
        self.world = self.pack.world(0, 1)
        self.calls: list[ToolCall] = []
        self.messages: list[Message] = [Message(role="user", content="Please help.")]
        self.faults: list[InjectedFault] = []
        self.now = 0.0
        self._written = 0.0  # the world's clock only moves forward, whatever calls' times do

    def say(self, role: str, content: str) -> Trace:
        self.messages.append(Message(role=role, content=content, timestamp=self.now))  # type: ignore[arg-type]
        return self

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
        duration: float = 1.0,
        at: float | None = None,
    ) -> ToolCall:
        start = self.now if at is None else at
        self.messages.append(
            Message(role="assistant", tool_call_ids=[f"c{len(self.calls)}"], timestamp=start)
        )
        call = ToolCall(
            call_id=f"c{len(self.calls)}",
            tool=tool,
            args=args or {},
            result=result if error is None else None,
            error=None if error is None else error.get("message", "error"),
            started_at=start,
            ended_at=start + duration,
            message_index=len(self.messages) - 1,
            metadata={} if error is None else {"error": error},
        )
        self.calls.append(call)
        self.now = start + duration
        return call

    def fault(self, kind: str, call: ToolCall, **params: Any) -> Trace:
        self.faults.append(
            InjectedFault(
                kind=kind,
                tool=call.tool,
                call_id=call.call_id,
                call_index=0,
                sim_time=call.started_at or 0.0,
                params=params,
            )
        )
        return self

    def write(self, entity: str, id: str, **changes: Any) -> Trace:
        self._written = max(self._written, self.now)
        self.world.update(entity, id, changes, now=self._written)
        return self

    def ctx(
        self,
        answer: str | None = "",
        *,
        task: Task | None = None,
        budgets: dict[str, Any] | None = None,
        steps: int | None = None,
        truncated: bool = False,
        invalid: str | None = None,
        tools: bool = True,
    ) -> ScoringContext:
        episode = Episode(
            id="test",
            source=Source(format="simforge"),
            messages=self.messages,
            tool_calls=self.calls,
            simulation=SimulationRecord(
                scenario="test/unregistered-v1",
                task="t",
                seed=0,
                steps=steps if steps is not None else len(self.calls) + 1,
                sim_time=self.now,
                terminated=not truncated,
                truncated=truncated,
                final_answer=answer,
                faults=self.faults,
                world_diff=[entity_change(c) for c in self.world.diff()],
                invalid_reason=invalid,
            ),
        )
        return ScoringContext(
            episode,
            self.world,
            task or Task(id="t", instruction="Help customer C-0003."),
            tools=self.pack.catalog if tools else None,
            budgets=budgets,
        )


@pytest.fixture
def trace() -> Trace:
    return Trace()
