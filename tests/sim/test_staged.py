"""Calls that are not the lean case (a fault decision, a full tool, a deadline that the latency
passes) run as staged callbacks, not simpy processes. The reference here is the process they
replace, kept verbatim: the same seed and actions must give the same trajectory, fault records
and what the agent saw included, at every tie of simulated time."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.faults import FaultProfile
from simforge.sim import CallRequest, Session, staged
from simforge.sim.calls import CallOutcome, CallPipeline
from simforge.sim.staged import REJECT_LATENCY, start_urgently, timeout_error
from simforge.tools import Constant, LogNormal
from simforge.tools.errors import ToolError
from simforge.tools.spec import ErrorModel
from simforge.tools.tool import Tool
from simforge.trace import TaskSpec

if TYPE_CHECKING:
    from simforge.faults.effects import CallFaults


class ProcessPipeline(CallPipeline):
    """The pipeline as it was on main before staged calls (823efff), copied verbatim but for the
    names of ``_finish_late``: every call that is not the lean case is a simpy process."""

    processes = 0
    """Calls this reference ran as processes, over all instances (see the sanity test)."""

    def _launch(self, tool: Tool, out: CallOutcome, fx: CallFaults | None) -> None:
        """Start a call. The common case (no fault fired, a free slot, an answer before any
        deadline) needs no process: one timeout whose callback runs the handler is the same
        call in simulated time at about half the cost. Everything else is a process."""
        session = self.session
        env = session.env
        spec = tool.spec
        if fx is not None:
            ProcessPipeline.processes += 1
            out.process = env.process(self._run(tool, out, fx))
            return
        resource = self._resource(spec.name, spec.capacity)
        if resource is not None and not resource.has_room():
            ProcessPipeline.processes += 1
            out.process = env.process(self._run(tool, out, None))
            return
        latency = spec.latency.sample(session.streams("latency", spec.name))
        natural = self._natural_error(tool, out)
        timeout = session.call_timeout
        if timeout is not None and latency > timeout:
            ProcessPipeline.processes += 1
            out.process = env.process(self._run(tool, out, None, (latency, natural)))
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

    def _run(
        self,
        tool: Tool,
        out: CallOutcome,
        fx: CallFaults | None,
        drawn: tuple[float, ToolError | None] | None = None,
    ) -> Generator[simpy.Event, Any, None]:
        """The call as a process; ``drawn`` is the latency and natural error already drawn by
        :meth:`_launch` when it handed the call over."""
        session = self.session
        env = session.env
        spec = tool.spec
        if fx is not None and fx.reject is not None:
            yield env.timeout(REJECT_LATENCY)
            self._answer(out, fx, fx.reject)
            return
        timeout = session.call_timeout
        if fx is not None and fx.hang is not None and timeout is None:
            timeout = fx.hang.after
        deadline = None if timeout is None else out.started_at + timeout
        resource = self._resource(spec.name, spec.capacity)
        request = None
        if resource is not None:
            request = resource.request()
            if deadline is not None and not request.triggered:
                yield request | env.timeout(deadline - env.now)
                if not request.triggered:
                    request.cancel()
                    self._answer(out, fx, timeout_error(spec.name, timeout))
                    return
            else:
                yield request
        try:
            if drawn is not None:
                latency, natural = drawn
            else:
                latency = spec.latency.sample(session.streams("latency", spec.name))
                natural = self._natural_error(tool, out)
            if fx is not None:
                latency = fx.latency(latency)
                if fx.hang is not None and deadline is not None:
                    yield env.timeout(max(0.0, deadline - env.now))
                    if fx.hang.effect == "applied" and natural is None:
                        self._execute(tool, out, fx, record=False)
                    self._answer(out, fx, timeout_error(spec.name, timeout))
                    return
                if fx.reset is not None:
                    yield env.timeout(latency)
                    if fx.reset.effect == "applied" and natural is None:
                        self._execute(tool, out, fx, record=False)
                    self._answer(
                        out, fx, ToolError(0, "connection_reset", "connection reset by peer")
                    )
                    return
            if deadline is not None and env.now + latency > deadline:
                yield env.timeout(deadline - env.now)
                self._answer(out, fx, timeout_error(spec.name, timeout))
                env.process(
                    self._finish_late_ref(tool, out, out.started_at + latency, natural, request)
                )
                request = None
                return
            yield env.timeout(latency)
            if natural is not None:
                self._answer(out, fx, natural)
            else:
                self._execute(tool, out, fx, record=True)
        finally:
            if request is not None and resource is not None:
                resource.release(request)

    def _finish_late_ref(
        self, tool: Tool, out: CallOutcome, at: float, natural: ToolError | None, request: Any
    ) -> Generator[simpy.Event, Any, None]:
        """The server keeps working after the client gave up: the effect lands, unseen (or
        when the episode ends first: the commit is the session's, not the call path's, so the
        reference registers it as the pipeline does)."""
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
            if request is not None:
                self.session.resources[tool.name].release(request)


FAULTS = st.sampled_from(
    [
        {"kind": "latency", "multiplier": 2.0},
        {"kind": "latency", "add": {"kind": "uniform", "low": 0.0, "high": 0.2}},
        {"kind": "latency", "multiplier": 0.0, "add": {"kind": "constant", "seconds": 0.05}},
        {"kind": "error_status", "status": 503},
        {"kind": "rate_limit", "burst": 1, "per_second": 2.0},
        {"kind": "timeout", "after": 0.1},
        {"kind": "timeout", "effect": "applied"},
        {"kind": "connection_reset", "effect": "applied"},
        {"kind": "connection_reset"},
        {"kind": "partial_result", "mode": "missing_fields"},
        {"kind": "stale_read", "lag": 0.05},
        {"kind": "write_lag", "lag": 0.1},
        {"kind": "duplicate_effect"},
        {"kind": "silent_noop"},
        {"kind": "schema_drift", "rename": {"email": "mail"}},
        {"kind": "prompt_injection"},
    ]
)
RULES = st.lists(
    st.tuples(FAULTS, st.sampled_from([1.0, 0.5, 0.2]), st.sampled_from(["*", "*customer*"])),
    max_size=4,
)
TOOLS = [
    "get_customer",
    "list_customers",
    "upgrade_customer",
    "update_customer",
    "create_note",
    "list_notes",
]
STEPS = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(TOOLS), st.integers(1, 4)), min_size=1, max_size=6),
        st.sampled_from([0.0, 0.0, 0.05, 0.1, None]),
    ),
    min_size=1,
    max_size=8,
)


def _request(tool: str, i: int) -> CallRequest:
    cid = f"C-{i:04d}"
    args = {
        "get_customer": {"customer_id": cid},
        "list_customers": {"limit": i},
        "upgrade_customer": {"customer_id": cid},
        "update_customer": {"customer_id": cid, "balance": float(i)},
        "create_note": {"customer_id": cid, "text": "x"},
        "list_notes": {},
    }[tool]
    return CallRequest(tool, args)


SPECS = st.fixed_dictionaries(
    {
        name: st.fixed_dictionaries(
            {
                "capacity": st.sampled_from([None, 1, 2]),
                "latency": st.sampled_from(
                    [
                        Constant(seconds=0.0),
                        Constant(seconds=REJECT_LATENCY),
                        Constant(seconds=0.05),
                        Constant(seconds=0.1),
                        LogNormal(median=0.08, sigma=0.8),
                    ]
                ),
                "errors": st.sampled_from([ErrorModel(), ErrorModel(rate=0.3)]),
            }
        )
        for name in TOOLS
    }
)


class _Draws:
    """The session's streams, noting each stream asked for, in order, with the simulated time:
    latency and error draws, and every handler run (each takes the handler stream), seen or
    unseen. Equal trajectories can hide a different order of events at a tie; this cannot."""

    def __init__(self, streams: Any, env: simpy.Environment) -> None:
        self.streams = streams
        self.env = env
        self.log: list[tuple[float, tuple[str, ...]]] = []

    def __call__(self, *key: str) -> Any:
        self.log.append((self.env.now, key))
        return self.streams(*key)


def _play(pack, factory, seed, rules, steps, specs, timeout, load) -> str:
    tools = dict(pack.catalog)
    for name, spec in specs.items():
        tools[name] = tools[name].with_spec(**spec)
    profile = FaultProfile.model_validate(
        {
            "name": "p",
            "rules": [
                {"id": f"r{i}", "fault": fault, "probability": p, "target": {"tools": [glob]}}
                for i, (fault, p, glob) in enumerate(rules)
            ],
            "background": [
                {
                    "kind": "load",
                    "tools": ["get_customer", "upgrade_customer"],
                    "rate": 8.0,
                    "args": {"customer_id": {"entity": "Customer"}},
                }
            ]
            if load
            else [],
        }
    )
    s = Session(
        tools,
        pack.world(),
        seed=seed,
        faults=profile,
        call_timeout=timeout,
        think_time=LogNormal(median=0.1, sigma=0.5),
        pipeline_factory=factory,
    )
    draws = s.streams = _Draws(s.streams, s.env)  # type: ignore[assignment]
    for requests, think in steps:
        s.step([_request(t, i) for t, i in requests], think=think)
    s.finish("end")
    trajectory = s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t")
    ).model_dump_json()
    s.env.run(until=s.env.now + 10.0)  # late writes and lagged writes land
    world = {e: sorted(map(repr, s.world.rows(e))) for e in s.world.schemas}
    return trajectory + repr((world, s.now, s.pipeline.background_counts, draws.log))


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    rules=RULES,
    steps=STEPS,
    specs=SPECS,
    timeout=st.sampled_from([None, 0.05, 0.1, 0.3]),
    load=st.booleans(),
)
def test_a_staged_call_is_the_process_it_replaces(
    mini_pack, seed, rules, steps, specs, timeout, load
):
    args = (seed, rules, steps, specs, timeout, load)
    assert _play(mini_pack, CallPipeline, *args) == _play(mini_pack, ProcessPipeline, *args)


def test_a_staged_call_is_no_process_and_waits_on_one_event(mini_pack):
    rules = [{"id": "slow", "fault": {"kind": "latency", "multiplier": 2}}]
    s = Session(
        mini_pack.catalog,
        mini_pack.world(),
        faults=FaultProfile.model_validate({"name": "p", "rules": rules}),
    )
    (o,) = s.step([_request("get_customer", 1)])
    assert o.ok and o.ended_at == 0.2 and o.process is None  # let go once answered
    ((record),) = o.faults
    assert (record.kind, record.rule, record.observed) == ("latency", "slow", {"ok": True})
    a, b = s.step([_request("get_customer", 2), _request("list_customers", 3)], think=0.0)
    assert a.ok and b.ok and a.ended_at == 0.4 and b.ended_at == 0.4
    s.env.process = None  # type: ignore[method-assign]  # a staged call starts no process
    (c,) = s.step([_request("get_customer", 4)], think=0.0)
    assert c.ok and c.ended_at == pytest.approx(0.6)


def test_a_staged_call_starts_where_a_process_would():
    """``start_urgently`` leans on ``simpy.events.Initialize`` calling ``_resume`` at URGENT
    priority: ahead of a normal event already due now, in turn with processes started around it.
    If simpy changes that, this fails (and so would the property above)."""
    env = simpy.Environment()
    order: list[object] = []

    def proc(name: str) -> Generator[simpy.Event, Any, None]:
        order.append(name)
        yield env.timeout(0)

    class Stage:
        def _resume(self, event: simpy.Event) -> None:
            order.append(("staged", event.triggered, event.ok, env.now))

    env.timeout(0).callbacks.append(lambda _: order.append("normal, scheduled first"))
    env.process(proc("process before"))
    start_urgently(env, Stage())  # type: ignore[arg-type]
    env.process(proc("process after"))
    env.run()
    assert order == [
        "process before",
        ("staged", True, True, 0),
        "process after",
        "normal, scheduled first",
    ]


def test_the_comparison_sees_the_order_of_events_at_a_tie(mini_pack, monkeypatch):
    """The property can fail: a staged call started at normal priority instead of urgent gives
    the same trajectory here, but not the same order of draws, and the comparison says so. The
    reference, for its part, does run the call as a process."""
    specs = {name: {"latency": Constant(seconds=0.0)} for name in TOOLS}
    rules = [({"kind": "latency", "multiplier": 2.0}, 1.0, "get_customer")]
    steps = [([("list_customers", 1), ("get_customer", 2)], 0.0)]
    args = (0, rules, steps, specs, None, False)
    before = ProcessPipeline.processes
    reference = _play(mini_pack, ProcessPipeline, *args)
    assert ProcessPipeline.processes > before
    assert _play(mini_pack, CallPipeline, *args) == reference

    def normal_start(env: simpy.Environment, call: Any) -> None:
        env.timeout(0).callbacks.append(call._resume)

    monkeypatch.setattr(staged, "start_urgently", normal_start)
    assert _play(mini_pack, CallPipeline, *args) != reference
