"""Calls that are not the lean case (a fault decision, a full tool, a deadline that the latency
passes) run their stages (``Stages.sequence``, a generator) driven by a ``StagedCall``, not a
simpy process. The reference here is the same sequence run as a simpy process: the same seed and
actions must give the same trajectory, fault records and what the agent saw included, at every
tie of simulated time."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simpy.events import NORMAL

from simforge.faults import FaultProfile
from simforge.sim import CallRequest, Session, calls
from simforge.sim.calls import REJECT_LATENCY, CallOutcome, CallPipeline, StagedCall, Stages
from simforge.tools import Constant, LogNormal
from simforge.tools.spec import ErrorModel
from simforge.trace import TaskSpec


class ProcessStages(Stages):
    """The reference: each call that is not the lean case runs its sequence as a simpy process
    (the generator :meth:`Stages.sequence` is the call; :class:`StagedCall` only drives it)."""

    def run(self, out: CallOutcome, sequence: Generator[simpy.Event, Any, None]) -> None:
        ProcessPipeline.processes += 1
        out.process = self.session.env.process(sequence)


class ProcessPipeline(CallPipeline):
    """The pipeline with :class:`ProcessStages`: every call that is not the lean case is a
    simpy process."""

    processes = 0
    """Calls this reference ran as processes, over all instances (see the sanity test)."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.stages = ProcessStages(session)


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
    """A ``StagedCall`` starts with a ``Marker`` scheduled at URGENT priority where a process's
    ``Initialize`` would be: ahead of a normal event already due now, in turn with processes
    started around it. If simpy changes how it reads an event, this fails (and so would the
    property above)."""
    env = simpy.Environment()
    order: list[object] = []

    def proc(name: str) -> Generator[simpy.Event, Any, None]:
        order.append(name)
        yield env.timeout(0)

    env.timeout(0).callbacks.append(lambda _: order.append("normal, scheduled first"))
    env.process(proc("process before"))
    out = CallOutcome("t", {}, "c", 0, 0.0)
    StagedCall(env, out, proc("staged"))
    env.process(proc("process after"))
    env.run()
    assert order == [
        "process before",
        "staged",
        "process after",
        "normal, scheduled first",
    ]
    assert out.process is None  # the call let its ``done`` event go once it ended


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

    monkeypatch.setattr(calls, "URGENT", NORMAL)  # a staged call started at normal priority
    assert _play(mini_pack, CallPipeline, *args) != reference
