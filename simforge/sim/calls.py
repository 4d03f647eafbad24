"""One tool call as a simpy process: capacity, then latency, then the handler.

:class:`CallPipeline` is the hot path of training, so it allocates one :class:`CallOutcome` and
one process per call and nothing else when no fault, capacity limit or timeout applies. The fault
layer extends it by overriding the hooks ``plan`` and ``apply``; a fault is a wrapper around a
handler, the way a transport wraps a transport in httpx.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError, ToolNotFound
from simforge.tools.tool import Tool
from simforge.trace.episode import InjectedFault

if TYPE_CHECKING:
    from simforge.sim.session import Session


class CallOutcome:
    """What one call did; the recorder turns it into an Episode ``ToolCall``."""

    __slots__ = (
        "args",
        "call_id",
        "call_index",
        "ended_at",
        "error",
        "faults",
        "process",
        "result",
        "started_at",
        "tool",
    )

    def __init__(self, tool: str, args: Any, call_id: str, call_index: int, now: float) -> None:
        self.tool = tool
        self.args = args
        self.call_id = call_id
        self.call_index = call_index
        self.started_at = now
        self.ended_at: float | None = None
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.faults: list[InjectedFault] = []
        self.process: simpy.Process | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.ended_at is not None

    def fail(self, error: ToolError, now: float) -> None:
        self.error = error.to_dict()
        self.ended_at = now

    def cancel(self, reason: str, now: float) -> None:
        self.error = {"status": 499, "code": "cancelled", "message": reason}
        self.ended_at = now

    def observation(self) -> dict[str, Any]:
        """The agent's view of this call."""
        if self.error is not None:
            return {"call_id": self.call_id, "name": self.tool, "ok": False, "error": self.error}
        return {"call_id": self.call_id, "name": self.tool, "ok": True, "result": self.result}


class CallPipeline:
    """Starts calls for a session and runs each through capacity, latency and handler."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.counts: dict[str, int] = {}
        self._ids: set[str] = set()

    def start(self, tool_name: str, args: Any, call_id: str | None) -> CallOutcome:
        session = self.session
        index = self.counts.get(tool_name, 0)
        self.counts[tool_name] = index + 1
        outcome = CallOutcome(tool_name, args, self._unique_id(call_id), index, session.env.now)
        tool = session.tools.get(tool_name)
        if tool is None:
            outcome.fail(ToolNotFound(tool_name, list(session.tools)), session.env.now)
            return outcome
        outcome.process = session.env.process(self._run(tool, outcome))
        return outcome

    def _unique_id(self, call_id: str | None) -> str:
        if call_id is None or call_id in self._ids:
            base = call_id or "call"
            n = len(self._ids) + 1
            call_id = f"{base}_{n}"
            while call_id in self._ids:
                n += 1
                call_id = f"{base}_{n}"
        self._ids.add(call_id)
        return call_id

    # -- the process ----------------------------------------------------------------------------

    def _run(self, tool: Tool, out: CallOutcome) -> Generator[simpy.Event, Any, None]:
        session = self.session
        env = session.env
        spec = tool.spec
        timeout = session.call_timeout
        deadline = None if timeout is None else out.started_at + timeout
        resource = session.resources.get(spec.name)
        request = None
        if resource is not None:
            request = resource.request()
            if deadline is not None and not request.triggered:
                yield request | env.timeout(deadline - env.now)
                if not request.triggered:
                    request.cancel()
                    out.fail(_timeout_error(spec.name, timeout), env.now)
                    return
            else:
                yield request
        try:
            latency = spec.latency.sample(session.streams("latency", spec.name))
            natural = self._natural_error(tool, out)
            if deadline is not None and env.now + latency > deadline:
                yield env.timeout(deadline - env.now)
                out.fail(_timeout_error(spec.name, timeout), env.now)
                env.process(
                    self._finish_late(tool, out, out.started_at + latency, natural, request)
                )
                request = None
                return
            yield env.timeout(latency)
            self._complete(tool, out, natural)
        finally:
            if request is not None and resource is not None:
                resource.release(request)

    def _finish_late(
        self,
        tool: Tool,
        out: CallOutcome,
        at: float,
        natural: ToolError | None,
        request: Any,
    ) -> Generator[simpy.Event, Any, None]:
        """The server keeps working after the client gave up: the effect lands, unseen."""
        env = self.session.env
        try:
            if at > env.now:
                yield env.timeout(at - env.now)
            if natural is None:
                self._execute(tool, out, record=False)
        finally:
            if request is not None:
                self.session.resources[tool.name].release(request)

    def _natural_error(self, tool: Tool, out: CallOutcome) -> ToolError | None:
        model = tool.spec.errors
        if model.rate <= 0:
            return None
        rng = self.session.streams("errors", tool.name)
        if rng.random() >= model.rate:
            return None
        out.faults.append(
            InjectedFault(
                kind="error_status",
                tool=tool.name,
                call_id=out.call_id,
                call_index=out.call_index,
                sim_time=self.session.env.now,
                rule="error_model",
                params={"status": model.status},
            )
        )
        return ToolError(model.status, "unavailable", model.message)

    def _complete(self, tool: Tool, out: CallOutcome, natural: ToolError | None) -> None:
        now = self.session.env.now
        if natural is not None:
            out.fail(natural, now)
            return
        self._execute(tool, out, record=True)

    def _execute(self, tool: Tool, out: CallOutcome, *, record: bool) -> None:
        session = self.session
        now = session.env.now
        ctx = ToolContext(
            session.world,
            now,
            session.streams("handler", tool.name),
            tool=tool.name,
            call_id=out.call_id,
            call_index=out.call_index,
        )
        try:
            result = tool.invoke(ctx, out.args)
        except ToolError as exc:
            if record:
                out.fail(exc, now)
            return
        except Exception as exc:  # an uninjected infrastructure failure, never the agent's
            session.mark_invalid(f"{tool.name}: handler raised {type(exc).__name__}: {exc}")
            if record:
                out.fail(ToolError(500, "internal_error", "internal server error"), now)
            return
        if record:
            out.result = result
            out.ended_at = now


def _timeout_error(tool: str, timeout: float | None) -> ToolError:
    return ToolError(504, "timeout", f"{tool} did not answer within {timeout:g} s")
