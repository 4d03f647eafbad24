"""Calls that are not the lean case: a fault decision, a full tool, a deadline the latency passes.

Each runs as the simpy process it replaces would run, without the process: every ``yield`` of
that process is a callback of one :class:`StagedCall` on the same event, created at the same
moment and priority, so the order of draws on a tool's streams and of ties in simulated time is
the process's. What goes is the generator, the ``Process`` object and simpy's resumption around
each step. ``tests/sim/test_staged.py`` keeps the process as the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import Initialize

from simforge.tools.errors import ToolError
from simforge.tools.tool import Tool

if TYPE_CHECKING:
    from simforge.faults.effects import CallFaults
    from simforge.sim.calls import CallOutcome, CallPipeline, Capacity

REJECT_LATENCY = 0.005
"""Seconds a gateway takes to refuse a call (rate limit, outage): much less than a real call."""


def start_urgently(env: simpy.Environment, call: StagedCall) -> None:
    """Schedule ``call._resume`` as simpy schedules a new process's first step: an event that is
    already triggered, at URGENT priority, due now (``Initialize``). A staged call starts
    exactly where its process would have, so that the order of draws on a tool's streams and of
    events at equal simulated times is unchanged.

    This is the one place that leans on more than simpy's documented behaviour: ``Initialize``
    is a public class of ``simpy.events``, but documented as used by ``Process`` only, and what
    it calls is ``process._resume``, so the staged call names its first stage ``_resume``. simpy
    offers no other way to trigger an event at URGENT priority without setting an event's
    private ``_ok`` and ``_value`` by hand. ``tests/sim/test_staged.py`` checks this behaviour
    directly (it fails if ``Initialize`` stops calling ``_resume``, or stops being urgent)."""
    Initialize(env, call)  # type: ignore[arg-type]


class StagedCall:
    """A call that is not the lean case, run as the process it replaces would run, without the
    process: each ``yield`` of that process becomes a callback on the same event, created at the
    same moment (a start at URGENT priority where the process's ``Initialize`` was, the slot's
    request, the latency's timeout), and its end a ``done`` event triggered where the process's
    own end was. The order of events, and so of draws and of ties in simulated time, is the
    process's; what it saves is the generator, the ``Process`` object and simpy's resumption
    machinery around each ``yield``.

    A free slot is taken with :meth:`Capacity.hold` (as in the lean path): the continuation is
    then a zero timeout, scheduled where the granted ``Request`` would have been, and the slot is
    given back with :meth:`Capacity.free`, where the ``Release`` would have been."""

    __slots__ = (
        "deadline",
        "done",
        "drawn",
        "fx",
        "latency",
        "natural",
        "out",
        "pipeline",
        "request",
        "resource",
        "timeout",
        "tool",
    )

    def __init__(
        self,
        pipeline: CallPipeline,
        tool: Tool,
        out: CallOutcome,
        fx: CallFaults | None,
        drawn: tuple[float, ToolError | None] | None,
    ) -> None:
        self.pipeline = pipeline
        self.tool = tool
        self.out = out
        self.fx = fx
        self.drawn = drawn
        """The latency and natural error :meth:`CallPipeline._launch` drew before it handed
        the call over (its latency passes the deadline)."""
        self.resource: Capacity | None = None
        self.request: simpy.resources.resource.Request | None = None
        self.natural: ToolError | None = None
        self.latency = 0.0
        self.timeout: float | None = None
        self.deadline: float | None = None
        env = pipeline.session.env
        self.done = out.process = simpy.Event(env)
        start_urgently(env, self)

    def _after(self, delay: float, stage: Callable[[Any], None]) -> None:
        self.pipeline.session.env.timeout(delay).callbacks.append(stage)

    def _resume(self, _: object) -> None:
        """The start (the name is what ``Initialize`` calls: :func:`start_urgently`)."""
        pipeline = self.pipeline
        session = pipeline.session
        env = session.env
        fx = self.fx
        if fx is not None and fx.reject is not None:
            # a refusal at the gateway: no slot, no handler
            self._after(REJECT_LATENCY, self._rejected)
            return
        timeout = session.call_timeout
        if fx is not None and fx.hang is not None and timeout is None:
            timeout = fx.hang.after
        self.timeout = timeout
        deadline = self.deadline = None if timeout is None else self.out.started_at + timeout
        spec = self.tool.spec
        resource = self.resource = pipeline._resource(spec.name, spec.capacity)
        if resource is None:
            self._granted(None)
            return
        if resource.has_room():
            # ``request()`` would take the slot now and go on where its event is processed
            resource.hold(self.out)
            self._after(0, self._granted)
            return
        request = self.request = resource.request()
        if deadline is not None and not request.triggered:
            wait = request | env.timeout(deadline - env.now)
            wait.callbacks.append(self._waited)
        else:
            request.callbacks.append(self._granted)

    def _waited(self, _: object) -> None:
        request = self.request
        assert request is not None
        if not request.triggered:
            request.cancel()
            self.request = self.resource = None
            self.pipeline._answer(
                self.out, self.fx, timeout_error(self.tool.spec.name, self.timeout)
            )
            self._end()
            return
        self._granted(None)

    def _granted(self, _: object) -> None:
        pipeline = self.pipeline
        session = pipeline.session
        env = session.env
        tool = self.tool
        spec = tool.spec
        fx = self.fx
        try:
            if self.drawn is not None:
                latency, natural = self.drawn
            else:
                latency = spec.latency.sample(session.streams("latency", spec.name))
                natural = pipeline._natural_error(tool, self.out)
            self.natural = natural
            deadline = self.deadline
            if fx is not None:
                latency = fx.latency(latency)
                if fx.hang is not None and deadline is not None:
                    self._after(max(0.0, deadline - env.now), self._hung)
                    return
                if fx.reset is not None:
                    self._after(latency, self._reset)
                    return
            if deadline is not None and env.now + latency > deadline:
                self.latency = latency
                self._after(deadline - env.now, self._late)
                return
            self._after(latency, self._answered)
        except BaseException:
            self._release()  # as the process's ``finally`` would
            raise

    def _answered(self, _: object) -> None:
        pipeline = self.pipeline
        out = self.out
        try:
            if self.natural is not None:
                pipeline._answer(out, self.fx, self.natural)
            else:
                pipeline._execute(self.tool, out, self.fx, record=True)
        finally:
            self._release()
        transfer = self._transfer()
        if transfer > 0:
            # the server is done (its slot is free); the bytes are still on their way
            out.ended_at = pipeline.session.env.now + transfer
            self._after(transfer, lambda _: self._end())
            return
        self._end()

    def _transfer(self) -> float:
        """Seconds a slow body (:class:`~simforge.faults.wire.SlowBody`) takes to arrive."""
        fx = self.fx
        wire = fx.wire if fx is not None else None
        if wire is None or not hasattr(wire, "transfer") or self.out.error is not None:
            return 0.0
        from simforge.faults.wire import encode

        return float(wire.transfer(len(encode(self.out.result))))

    def _hung(self, _: object) -> None:
        fx = self.fx
        assert fx is not None and fx.hang is not None
        self._dropped(fx.hang.effect, timeout_error(self.tool.spec.name, self.timeout))

    def _reset(self, _: object) -> None:
        fx = self.fx
        assert fx is not None and fx.reset is not None
        self._dropped(fx.reset.effect, ToolError(0, "connection_reset", "connection reset by peer"))

    def _dropped(self, effect: str, error: ToolError) -> None:
        """The client gets ``error`` instead of an answer (a hang, a reset); the server did the
        work all the same when ``effect`` is ``applied``."""
        pipeline = self.pipeline
        try:
            if effect == "applied" and self.natural is None:
                pipeline._execute(self.tool, self.out, self.fx, record=False)
            pipeline._answer(self.out, self.fx, error)
        finally:
            self._release()
        self._end()

    def _late(self, _: object) -> None:
        """The client gives up at the deadline; the server finishes later, unseen, and only
        then gives the slot back."""
        pipeline = self.pipeline
        out = self.out
        try:
            pipeline._answer(out, self.fx, timeout_error(self.tool.spec.name, self.timeout))
        except BaseException:
            self._release()  # as the process's ``finally`` would
            raise
        release = self._release if self.resource is not None else None
        pipeline.session.env.process(
            pipeline._finish_late(
                self.tool, out, out.started_at + self.latency, self.natural, release
            )
        )
        self._end()

    def _rejected(self, _: object) -> None:
        fx = self.fx
        assert fx is not None and fx.reject is not None
        self.pipeline._answer(self.out, fx, fx.reject)
        self._end()

    def _release(self) -> None:
        resource = self.resource
        if resource is None:
            return
        self.resource = None
        if self.request is not None:
            resource.release(self.request)
        else:
            resource.free(self.out)

    def _end(self) -> None:
        """The call is over: ``done`` is triggered where the process would have ended."""
        self.out.process = None
        self.done.succeed()


def timeout_error(tool: str, timeout: float | None) -> ToolError:
    return ToolError(504, "timeout", f"{tool} did not answer within {timeout or 0:g} s")
