"""One tool call in simulated time, as a short sequence of stages: capacity, latency, the
handler, the effects on its answer.

:class:`Stages` is the call: one hook per stage (:meth:`~Stages.gateway`,
:meth:`~Stages.capacity`, :meth:`~Stages.draw` for the latency, :meth:`~Stages.serve` for the
wait for the answer, :meth:`~Stages.invoke` for the handler, :meth:`~Stages.answer` for its
result, :meth:`~Stages.deliver` for the answer on the wire), and :meth:`Stages.sequence`, the
stages in order as the simpy events a call waits on. A fault plan (``session.plan``) is
consulted once per call; each fault that fired is a wrapper around the call's stages
(:class:`~simforge.faults.effects.Wrapper`) that overrides its stage's hook and hands every other
to what it wraps, the way a transport wraps a transport in httpx; the call runs on the outermost
(``fx``): refuse at the gateway, change the latency, hang to the deadline or drop the
connection, change how the handler's reads and writes land, rewrite the result or its bytes.

The common case of training (no fault, a free slot, an answer before any deadline) is the
sequence's specialisation (:meth:`Stages.launch`): one timeout for the latency, whose callback is
the answer stage. Every other call runs the whole sequence (:class:`StagedCall`), without a simpy
process: the same events at the same moments, so the order of draws and of ties in simulated time
is the process's. :class:`CallPipeline` starts calls for a session: ids, per-tool counts, the
surface view, the fault decision.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import URGENT

from simforge.faults.kinds import Where, timeout_error
from simforge.faults.wire import encode
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError, ToolNotFound
from simforge.tools.tool import Tool
from simforge.trace.episode import InjectedFault

if TYPE_CHECKING:
    from simforge.faults.effects import Wrapper
    from simforge.sim.session import Session
    from simforge.tools.spec import ToolSpec

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
        self._freed = Marker(self._trigger_put)

    def close(self) -> None:
        """Break the capacity's cycles (its marker's callback is its own bound method, and
        simpy binds ``request`` and ``release`` to it early) when its session is closed."""
        self.__dict__.pop("request", None)
        self.__dict__.pop("release", None)
        self._freed = None  # type: ignore[assignment]
        for request in self.put_queue:
            let_go(request)  # a queued call waits on it: a cycle through its callbacks
        self.users.clear()
        self.put_queue.clear()
        self.get_queue.clear()

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

    def leave(self, holder: object, request: simpy.resources.resource.Request | None) -> None:
        """Give back the slot ``holder`` took: with :meth:`hold`, or with ``request``."""
        if request is None:
            self.free(holder)
        else:
            self.release(request)


def let_go(event: simpy.Event) -> None:
    """Drop what waits on a pending event of a closed session (its callbacks), and what
    waits on a condition it is part of (a condition's callbacks hold the condition itself):
    the cycles through which a waiting process or call would outlive its session."""
    callbacks = event.callbacks
    event.callbacks = None  # type: ignore[assignment]  # as simpy marks a processed event
    for callback in callbacks or ():
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, simpy.events.Condition) and owner.callbacks is not None:
            let_go(owner)


class Marker:
    """A stand-in for an event that has succeeded, in simpy's event queue: what
    ``Environment.step`` reads of an event (``callbacks``, ``_ok``), nothing more, scheduled with
    the public ``Environment.schedule``. ``callbacks`` always answers the same callback, and the
    step's clearing of it after use is ignored, so one marker can be scheduled as often as needed:
    a :class:`Capacity` has one, scheduled where simpy's ``Release`` would be processed; a
    :class:`StagedCall` starts with one at URGENT priority, where a process's ``Initialize``
    would be. This is the one place the kernel leans on more than simpy's documented behaviour
    (simpy is pinned to 4.1; ``tests/sim/test_staged.py`` checks both uses against simpy's own
    events)."""

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


REJECT_LATENCY = 0.005
"""Seconds a gateway takes to refuse a call (rate limit, outage): much less than a real call."""


class Stages:
    """One call's stages for a session, one hook each, and the order they run in
    (:meth:`sequence`). This is the whole interface of a call: the lean case and the sequence
    use these hooks and nothing else of the pipeline. The hooks here are the service without
    faults, the innermost of a faulted call's wrappers (``fx``, the outermost, is what the
    sequence asks; ``None`` when nothing fired, and then the hooks are these, the lean case
    calling them directly and :meth:`handle` inlining :meth:`invoke`, :meth:`answer` and
    :meth:`deliver`)."""

    __slots__ = ("session",)

    def __init__(self, session: Session) -> None:
        self.session = session

    def launch(self, tool: Tool, out: CallOutcome, fx: Wrapper | None) -> None:
        """Start a call. The lean case (no fault fired, a free slot, an answer before any
        deadline) is the sequence with nothing to wait on but the latency: its draw now, then
        one timeout whose callback is the answer stage. Everything else is the whole
        :meth:`sequence`, handed what was already drawn."""
        session = self.session
        drawn = None
        if fx is None:
            resource = self.capacity(tool.spec)
            if resource is None or resource.has_room():
                drawn = self.draw(tool, out)
                latency, natural = drawn
                timeout = session.call_timeout
                if timeout is None or latency <= timeout:
                    if resource is not None:
                        resource.hold(out)

                    def answer(_: simpy.Event) -> None:
                        out.process = None
                        try:
                            self.respond(tool, out, None, natural)
                        finally:
                            if resource is not None:
                                resource.free(out)

                    event = session.env.timeout(latency)
                    event.callbacks.append(answer)
                    out.process = event
                    return
        self.run(out, self.sequence(tool, out, fx, drawn))

    def run(self, out: CallOutcome, sequence: Generator[simpy.Event, Any, None]) -> None:
        """Drive a call's sequence: a :class:`StagedCall`, the process it stands for minus the
        ``Process`` (the tests run it as a simpy process too, as the reference)."""
        StagedCall(self.session.env, out, sequence)

    def sequence(
        self,
        tool: Tool,
        out: CallOutcome,
        fx: Wrapper | None,
        drawn: tuple[float, ToolError | None] | None = None,
    ) -> Generator[simpy.Event, Any, None]:
        """The call, stage by stage, yielding each event it waits on: the gateway, capacity (up
        to the deadline), latency, then the handler and its effects, or what a fault does
        instead. ``drawn`` is the latency and natural error :meth:`launch` already drew."""
        session = self.session
        env = session.env
        name = tool.spec.name
        hooks = self if fx is None else fx
        # the gateway: a refusal (rate limit, outage) answers in 5 ms, with no slot, no handler
        if fx is not None:
            refusal = fx.gateway(tool, out)
            if refusal is not None:
                yield env.timeout(REJECT_LATENCY)
                self.fail(out, fx, refusal)
                return
        timeout = session.call_timeout
        deadline = None if timeout is None else out.started_at + timeout
        # capacity: a free slot now, else the queue, given up at the deadline
        resource = hooks.capacity(tool.spec)
        request = None
        if resource is not None:
            if resource.has_room():
                resource.hold(out)  # as ``request()`` would take it, minus its event
                yield env.timeout(0)  # where the granted ``Request`` would be processed
            else:
                request = resource.request()
                if deadline is not None and not request.triggered:
                    yield request | env.timeout(deadline - env.now)
                    if not request.triggered:
                        request.cancel()
                        self.fail(out, fx, timeout_error(name, timeout))
                        return
                else:
                    yield request
        try:
            # latency: the tool's draw and its error model (what the faults make of it)
            latency, natural = drawn if drawn is not None else hooks.draw(tool, out)
            # the wait for the answer, then the handler and its effects on the answer
            late = yield from hooks.serve(self, fx, tool, out, latency, natural, deadline,
                                          timeout)
            if late:
                # the client gave up at the deadline; the server finishes later, unseen, and
                # only then gives the slot back
                release = None
                if resource is not None:
                    release = functools.partial(resource.leave, out, request)
                env.process(
                    self.finish_late(tool, out, out.started_at + latency, natural, release)
                )
                resource = None
                return
        finally:
            if resource is not None:
                resource.leave(out, request)
        # the server is done (its slot is free); a slow body is still on its way
        transfer = self.transfer(out)
        if transfer > 0:
            out.ended_at = env.now + transfer
            yield env.timeout(transfer)

    # -- the stages' hooks (what a fault's wrapper overrides: faults/effects.py) ---------------

    def gateway(self, tool: Tool, out: CallOutcome) -> ToolError | None:
        """A refusal before the tool is reached (rate limit, outage): none without a fault."""
        return None


    def capacity(self, spec: ToolSpec) -> Capacity | None:
        """The tool's slots (made on its first call), or ``None`` if it has no limit."""
        if spec.capacity is None:
            return None
        resources = self.session.resources
        resource = resources.get(spec.name)
        if resource is None:
            resource = resources[spec.name] = Capacity(self.session.env, spec.capacity)
        return resource

    def draw(self, tool: Tool, out: CallOutcome) -> tuple[float, ToolError | None]:
        """The latency, from the tool's stream, and the error its error model draws (or
        ``None``), noted among the call's faults."""
        session = self.session
        spec = tool.spec
        latency = spec.latency.sample(session.streams("latency", spec.name))
        model = spec.errors
        if model.rate <= 0:
            return latency, None
        if session.streams("errors", tool.name).random() >= model.rate:
            return latency, None
        fault = InjectedFault(
            kind="error_status",
            tool=tool.name,
            call_id=out.call_id,
            call_index=out.call_index,
            sim_time=session.env.now,
            rule="error_model",
            params={"status": model.status},
        )
        if isinstance(out.faults, list):
            out.faults.append(fault)  # the fault plan's records: ``observed`` reaches it too
        else:
            out.faults = [fault]
        return latency, ToolError(model.status, "unavailable", model.message)

    def serve(
        self,
        stages: Stages,
        fx: Wrapper | None,
        tool: Tool,
        out: CallOutcome,
        latency: float,
        natural: ToolError | None,
        deadline: float | None,
        timeout: float | None,
    ) -> Generator[simpy.Event, Any, bool]:
        """The wait for the answer: the latency, then the answer stage; or, if the latency
        runs past the deadline, the client's timeout at the deadline (``True``: the server is
        still at work, and finishes at the end of the latency)."""
        env = self.session.env
        if deadline is not None and env.now + latency > deadline:
            yield env.timeout(deadline - env.now)
            stages.fail(out, fx, timeout_error(tool.spec.name, timeout))
            return True
        yield env.timeout(latency)
        stages.respond(tool, out, fx, natural)
        return False

    def invoke(self, tool: Tool, ctx: ToolContext, args: Any) -> Any:
        """The handler against the world."""
        return tool.invoke(ctx, args)

    def answer(self, result: Any, where: Where) -> Any:
        """The result the handler returned, as the service sends it."""
        return result

    def deliver(self, out: CallOutcome, result: Any) -> None:
        """The answer, as it reaches the client."""
        out.result = result

    def respond(
        self, tool: Tool, out: CallOutcome, fx: Wrapper | None, natural: ToolError | None
    ) -> None:
        """The answer at the end of the latency: the error drawn, or the handler's result."""
        if natural is not None:
            self.fail(out, fx, natural)
        else:
            self.handle(tool, out, fx, record=True)

    def fail(self, out: CallOutcome, fx: Wrapper | None, error: ToolError) -> None:
        """Answer ``error`` (what fired on the call notes that the agent saw it)."""
        out.fail(error, self.session.env.now)
        if fx is not None:
            fx.call.observed(out.error)

    def drop(
        self,
        tool: Tool,
        out: CallOutcome,
        fx: Wrapper,
        natural: ToolError | None,
        effect: str,
        error: ToolError,
    ) -> None:
        """The client gets ``error`` instead of an answer (a hang, a reset); the server did the
        work all the same when ``effect`` is ``applied``."""
        if effect == "applied" and natural is None:
            self.handle(tool, out, fx, record=False)
        self.fail(out, fx, error)

    def transfer(self, out: CallOutcome) -> float:
        """Seconds a slow body (:class:`~simforge.faults.wire.SlowBody`) takes to arrive."""
        wire = out.wire
        if wire is None or not hasattr(wire, "transfer") or out.error is not None:
            return 0.0
        return float(wire.transfer(len(encode(out.result))))

    def finish_late(
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
                at, lambda now: self.handle(tool, out, None, record=False, now=now)
            )
        try:
            if at > env.now:
                yield env.timeout(at - env.now)
            if key is not None:
                session.land(key)
        finally:
            if release is not None:
                release()

    def handle(
        self,
        tool: Tool,
        out: CallOutcome,
        fx: Wrapper | None,
        *,
        record: bool,
        now: float | None = None,
    ) -> None:
        """The handler against the world at ``now`` (the simulated time unless a committed
        effect lands at its own time when the episode ends), with what the faults change of
        its reads and writes, then of its result; ``record`` is whether the agent sees it."""
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
        try:
            # without a fault, :meth:`invoke` (the hook) inlined
            result = tool.invoke(ctx, out.args) if fx is None else fx.invoke(tool, ctx, out.args)
        except ToolError as exc:
            if record:
                self.fail(out, fx, exc)
            return
        except Exception as exc:  # an uninjected infrastructure failure, never the agent's
            session.mark_invalid(f"{tool.name}: handler raised {type(exc).__name__}: {exc}")
            if record:
                self.fail(out, fx, ToolError(500, "internal_error", "internal server error"))
            return
        if record:
            if fx is None:
                out.result = result  # :meth:`answer` and :meth:`deliver`, the hooks, inlined
                out.ended_at = now
                return
            out.ended_at = now
            if fx.call.rewrites:
                result = fx.answer(result, Where(world, tool.spec, now))
            fx.deliver(out, result)
            fx.call.observed(out.error)


class StagedCall:
    """Runs a call's :meth:`Stages.sequence` on simpy's events as a process would, without the
    process: it starts at URGENT priority where the process's ``Initialize`` would be (a
    :class:`Marker`), resumes the sequence from a callback on each event it yields, and
    triggers ``done`` where the process itself would have ended. The events, their moments and
    priorities are the process's, so the order of draws and of ties is too; what goes is the
    ``Process`` object and simpy's resumption around each ``yield``."""

    __slots__ = ("done", "out", "stages")

    def __init__(
        self, env: simpy.Environment, out: CallOutcome, stages: Generator[simpy.Event, Any, None]
    ) -> None:
        self.stages = stages
        self.out = out
        self.done = out.process = simpy.Event(env)
        env.schedule(Marker(self.resume), URGENT)  # type: ignore[arg-type]

    def resume(self, _: object) -> None:
        """Run the next stage, up to the event it waits on (or the end of the call)."""
        try:
            event = next(self.stages)
        except StopIteration:
            self.out.process = None
            self.done.succeed()
            return
        event.callbacks.append(self.resume)


class CallPipeline:
    """Starts calls for a session: an id, the per-tool count, the surface view and the fault
    decision, then the call's :class:`Stages`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.stages = Stages(session)
        self.counts: dict[str, int] = {}
        self.background_counts: dict[str, int] = {}
        # ids issued so far; a session whose record keeps only its last N calls (a long-lived
        # sandbox) keeps ids unique among those N, not over every call it ever served
        self._ids: set[str] = set()
        self._issued = 0
        limit = session.recorder.calls.maxlen
        self._id_window: deque[str] | None = deque() if limit is not None else None
        self._id_limit = limit or 0

    def close(self) -> None:
        """Let go of the session (:meth:`Session.close`): the pipeline and its stages are
        the session's back-references, two of its cycles."""
        self.session = self.stages.session = None  # type: ignore[assignment]

    def start(self, tool_name: str, args: Any, call_id: str | None) -> CallOutcome:
        session = self.session
        now = session.env.now
        tool: Tool | None
        if session.surface is not None:
            tool, outcome = self._surfaced(tool_name, args, call_id, now)
            if tool is None:
                return outcome
            args = outcome.args
        else:
            index = self.counts.get(tool_name, 0)
            self.counts[tool_name] = index + 1
            outcome = CallOutcome(tool_name, args, self._unique_id(call_id), index, now)
            tool = session.tools.get(tool_name)
            if tool is None:
                outcome.fail(ToolNotFound(tool_name, list(session.tools)), now)
                return outcome
        fx = None
        if session.plan is not None:
            faults = session.plan.decide(tool.spec, outcome.call_id, outcome.call_index, args, now)
            if faults is not None:
                outcome.faults = faults.records
                fx = faults.wrap(self.stages)
        self.stages.launch(tool, outcome, fx)
        return outcome

    def _surfaced(
        self, tool_name: str, args: Any, call_id: str | None, now: float
    ) -> tuple[Tool | None, CallOutcome]:
        """A call through the episode's surface view: under the real tool's name and argument
        names, with what the agent sent kept beside (``called_as``). The tool is ``None`` when
        the call is already answered (refused, or no such tool)."""
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
            return None, outcome
        if tool is None:
            outcome.fail(ToolNotFound(tool_name, list(surface.offered(now))), now)
        return tool, outcome

    def start_background(self, tool: Tool, args: Any) -> CallOutcome:
        """A call from another user: it competes for capacity and runs its handler, but is not
        the agent's, so it is neither recorded nor counted in the agent's fault schedule."""
        index = self.background_counts.get(tool.name, 0)
        self.background_counts[tool.name] = index + 1
        outcome = CallOutcome(
            tool.name, args, f"bg-{tool.name}-{index}", index, self.session.env.now
        )
        self.stages.launch(tool, outcome, None)
        return outcome

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
