"""The kernel: one episode in simulated time.

A :class:`Session` owns a simpy Environment, a World, the tools, named RNG streams and a
recorder. A tool call waits for the tool's capacity, then for its sampled latency, then runs the
handler against the world at that moment (simpy events, no process per call: see
:mod:`simforge.sim.calls`). Calls issued in one step run concurrently in simulated time and
contend for capacity; think time between steps advances the clock (and lets background
processes run). Budgets end the episode as truncated.

The virtual clock runs as fast as the CPU allows; real-time mode is a subclass of the
Environment (simpy's ``RealtimeEnvironment``), chosen by the caller, not a flag in here.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, NamedTuple

import simpy
from simpy.events import URGENT

from simforge.errors import UserError
from simforge.faults.plan import FaultPlan
from simforge.faults.rules import BackgroundLoad, Drift, Event, FaultProfile
from simforge.faults.surface import SurfaceView, build_view
from simforge.sim.background import start_background
from simforge.sim.calls import CallOutcome, CallPipeline, Capacity, let_go
from simforge.sim.recorder import Recorder
from simforge.sim.rng import Streams
from simforge.tools.spec import Constant, LatencyModel
from simforge.tools.tool import Tool
from simforge.world.store import World


class CallRequest(NamedTuple):
    tool: str
    args: Any
    call_id: str | None = None


class Budgets(NamedTuple):
    max_steps: int | None = None
    max_sim_seconds: float | None = None


class SessionClosed(UserError, RuntimeError):
    """A step or a finish on a session whose episode has already ended."""


class Session:
    def __init__(
        self,
        tools: Mapping[str, Tool],
        world: World,
        *,
        seed: int = 0,
        think_time: LatencyModel | None = None,
        call_timeout: float | None = None,
        budgets: Budgets = Budgets(),
        env: simpy.Environment | None = None,
        pipeline_factory: Callable[[Session], CallPipeline] = CallPipeline,
        faults: FaultProfile | None = None,
        background: Sequence[BackgroundLoad | Drift | Event] = (),
        record_limit: int | None = None,
        catalog: Mapping[str, Tool] | None = None,
    ) -> None:
        self.tools = tools
        self.catalog = catalog if catalog is not None else tools
        """Every tool of the pack, for other actors (background load, world events), which may
        use tools the agent is not offered."""
        self.world_events: list[dict[str, Any]] = []
        """What other actors did: ``{at, name, tool, args, ok, error?, changed}``."""
        self.world = world
        self.seed = seed
        self.env = env if env is not None else simpy.Environment()
        self.streams = Streams(seed)
        self.recorder = Recorder(record_limit)
        self.think_time: LatencyModel = think_time or Constant(seconds=0.0)
        self.call_timeout = call_timeout
        self.budgets = budgets
        # capacity queues, created on a tool's first call: a catalog of 150 tools would
        # otherwise cost most of an idle session's memory
        self.resources: dict[str, Capacity] = {}
        self.steps = 0
        self.terminated = False
        self.truncated = False
        self.truncation_reason: str | None = None
        self.final_answer: str | None = None
        self.invalid_reason: str | None = None
        self._committed: dict[int, tuple[float, Callable[[float], object]]] = {}
        self._commits = 0
        self.pipeline = pipeline_factory(self)
        self.fault_profile = faults.name if faults is not None else "none"
        self.plan = FaultPlan(faults, seed) if faults is not None and faults.rules else None
        self.surface: SurfaceView | None = None
        """The episode's tools under surface faults (renamed, delayed, distractors, a refresh
        tool); ``None`` when the profile leaves the catalog as it is (the common case)."""
        if self.plan is not None and self.plan.view_rules:
            self.surface = build_view(tools, self.plan.view_rules, seed, self.plan.state)
            if self.surface is not None:
                self.tools = self.surface
        for spec in [*background, *(faults.background if faults is not None else ())]:
            start_background(self, spec)
        if budgets.max_sim_seconds is not None:
            # One event for the whole episode: a run that reaches it stops there. (A timeout per
            # step would stay in simpy's heap for the rest of the episode.)
            deadline = self.env.timeout(budgets.max_sim_seconds)
            deadline.callbacks.append(simpy.core.StopSimulation.callback)

    # -- the agent's side ----------------------------------------------------------------------

    @property
    def now(self) -> float:
        return float(self.env.now)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def step(
        self,
        calls: Sequence[CallRequest],
        *,
        think: float | None = None,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[CallOutcome]:
        """Advance by the agent's think time, then run ``calls`` concurrently until each has an
        answer (or the time budget runs out). Returns the outcomes in the order of ``calls``.
        ``text`` is what the agent said in the step (to the user, or beside its calls);
        ``metadata`` is recorded with it (an LLM's token usage)."""
        if self.terminated or self.truncated:  # self.done, inlined
            raise SessionClosed("the episode has ended; reset to start a new one")
        self.steps += 1
        env = self.env
        budgets = self.budgets
        deadline = budgets.max_sim_seconds
        dt = think if think is not None else self.think_time.sample(self.streams("think"))
        if dt > 0:
            target = env.now + dt
            if deadline is not None and target >= deadline:
                self._advance_to(deadline)
                self._truncate("max_sim_seconds")
                return []
            advance(env, target)
        # plain loops, not comprehensions: each of those is a function call of its own (3.11)
        start = self.pipeline.start
        outcomes = []
        for call in calls:
            outcomes.append(start(call.tool, call.args, call.call_id))
        recorder = self.recorder
        recorder.assistant_turn(text, outcomes, env.now, metadata)
        pending = []
        for outcome in outcomes:
            if outcome.process is not None and outcome.ended_at is None:
                pending.append(outcome.process)
        if len(pending) == 1:
            run_until(env, pending[0])
        elif pending:
            # The deadline event (one per session) stops any run it interrupts.
            env.run(until=env.all_of(pending))
        for outcome in outcomes:
            if outcome.ended_at is None:
                outcome.cancel("episode time budget exhausted", env.now)
            recorder.tool_result(outcome)
        if deadline is not None and env.now >= deadline:
            self._truncate("max_sim_seconds")
        elif budgets.max_steps is not None and self.steps >= budgets.max_steps:
            self._truncate("max_steps")
        return outcomes

    def finish(
        self, answer: str, *, think: float | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        """The agent's final answer ends the episode (terminated)."""
        if self.done:
            raise SessionClosed("the episode has ended; reset to start a new one")
        dt = think if think is not None else self.think_time.sample(self.streams("think"))
        if dt > 0:
            self._advance_to(self.env.now + dt)
        self.final_answer = answer
        self.terminated = True
        self.recorder.final_answer(answer, self.env.now, metadata)
        self._settle()

    def conclude(self, answer: str | None) -> None:
        """The conversation is over (the user ended it, or the agent called a tool that ends
        it): the agent's last text, already recorded, is its final answer (terminated)."""
        if self.done:
            raise SessionClosed("the episode has ended; reset to start a new one")
        self.final_answer = answer
        self.terminated = True
        self._settle()

    def abort(self, reason: str) -> None:
        """End the episode as invalid: something outside the agent failed (a user simulator)."""
        self.mark_invalid(reason)
        if not self.done:
            self._truncate("invalid")

    def offered(self) -> list[dict[str, Any]]:
        """The tools the agent is offered now, in OpenAI function format."""
        if self.surface is not None:
            return self.surface.to_openai(self.env.now)
        return [t.spec.to_openai() for t in self.tools.values()]

    def offered_specs(self) -> list[Any]:
        """The ToolSpecs the agent is offered now (as it sees them: names, schemas)."""
        if self.surface is not None:
            return list(self.surface.offered(self.env.now).values())
        return [t.spec for t in self.tools.values()]

    def call(self, tool: str, args: Any, *, think: float = 0.0) -> CallOutcome:
        """One call in its own step: a convenience for scripts and tests."""
        return self.step([CallRequest(tool, args)], think=think)[0]

    # -- background processes -------------------------------------------------------------------

    def spawn(
        self, process: Callable[[Session], Generator[simpy.Event, Any, Any]]
    ) -> simpy.Process:
        """Start a background process (production load, world drift) on this session's clock."""
        return self.env.process(process(self))

    def close(self) -> None:
        """The owner discards this session (a server resetting a served session in place):
        break the reference cycles it is made of, so that it is freed at once, by reference
        counting, instead of waiting for a full collection of the garbage collector.

        A session is cyclic by construction: simpy binds ``env.timeout``, ``env.event``, ...
        to the environment in its own ``__dict__``, events in the queue point at the
        environment, the pipeline and its stages point back at the session, a capacity's
        marker at the capacity. A served session outlives several young collections, so all
        of that (and the world, record and streams it holds, about 30 KB an episode) reached
        the oldest generation, where only a full collection frees it: a ``/ws`` server
        playing short episodes grew by about 20 MB a second. What is left readable after
        closing: the clock, the world, the record, the flags; the episode, if it had not
        ended, is truncated (``"closed"``), so a later step raises :class:`SessionClosed`
        and pending commitments are dropped with the queue."""
        if not self.done:
            self.truncated = True
            self.truncation_reason = "closed"
        env = self.env
        # what waits on a pending event (a background process, a queued call) is a cycle
        # through the event's callbacks: let go of them, then of the queue
        queue = env._queue
        for *_, event in queue:
            let_go(event)
        queue.clear()
        # simpy's early-bound classes (``BoundClass.bind_early``): the class attributes bind
        # them again on access, so the environment still works without them
        for name in ("process", "timeout", "event", "all_of", "any_of"):
            env.__dict__.pop(name, None)
        env._active_proc = None
        self.pipeline.close()
        for resource in self.resources.values():
            resource.close()
        self.resources.clear()
        self._committed.clear()

    def mark_invalid(self, reason: str) -> None:
        if self.invalid_reason is None:
            self.invalid_reason = reason

    # -- internals ------------------------------------------------------------------------------

    def _advance_to(self, t: float) -> None:
        if t > self.env.now:
            advance(self.env, t)

    def _truncate(self, reason: str) -> None:
        self.truncated = True
        self.truncation_reason = reason
        self._settle()

    # -- effects the world accepted that land later --------------------------------------------

    def commit_later(self, at: float, effect: Callable[[float], object]) -> int:
        """Register an effect the world has already accepted that lands at simulated time
        ``at``: a lagged write, the server side of a call its client gave up on. ``effect(now)``
        applies it; :meth:`land` runs it when its time comes. If the episode ends first, it
        lands then, stamped with its own time: an episode is scored on the world its actions
        leave behind, which holds every write already acknowledged, however late it lands."""
        key = self._commits
        self._commits += 1
        self._committed[key] = (at, effect)
        return key

    def land(self, key: int) -> None:
        """Apply a committed effect now, once (a settled one is not applied again)."""
        entry = self._committed.pop(key, None)
        if entry is not None:
            entry[1](self.env.now)

    def _settle(self) -> None:
        """The episode ended: what is still committed lands, in the order it was due."""
        pending = sorted(self._committed.items(), key=lambda item: (item[1][0], item[0]))
        self._committed.clear()
        for _key, (at, effect) in pending:
            effect(max(at, self.env.now))


def advance(env: simpy.Environment, at: float) -> None:
    """``env.run(until=at)`` for ``at`` after now (the agent's think time): the same events
    processed, in the same order, with the clock at ``at`` after.

    simpy's own run schedules an URGENT event at ``at`` whose callback raises
    ``StopSimulation``, which ``step`` catches, reschedules and raises again, leaving the
    event in the queue as a no-op for the next run. What that event decides is only where the
    run stops: every queued event ordered before it (simpy orders by time, priority, then the
    order of scheduling) is processed, whatever those events schedule in turn. Here its place
    in that order is taken (its id drawn from the environment's counter, as scheduling it
    would) but nothing is allocated or queued: the loop steps while the queue's first event
    is ordered before that place, then sets the clock. Most thinks find nothing due (the
    session's deadline is far ahead) and cost a comparison. The session's deadline event still
    stops a run it interrupts, where it did, and leaves the same no-op event behind
    (``tests/sim/test_session.py`` holds this to ``run(until=...)``: the clock, the events, their
    order and the next run).

    An environment of another kind (simpy's ``RealtimeEnvironment``, whose ``step`` waits for
    the wall clock to reach each event's time) steps to the event itself, as before, so that
    a think takes its time there too."""
    if type(env) is not simpy.Environment:
        _advance_to_an_event(env, at)
        return
    queue = env._queue
    place = (at, URGENT, next(env._eid))  # where run(until=at) would queue its event
    step = env.step
    try:
        while queue and queue[0] < place:  # (time, priority, id, event): ids are unique
            step()
    except simpy.core.StopSimulation:
        heapq.heappush(queue, (*place, _until(env)))
        return
    env._now = at


def _until(env: simpy.Environment) -> simpy.Event:
    """An event as ``Environment.run`` makes its own ``until`` event, without the callback that
    stops the run: a no-op when it is processed."""
    until = simpy.Event(env)
    until._ok = True
    until._value = None
    return until


def _advance_to_an_event(env: simpy.Environment, at: float) -> None:
    """:func:`advance` by scheduling the no-op event at ``at`` (URGENT) and stepping until it
    is processed."""
    until = _until(env)
    env.schedule(until, URGENT, at - env.now)
    run_until(env, until)


def run_until(env: simpy.Environment, event: simpy.Event) -> None:
    """``env.run(until=event)``: steps until ``event`` has been processed. simpy's ``run`` stops
    by raising ``StopSimulation`` from a callback it adds to the event, then puts the event back
    in the queue, where the next run processes it once more (a no-op): an exception and an extra
    step per call, for the same order of events. The session's deadline event (a
    ``StopSimulation`` callback of its own) still stops the run where it did."""
    step = env.step
    try:
        while event.callbacks is not None:
            step()
    except simpy.core.StopSimulation:
        pass
    except simpy.core.EmptySchedule:
        raise RuntimeError(
            f'No scheduled events left but "until" event was not triggered: {event}'
        ) from None
