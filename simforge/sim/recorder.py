"""The recorder: cheap appends during the episode, one Episode (a Trajectory) at the end.

Nothing is validated or copied per call; the pydantic models are built once, when somebody asks
for the trajectory, so recording costs the hot path a list append. The events are kept as small
as they can be, since a served session keeps thousands of them alive: a turn is one tuple
(``("user", text, at)``, ``("assistant", text, calls, at)`` where ``calls`` is the one call of a
single-call turn or the list of them), and a tool result is the call itself.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from simforge.jsonio import dumps
from simforge.trace.episode import (
    EntityChange,
    Episode,
    FieldChange,
    InjectedFault,
    Message,
    Outcome,
    SimulationRecord,
    Source,
    TaskSpec,
    ToolCall,
    trusted,
)

if TYPE_CHECKING:
    from simforge.sim.calls import CallOutcome
    from simforge.sim.session import Session
    from simforge.world.store import Change


class Recorder:
    """``limit`` keeps only the most recent calls and turns: for long-lived sandbox sessions
    (a harness under load sends a server's default session calls without end), where a full
    record would grow without bound. Scored episodes keep everything."""

    __slots__ = ("calls", "events")

    def __init__(self, limit: int | None = None) -> None:
        self.calls: deque[CallOutcome] = deque(maxlen=limit)
        self.events: deque[tuple[Any, ...] | CallOutcome] = deque(
            maxlen=None if limit is None else 3 * limit
        )

    def user_turn(self, text: str, now: float, metadata: dict[str, Any] | None = None) -> None:
        self.events.append(("user", text, now) if not metadata else ("user", text, now, metadata))

    def assistant_turn(
        self,
        text: str | None,
        outcomes: list[CallOutcome],
        now: float,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.calls.extend(outcomes)
        # a single call is kept as itself: the step's list can then die young
        calls = outcomes[0] if len(outcomes) == 1 else outcomes
        if metadata:
            self.events.append(("assistant", text, calls, now, metadata))
        else:
            self.events.append(("assistant", text, calls, now))

    def tool_result(self, outcome: CallOutcome) -> None:
        self.events.append(outcome)

    def final_answer(self, text: str, now: float, metadata: dict[str, Any] | None = None) -> None:
        if metadata:
            self.events.append(("assistant", text, _NO_CALLS, now, metadata))
        else:
            self.events.append(("assistant", text, _NO_CALLS, now))

    def trajectory(
        self,
        session: Session,
        *,
        episode_id: str,
        scenario: str,
        task: TaskSpec,
        policy: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Episode:
        messages: list[Message] = []
        issued_by: dict[str, int] = {}
        add = messages.append
        if task.instruction:
            add(_message({"role": "user", "content": task.instruction, "timestamp": 0.0}))
        for event in self.events:
            if not isinstance(event, tuple):  # a tool result: the call itself
                add(_tool_message(event))
            elif event[0] == "user":
                data = {"role": "user", "content": event[1], "timestamp": event[2]}
                if len(event) > 3:
                    data["metadata"] = event[3]
                add(_message(data))
            else:
                _, text, calls, at = event[:4]
                outcomes = calls if isinstance(calls, list | tuple) else (calls,)
                for o in outcomes:
                    issued_by[o.call_id] = len(messages)
                data = {"role": "assistant", "content": text,
                        "tool_call_ids": [o.call_id for o in outcomes], "timestamp": at}
                if len(event) > 4:
                    data["metadata"] = event[4]
                add(_message(data))
        calls = [_tool_call(o, issued_by.get(o.call_id)) for o in self.calls]
        faults = [f for o in self.calls for f in o.faults]
        if session.surface is not None:  # the episode's tool surface, changed at its start
            faults += [
                InjectedFault(kind=r["kind"], tool=", ".join(r["tools"]) or "*", call_index=0,
                              sim_time=0.0, rule=r["rule"], params=r["params"])
                for r in session.surface.fired
            ]
        faults.sort(key=lambda f: (f.sim_time, f.tool, f.call_index))
        return Episode(
            id=episode_id,
            source=Source(format="simforge", record=episode_id),
            task=task,
            messages=messages,
            tool_calls=calls,
            outcome=Outcome(),
            metadata=metadata or {},
            simulation=SimulationRecord(
                scenario=scenario,
                task=task.id or "",
                seed=session.seed,
                policy=policy,
                steps=session.steps,
                sim_time=session.now,
                terminated=session.terminated,
                truncated=session.truncated,
                truncation_reason=session.truncation_reason,
                final_answer=session.final_answer,
                fault_profile=session.fault_profile,
                faults=faults,
                world_diff=[entity_change(c) for c in session.world.diff()],
                world_events=list(session.world_events),
                invalid_reason=session.invalid_reason,
            ),
        )


_NO_CALLS: tuple[CallOutcome, ...] = ()


# The messages and calls of a trajectory are built field by field from values the session made
# or checked (texts the Action model validated, results of handlers, the clock), so they are
# built without a second validation (``trusted``): a 1,000-call episode's record is 3,000
# models, which validation alone would spend about 10 ms on at the episode's last step.
_message = trusted(Message)
_call = trusted(ToolCall)


def _tool_message(outcome: CallOutcome) -> Message:
    error = outcome.error
    body = outcome.result if error is None else error
    return _message({
        "role": "tool",
        "content": dumps(body, default=repr).decode(),
        "call_id": outcome.call_id,
        "timestamp": outcome.ended_at,
    })


def _tool_call(o: CallOutcome, message_index: int | None) -> ToolCall:
    args = o.args
    if type(args) is not dict or not all(type(k) is str for k in args):
        args = None
    data: dict[str, Any] = {
        "call_id": o.call_id,
        "tool": o.tool,
        "args": args,
        "result": o.result,
        "started_at": o.started_at,
        "ended_at": o.ended_at,
        "message_index": message_index,
    }
    if args is None:
        data["raw_args"] = repr(o.args)
    metadata: dict[str, Any] = {}
    if o.error is not None:
        data["error"] = str(o.error.get("message", o.error))
        metadata["error"] = o.error
    if o.called_as is not None:
        metadata["called_as"] = {"name": o.called_as[0], "arguments": o.called_as[1]}
    data["metadata"] = metadata
    return _call(data)


def entity_change(change: Change) -> EntityChange:
    return EntityChange(
        entity=change.entity,
        id=change.id,
        op=change.op,
        fields={k: FieldChange(old=a, new=b) for k, (a, b) in change.fields.items()},
        before=change.before,
        after=change.after,
    )
