"""One tool call in simulated time: capacity, then latency, then the handler.

:class:`CallPipeline` is the hot path of training: with no fault plan, capacity limit or timeout
a call is one :class:`CallOutcome` and one timeout whose callback runs the handler. Every other
call (a fault decision, a full tool, a deadline that the latency passes) is a
:class:`~simforge.sim.staged.StagedCall` (see that module). A fault plan (``session.plan``) is
consulted once per call; what fired comes back as a
:class:`~simforge.faults.effects.CallFaults` that the staged call applies at each stage: reject
before running, change the latency, hang to the deadline or drop the connection, change how the
handler's reads and writes land, rewrite the result. A fault wraps the handler, the way a
transport wraps a transport in httpx.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import simpy

from simforge.faults.kinds import Where
from simforge.faults.wire import encode
from simforge.sim.staged import StagedCall
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError, ToolNotFound
from simforge.tools.tool import Tool
from simforge.trace.episode import InjectedFault

if TYPE_CHECKING:
    from simforge.faults.effects import CallFaults
    from simforge.sim.session import Session

NO_FAULTS: tuple[InjectedFault, ...] = ()

class CallOutcome:
    """What one call did; the recorder turns it into an Episode ``ToolCall``."""

    __slots__ = (
        "args",
        "call_id",
        "call_index",
        "called_as",
        "ended_at",
        "error",
        "faults",
        "process",
        "result",
        "started_at",
        "tool",
        "wire",
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
        self.faults: Sequence[InjectedFault] = NO_FAULTS
        """What fired on this call (a list; the shared empty tuple when nothing did, as most
        calls go: one object less per call for the garbage collector to walk)."""
        self.process: simpy.Event | None = None
        """What the step waits on: the latency timeout (lean path) or the staged call's ``done``
        event; it is let go once the call has answered, so a recorded call does not keep its
        event."""
        self.wire: Any = None
        """A wire fault that corrupted the answer's bytes (:mod:`simforge.faults.wire`): the
        HTTP surface writes them; ``result`` keeps what the service meant to send."""
        self.called_as: tuple[str, Any] | None = None
        """The name and arguments the agent sent, when a surface fault renamed them (the call
        is recorded under the real ones)."""

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


class Capacity(simpy.Resource):
    """A tool's concurrent slots: simpy's ``Resource``, plus a lean way in and out for a call
    that finds a slot free with nobody queued (most calls).

    simpy's way costs two events per call: a ``Request`` (allocated, scheduled, and processed
    though nobody waits on it) and a ``Release`` (the same). :meth:`hold` takes the slot as
    ``request()`` would, minus the event, which only a waiting process would have noticed.
    :meth:`free` gives it back as ``release()`` does (at once) and schedules, where the
    ``Release`` event would have been, a shared marker whose only callback is the one the
    ``Release`` carries: queued requests are then granted at exactly the moment, and in exactly
    the order, they were before. Calls that wait go through simpy's own events, unchanged, and
    both kinds share ``users`` and the queue.
    """

    def __init__(self, env: simpy.Environment, capacity: int = 1) -> None:
        super().__init__(env, capacity)
        self._freed = _Freed(self._trigger_put)

    def has_room(self) -> bool:
        """A slot is free and nobody is queued for one: a request now would be granted."""
        return len(self.users) < self._capacity and not self.put_queue

    def hold(self, holder: object) -> None:
        """Take a slot for ``holder`` (the caller checked that one is free and none queued)."""
        self.users.append(holder)  # type: ignore[arg-type]

    def free(self, holder: object) -> None:
        """Give ``holder``'s slot back, as ``release()`` would."""
        self.users.remove(holder)  # type: ignore[arg-type]
        self._env.schedule(self._freed)  # type: ignore[arg-type]


class _Freed:
    """The stand-in for a processed ``Release`` in simpy's event queue: what ``Environment.step``
    reads of an event (``callbacks``, ``_ok``), nothing more. One per resource, scheduled as
    often as slots are freed: ``callbacks`` always answers the same callback, and the step's
    clearing of it after use is ignored."""

    __slots__ = ("_callbacks",)
    _ok = True

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self._callbacks = (callback,)

    @property
    def callbacks(self) -> tuple[Callable[[Any], None], ...]:
        return self._callbacks

    @callbacks.setter
    def callbacks(self, _: object) -> None:
        pass


class CallPipeline:
    """Starts calls for a session and runs each through capacity, latency and handler."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.counts: dict[str, int] = {}
        self.background_counts: dict[str, int] = {}
        # ids issued so far; a session whose record keeps only its last N calls (a long-lived
        # sandbox) keeps ids unique among those N, not over every call it ever served
        self._ids: set[str] = set()
        self._issued = 0
        limit = session.recorder.calls.maxlen
        self._id_window: deque[str] | None = deque() if limit is not None else None
        self._id_limit = limit or 0

    def start(self, tool_name: str, args: Any, call_id: str | None) -> CallOutcome:
        session = self.session
        now = session.env.now
        surface = session.surface
        if surface is not None:
            return self._start_surfaced(tool_name, args, call_id, now)
        index = self.counts.get(tool_name, 0)
        self.counts[tool_name] = index + 1
        outcome = CallOutcome(tool_name, args, self._unique_id(call_id), index, now)
        tool = session.tools.get(tool_name)
        if tool is None:
            outcome.fail(ToolNotFound(tool_name, list(session.tools)), now)
            return outcome
        # what _planned does, inline: this is every call's path
        faults = None
        if session.plan is not None:
            faults = session.plan.decide(tool.spec, outcome.call_id, index, args, now)
            if faults is not None:
                outcome.faults = faults.records
        self._launch(tool, outcome, faults)
        return outcome

    def _start_surfaced(
        self, tool_name: str, args: Any, call_id: str | None, now: float
    ) -> CallOutcome:
        """A call through the episode's surface view: under the real tool's name and argument
        names, with what the agent sent kept beside (``called_as``)."""
        surface = self.session.surface
        assert surface is not None
        refused: ToolError | None = None
        try:
            tool, real_args = surface.resolve(tool_name, args, now)
        except ToolError as exc:
            tool, real_args, refused = None, args, exc
        name = tool.name if tool is not None else tool_name
        index = self.counts.get(name, 0)
        self.counts[name] = index + 1
        outcome = CallOutcome(name, real_args, self._unique_id(call_id), index, now)
        if name != tool_name or real_args is not args:
            outcome.called_as = (tool_name, args)
        if refused is not None:
            outcome.fail(refused, now)
            return outcome
        if tool is None:
            outcome.fail(ToolNotFound(tool_name, list(surface.offered(now))), now)
            return outcome
        return self._planned(tool, outcome, real_args, now)

    def _planned(self, tool: Tool, outcome: CallOutcome, args: Any, now: float) -> CallOutcome:
        session = self.session
        index = outcome.call_index
        faults = None
        if session.plan is not None:
            faults = session.plan.decide(tool.spec, outcome.call_id, index, args, now)
            if faults is not None:
                outcome.faults = faults.records
        self._launch(tool, outcome, faults)
        return outcome

    def start_background(self, tool: Tool, args: Any) -> CallOutcome:
        """A call from another user: it competes for capacity and runs its handler, but is not
        the agent's, so it is neither recorded nor counted in the agent's fault schedule."""
        index = self.background_counts.get(tool.name, 0)
        self.background_counts[tool.name] = index + 1
        outcome = CallOutcome(
            tool.name, args, f"bg-{tool.name}-{index}", index, self.session.env.now
        )
        self._launch(tool, outcome, None)
        return outcome

    def _launch(self, tool: Tool, out: CallOutcome, fx: CallFaults | None) -> None:
        """Start a call. The common case (no fault fired, a free slot, an answer before any
        deadline) is one timeout whose callback runs the handler. Everything else (a fault
        decision, a full tool, a deadline the latency passes) is a :class:`StagedCall`."""
        session = self.session
        env = session.env
        spec = tool.spec
        if fx is not None:
            StagedCall(self, tool, out, fx, None)
            return
        resource = self._resource(spec.name, spec.capacity)
        if resource is not None and not resource.has_room():
            StagedCall(self, tool, out, None, None)
            return
        latency = spec.latency.sample(session.streams("latency", spec.name))
        natural = self._natural_error(tool, out)
        timeout = session.call_timeout
        if timeout is not None and latency > timeout:
            StagedCall(self, tool, out, None, (latency, natural))
            return
        if resource is not None:
            resource.hold(out)

        def done(_: simpy.Event) -> None:
            out.process = None
            try:
                if natural is not None:
                    self._answer(out, None, natural)
                else:
                    self._execute(tool, out, None, record=True)
            finally:
                if resource is not None:
                    resource.free(out)

        event = env.timeout(latency)
        event.callbacks.append(done)
        out.process = event

    def _resource(self, name: str, capacity: int | None) -> Capacity | None:
        if capacity is None:
            return None
        resource = self.session.resources.get(name)
        if resource is None:
            resource = self.session.resources[name] = Capacity(self.session.env, capacity)
        return resource

    def _unique_id(self, call_id: str | None) -> str:
        ids = self._ids
        if call_id is None or call_id in ids:
            base = call_id or "call"
            n = self._issued + 1
            call_id = f"{base}_{n}"
            while call_id in ids:
                n += 1
                call_id = f"{base}_{n}"
        ids.add(call_id)
        self._issued += 1
        window = self._id_window
        if window is not None:
            window.append(call_id)
            if len(window) > self._id_limit:
                ids.discard(window.popleft())
        return call_id

    def _answer(self, out: CallOutcome, fx: CallFaults | None, error: ToolError) -> None:
        out.fail(error, self.session.env.now)
        if fx is not None:
            fx.observed(out.error)

    def _finish_late(
        self,
        tool: Tool,
        out: CallOutcome,
        at: float,
        natural: ToolError | None,
        release: Callable[[], object] | None,
    ) -> Generator[simpy.Event, Any, None]:
        """The server keeps working after the client gave up: the effect lands, unseen (or
        when the episode ends, if that comes first: :meth:`Session.commit_later`)."""
        session = self.session
        env = session.env
        key = None
        if natural is None:
            key = session.commit_later(
                at, lambda now: self._execute(tool, out, None, record=False, now=now)
            )
        try:
            if at > env.now:
                yield env.timeout(at - env.now)
            if key is not None:
                session.land(key)
        finally:
            if release is not None:
                release()

    def _natural_error(self, tool: Tool, out: CallOutcome) -> ToolError | None:
        model = tool.spec.errors
        if model.rate <= 0:
            return None
        rng = self.session.streams("errors", tool.name)
        if rng.random() >= model.rate:
            return None
        fault = InjectedFault(
            kind="error_status",
            tool=tool.name,
            call_id=out.call_id,
            call_index=out.call_index,
            sim_time=self.session.env.now,
            rule="error_model",
            params={"status": model.status},
        )
        if isinstance(out.faults, list):
            out.faults.append(fault)  # the fault plan's records: ``observed`` reaches it too
        else:
            out.faults = [fault]
        return ToolError(model.status, "unavailable", model.message)

    def _execute(
        self,
        tool: Tool,
        out: CallOutcome,
        fx: CallFaults | None,
        *,
        record: bool,
        now: float | None = None,
    ) -> None:
        """Run the handler against the world at ``now`` (the simulated time unless a committed
        effect lands at its own time when the episode ends)."""
        session = self.session
        world = session.world
        if now is None:
            now = session.env.now
        ctx = ToolContext(
            world,
            now,
            session.streams("handler", tool.name),
            tool=tool.name,
            call_id=out.call_id,
            call_index=out.call_index,
        )
        snapshot = None
        if fx is not None:
            if fx.read_lag is not None:
                ctx.read_as_of = now - fx.read_lag
            if fx.changes_writes:
                snapshot = world.snapshot()
        try:
            result = tool.invoke(ctx, out.args)
            if fx is not None and fx.duplicate:
                # a duplicate delivery that fails on its own leaves the first one standing
                with contextlib.suppress(ToolError):
                    tool.invoke(ctx, out.args)
        except ToolError as exc:
            if snapshot is not None:
                world.restore(snapshot)
            if record:
                self._answer(out, fx, exc)
            return
        except Exception as exc:  # an uninjected infrastructure failure, never the agent's
            session.mark_invalid(f"{tool.name}: handler raised {type(exc).__name__}: {exc}")
            if record:
                self._answer(out, fx, ToolError(500, "internal_error", "internal server error"))
            return
        if snapshot is not None and fx is not None:
            self._divert_writes(snapshot, fx)
        if record:
            if fx is None:
                out.result = result
                out.ended_at = now
                return
            if fx.results:
                result = fx.transform(result, Where(world, tool.spec, now))
            out.result = result
            out.ended_at = now
            wire = fx.wire
            if wire is not None:
                out.wire = wire
                if not wire.keeps_result:
                    out.error = wire.error(encode(result), fx.rng())
            fx.observed(out.error)

    def _divert_writes(self, snapshot: Any, fx: CallFaults) -> None:
        """A silent no-op rolls the writes back; write lag rolls them back and lands them later."""
        world = self.session.world
        written = world.log_since(snapshot.log_length)
        world.restore(snapshot)
        if fx.noop or not written or fx.write_lag is None:
            return
        session = self.session
        env = session.env

        def put(now: float) -> None:
            for version in written:
                world.put(version.entity, version.id, version.row, now=now)

        key = session.commit_later(env.now + fx.write_lag, put)

        def land(delay: float) -> Generator[simpy.Event, Any, None]:
            yield env.timeout(delay)
            session.land(key)

        env.process(land(fx.write_lag))
