"""The kernel: calls are simpy processes that contend for capacity, wait out latency, and run
against the world at that moment; budgets truncate; same seed and actions, same trajectory."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.sim import Budgets, CallRequest, Session, SessionClosed
from simforge.sim import calls as calls_module
from simforge.sim.calls import Capacity
from simforge.tools import Constant, LogNormal


def session(pack, *, capacity=None, latency=0.1, **kwargs) -> Session:
    tools = dict(pack.catalog)
    tools["get_customer"] = tools["get_customer"].with_spec(
        capacity=capacity, latency=Constant(seconds=latency)
    )
    return Session(tools, pack.world(), **kwargs)


def get(i: int) -> CallRequest:
    return CallRequest("get_customer", {"customer_id": f"C-{i:04d}"})


def test_two_calls_on_a_tool_of_capacity_one_queue(mini_pack):
    s = session(mini_pack, capacity=1, latency=0.1)
    first, second = s.step([get(1), get(2)])
    assert (first.started_at, first.ended_at) == (0.0, 0.1)
    assert (second.started_at, second.ended_at) == (0.0, pytest.approx(0.2))
    assert first.ok and second.ok


def test_without_a_capacity_limit_calls_overlap(mini_pack):
    s = session(mini_pack, capacity=None, latency=0.1)
    outcomes = s.step([get(i) for i in range(1, 6)])
    assert {o.ended_at for o in outcomes} == {0.1}


def test_think_time_advances_the_clock_between_steps(mini_pack):
    s = session(mini_pack, think_time=Constant(seconds=2.0), latency=0.1)
    s.step([get(1)])
    (o,) = s.step([get(2)])
    assert o.started_at == pytest.approx(4.1)
    assert s.now == pytest.approx(4.2)


def test_handler_sees_the_world_at_the_moment_it_runs(mini_pack):
    s = session(mini_pack, latency=1.0)
    # the read starts first but its handler runs after the write (latency 1.0 vs 0.5)
    read, write = s.step([get(3), CallRequest("upgrade_customer", {"customer_id": "C-0003"})])
    assert write.ended_at == 0.5 and read.ended_at == 1.0
    assert read.result["tier"] == "gold"


def test_max_steps_truncates(mini_pack):
    s = session(mini_pack, budgets=Budgets(max_steps=2))
    s.step([get(1)])
    assert not s.done
    s.step([get(1)])
    assert s.truncated and s.truncation_reason == "max_steps"
    with pytest.raises(SessionClosed):
        s.step([get(1)])


def test_max_sim_seconds_truncates_mid_call(mini_pack):
    s = session(mini_pack, latency=30.0, budgets=Budgets(max_sim_seconds=10.0))
    (o,) = s.step([get(1)])
    assert s.truncated and s.truncation_reason == "max_sim_seconds"
    assert s.now == 10.0
    assert o.error["code"] == "cancelled"


def test_call_timeout_while_queued_gives_504_and_drops_the_request(mini_pack):
    s = session(mini_pack, capacity=1, latency=4.0, call_timeout=5.0)
    a, b = s.step([get(1), get(2)])
    assert a.ok and a.ended_at == 4.0
    assert b.error["status"] == 504 and b.ended_at == 5.0


def test_a_write_that_times_out_still_lands_later(mini_pack):
    tools = dict(mini_pack.catalog)
    tools["upgrade_customer"] = tools["upgrade_customer"].with_spec(latency=Constant(seconds=8.0))
    s = Session(tools, mini_pack.world(), call_timeout=5.0)
    (o,) = s.step([CallRequest("upgrade_customer", {"customer_id": "C-0001"})])
    assert o.error["code"] == "timeout" and s.now == 5.0
    assert s.world.get("Customer", "C-0001")["tier"] == "standard"
    s.step([get(1)], think=5.0)
    assert s.world.get("Customer", "C-0001")["tier"] == "gold"


def test_a_timed_out_write_still_pending_lands_when_the_episode_ends(mini_pack):
    """An episode is scored on the world its actions leave behind: the server side of a call
    the client gave up on lands, at its own time, even when the agent answers first."""
    tools = dict(mini_pack.catalog)
    tools["upgrade_customer"] = tools["upgrade_customer"].with_spec(latency=Constant(seconds=8.0))
    s = Session(tools, mini_pack.world(), call_timeout=5.0)
    (o,) = s.step([CallRequest("upgrade_customer", {"customer_id": "C-0001"})])
    assert o.error["code"] == "timeout"
    s.finish("I could not upgrade the customer", think=0.0)
    assert s.now == 5.0
    assert s.world.get("Customer", "C-0001")["tier"] == "gold"
    (change,) = s.world.diff()
    assert (change.entity, change.id) == ("Customer", "C-0001")
    assert s.world.get("Customer", "C-0001", as_of=7.9)["tier"] == "standard"
    assert s.world.get("Customer", "C-0001", as_of=8.0)["tier"] == "gold"


def test_a_pending_write_lands_once_however_the_episode_ends(mini_pack):
    tools = dict(mini_pack.catalog)
    tools["upgrade_customer"] = tools["upgrade_customer"].with_spec(latency=Constant(seconds=8.0))
    s = Session(tools, mini_pack.world(), call_timeout=5.0, budgets=Budgets(max_steps=2))
    s.step([CallRequest("upgrade_customer", {"customer_id": "C-0001"})])
    s.step([get(1)], think=10.0)  # landed in the simulation, then the step budget ends it
    assert s.truncated
    assert len(s.world.diff()) == 1 and len(s.world.log_since(0)) == 1


def test_unknown_tools_and_bad_arguments_are_answers_not_crashes(mini_pack):
    s = session(mini_pack)
    unknown, bad = s.step(
        [CallRequest("drop_tables", {}), CallRequest("get_customer", {"customer_id": 5})]
    )
    assert unknown.error["status"] == 404 and "drop_tables" in unknown.error["message"]
    assert bad.error["status"] == 422 and bad.error["details"][0]["argument"] == "customer_id"
    assert s.invalid_reason is None


def test_an_uninjected_handler_crash_marks_the_episode_invalid(mini_pack):
    s = session(mini_pack)
    (o,) = s.step([CallRequest("explode", {"customer_id": "C-0001"})])
    assert o.error == {"status": 500, "code": "internal_error", "message": "internal server error"}
    assert "database connection lost" in s.invalid_reason
    assert "database" not in str(o.observation())  # the agent never sees backend internals


def test_duplicate_call_ids_are_made_unique(mini_pack):
    s = session(mini_pack)
    a, b = s.step(
        [
            CallRequest("get_customer", {"customer_id": "C-0001"}, "x"),
            CallRequest("get_customer", {"customer_id": "C-0002"}, "x"),
        ]
    )
    assert a.call_id == "x" and b.call_id != "x"


def test_a_sandbox_session_keeps_call_ids_unique_within_its_record_without_growing(mini_pack):
    """A long-lived session with a bounded record remembers only the ids it still records:
    ids stay unique among the last ``record_limit`` calls, and memory does not grow."""
    s = session(mini_pack, record_limit=4)
    seen = []
    for i in range(40):
        (out,) = s.step([CallRequest("get_customer", {"customer_id": "C-0001"}, "x" if i % 3
                                     else None)])
        seen.append(out.call_id)
        assert len(set(seen[-4:])) == len(seen[-4:])
    assert len(s.pipeline._ids) == 4
    assert [c.call_id for c in s.recorder.calls] == seen[-4:]


def test_an_unbounded_session_numbers_generated_ids_by_calls_issued(mini_pack):
    s = session(mini_pack)
    ids = [s.step([CallRequest("get_customer", {"customer_id": "C-0001"}, cid)])[0].call_id
           for cid in (None, "x", "x", None)]
    assert ids == ["call_1", "x", "x_3", "call_4"]


def test_trajectory_records_every_call_with_times_and_the_world_diff(mini_pack):
    from simforge.trace import TaskSpec

    s = session(mini_pack, latency=0.1)
    s.step([get(1), CallRequest("upgrade_customer", {"customer_id": "C-0001"})], text="checking")
    s.finish("done")
    traj = s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t", instruction="go")
    )
    assert [c.tool for c in traj.tool_calls] == ["get_customer", "upgrade_customer"]
    assert [(c.started_at, c.ended_at) for c in traj.tool_calls] == [(0.0, 0.1), (0.0, 0.5)]
    assert traj.tool_calls[0].message_index == traj.tool_calls[1].message_index == 1
    assert [m.role for m in traj.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert traj.simulation.final_answer == "done" and traj.simulation.terminated
    (change,) = traj.simulation.world_diff
    assert (change.entity, change.id, change.op) == ("Customer", "C-0001", "updated")
    assert change.fields["tier"].new == "gold"


tool_names = st.sampled_from(
    ["get_customer", "list_customers", "upgrade_customer", "search_customers", "nope"]
)
call_st = st.tuples(tool_names, st.integers(1, 45), st.booleans())
actions = st.lists(st.lists(call_st, min_size=0, max_size=4), min_size=1, max_size=6)


def _replay(pack, seed: int, steps) -> str:
    from simforge.trace import TaskSpec

    tools = dict(pack.catalog)
    tools["get_customer"] = tools["get_customer"].with_spec(
        capacity=2, latency=LogNormal(median=0.2, sigma=0.7)
    )
    s = Session(
        tools,
        pack.world(),
        seed=seed,
        think_time=LogNormal(median=1.0, sigma=0.5),
        call_timeout=3.0,
    )
    for step in steps:
        calls = []
        for name, i, bad in step:
            args = (
                {"customer_id": f"C-{i:04d}"} if name != "search_customers" else {"query": f"{i}"}
            )
            if name == "list_customers":
                args = {"limit": i}
            if bad:
                args = {"customer_id": i}
            calls.append(CallRequest(name, args))
        s.step(calls)
    s.finish("end")
    return s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t")
    ).model_dump_json()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10**6), steps=actions)
def test_same_seed_and_actions_give_an_identical_trajectory(mini_pack, seed, steps):
    assert _replay(mini_pack, seed, steps) == _replay(mini_pack, seed, steps)


def test_different_seeds_give_different_timings(mini_pack):
    steps = [[("get_customer", 1, False)]] * 3
    assert _replay(mini_pack, 1, steps) != _replay(mini_pack, 2, steps)


class SimpyCapacity(Capacity):
    """The reference for the lean way in and out of a tool's capacity: simpy's own ``Request``
    and ``Release`` events for every call, as the kernel used before."""

    def __init__(self, env, capacity=1):
        super().__init__(env, capacity)
        self.requests = {}

    def hold(self, holder):
        self.requests[holder] = self.request()

    def free(self, holder):
        self.release(self.requests.pop(holder))


def _contended(pack, seed: int, steps, capacity: int, latency, load: bool) -> str:
    from simforge.faults import FaultProfile
    from simforge.trace import TaskSpec

    tools = dict(pack.catalog)
    for name in ("get_customer", "upgrade_customer"):
        tools[name] = tools[name].with_spec(capacity=capacity, latency=latency)
    background = [
        {
            "kind": "load",
            "name": "crm",
            "tools": ["get_customer", "upgrade_customer"],
            "rate": 3.0,
            "args": {"customer_id": {"entity": "Customer"}},
        }
    ]
    profile = FaultProfile.model_validate({"name": "p", "background": background if load else []})
    s = Session(tools, pack.world(), seed=seed, faults=profile, call_timeout=1.0)
    for step in steps:
        calls = [CallRequest(name, {"customer_id": f"C-{i:04d}"}) for name, i, _ in step]
        s.step(calls, think=0.1 * len(step))
    return s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t")
    ).model_dump_json() + repr((s.now, s.pipeline.background_counts))


contended_calls = st.lists(
    st.tuples(st.sampled_from(["get_customer", "upgrade_customer"]), st.integers(1, 9), st.just(0)),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    steps=st.lists(contended_calls, min_size=1, max_size=6),
    capacity=st.integers(1, 3),
    latency=st.sampled_from(
        [Constant(seconds=0.0), Constant(seconds=0.1), LogNormal(median=0.3, sigma=0.8)]
    ),
    load=st.booleans(),
)
def test_a_free_slot_is_taken_and_given_back_exactly_as_simpy_would(
    mini_pack, monkeypatch, seed, steps, capacity, latency, load
):
    lean = _contended(mini_pack, seed, steps, capacity, latency, load)
    with monkeypatch.context() as m:
        m.setattr(calls_module, "Capacity", SimpyCapacity)
        reference = _contended(mini_pack, seed, steps, capacity, latency, load)
    assert lean == reference


def _grants(kind: type[Capacity]) -> list[tuple]:
    """Capacity 1, held by a lean holder until t=1 while a process waits for it; another event
    at t=1, scheduled before the slot is freed, looks at the slots after the free."""
    env = simpy.Environment()
    slots = kind(env, 1)
    holder = object()
    slots.hold(holder)
    log: list[tuple] = []

    def waiter():
        with slots.request() as req:
            yield req
            log.append(("granted", env.now, len(slots.users)))

    env.process(waiter())
    env.timeout(1.0).callbacks.append(lambda _: slots.free(holder))
    env.timeout(1.0).callbacks.append(
        lambda _: log.append(("peek", env.now, len(slots.users), len(slots.queue)))
    )
    env.run()
    return log


def test_a_freed_slot_goes_to_the_queue_when_simpys_release_would_be_processed():
    # free at once, as release() does; the waiter is served where the Release event would be
    assert _grants(Capacity) == _grants(SimpyCapacity) == [("peek", 1.0, 0, 1), ("granted", 1.0, 1)]


# -- the think time: advance() against simpy's run(until=...) -----------------------------------

_moments = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_moments, st.booleans(), st.sampled_from([None, 0.0, 0.5]), st.booleans()),
             max_size=12),
    st.sampled_from([0.5, 1.0, 2.0, 2.5]),
)
def test_advancing_the_clock_processes_what_run_until_processes(events, at):
    """Events at and around ``at`` (URGENT and NORMAL, some scheduling more at the same moment
    or later, URGENT or not): ``advance`` leaves the clock, the events processed and their order
    as ``env.run(until=at)`` does, and the next run goes on the same."""
    from simforge.sim.session import advance

    def play(run):
        env = simpy.Environment()
        log = []

        def schedule(name, delay, urgent, follow, follow_urgent):
            event = simpy.Event(env)
            event._ok, event._value = True, None

            def callback(_):
                log.append((name, env.now))
                if follow is not None:
                    schedule(f"{name}+", follow, follow_urgent, None, False)

            event.callbacks.append(callback)
            env.schedule(event, simpy.events.URGENT if urgent else simpy.events.NORMAL, delay)

        for k, (moment, urgent, follow, follow_urgent) in enumerate(events):
            schedule(k, moment, urgent, follow, follow_urgent)
        run(env)
        first = (env.now, list(log))
        env.run(until=10.0)
        return first, log

    assert play(lambda env: advance(env, at)) == play(lambda env: env.run(until=at))


def _advance_with_an_event(env: simpy.Environment, at: float) -> None:
    """What ``advance`` did before it stopped allocating (and still does for another kind of
    environment): an URGENT no-op event at ``at``, stepped to (``run(until=at)`` without the
    ``StopSimulation`` round trip)."""
    from simforge.sim.session import _advance_to_an_event

    _advance_to_an_event(env, at)  # a stop there is caught by ``run_until``, as it was


def test_a_think_in_a_real_time_environment_takes_its_wall_time() -> None:
    """simpy's ``RealtimeEnvironment`` waits in ``step`` for each event's wall time: a think
    there still steps to an event at its end, and so takes its time."""
    import time

    from simforge.sim.session import advance

    env = simpy.rt.RealtimeEnvironment(factor=0.05, strict=False)
    start = time.monotonic()
    advance(env, 1.0)
    assert env.now == 1.0 and time.monotonic() - start >= 0.04


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_moments, st.booleans(), st.sampled_from([None, 0.0, 0.5]), st.booleans()),
             max_size=12),
    st.sampled_from([0.5, 1.0, 2.0, 2.5]),
    st.one_of(st.none(), _moments),
)
def test_advancing_the_clock_stops_where_a_stopping_event_stops_it(events, at, stop):
    """With an event that stops the simulation (the session's deadline, as ``Budgets``
    schedules it) anywhere among the others: the clock, the events processed and their order
    are those of the event-scheduling ``advance``, up to the stop and in the next run (the
    no-op left at ``at`` included)."""
    from simforge.sim.session import advance

    def play(run):
        env = simpy.Environment()
        log = []
        for k, (moment, urgent, follow, follow_urgent) in enumerate(events):
            event = simpy.Event(env)
            event._ok, event._value = True, None

            def callback(_, k=k, follow=follow, follow_urgent=follow_urgent):
                log.append((k, env.now))
                if follow is not None:
                    env.timeout(follow).callbacks.append(lambda _: log.append((f"{k}+", env.now)))

            event.callbacks.append(callback)
            env.schedule(event, simpy.events.URGENT if urgent else simpy.events.NORMAL, moment)
        if stop is not None:
            env.timeout(stop).callbacks.append(simpy.core.StopSimulation.callback)
        run(env)
        first = (env.now, list(log), sorted((t, p) for t, p, *_ in env._queue))
        env.run(until=10.0)
        return first, log, env.now

    assert play(lambda env: advance(env, at)) == play(lambda env: _advance_with_an_event(env, at))


def test_a_think_that_reaches_the_time_budget_truncates_there(mini_pack):
    s = session(mini_pack, budgets=Budgets(max_sim_seconds=5.0))
    s.step([get(1)], think=4.0)
    assert s.step([get(2)], think=3.0) == []
    assert s.truncated and s.truncation_reason == "max_sim_seconds" and s.now == 5.0


def test_a_closed_session_is_freed_by_reference_counting_and_refuses_steps(mini_pack):
    """``Session.close`` breaks the session's cycles (simpy's early-bound classes, events in
    the queue, the pipeline's back-references, a capacity's marker): with the collector off,
    dropping the last reference frees it, mid-episode, with background load and calls queued
    on a capacity."""
    import gc
    import weakref

    from simforge.faults import FaultProfile

    tools = dict(mini_pack.catalog)
    tools["get_customer"] = tools["get_customer"].with_spec(
        capacity=1, latency=LogNormal(median=0.3, sigma=0.8))
    profile = FaultProfile.model_validate({"name": "p", "background": [
        {"kind": "load", "name": "crm", "tools": ["get_customer"], "rate": 3.0,
         "args": {"customer_id": {"entity": "Customer"}}}]})
    gc.collect()
    gc.disable()
    try:
        s = Session(tools, mini_pack.world(), seed=3, faults=profile, call_timeout=1.0,
                    budgets=Budgets(max_sim_seconds=60.0))
        for _ in range(4):
            s.step([get(1), get(2), get(3)], think=0.5)
        # (World and Recorder have slots without weak references: the session holds them)
        refs = [weakref.ref(x) for x in (s, s.env, s.pipeline, *s.resources.values())]
        assert len(refs) == 4
        now, calls = s.now, len(s.recorder.calls)
        s.close()
        assert (s.now, len(s.recorder.calls), s.truncation_reason) == (now, calls, "closed")
        with pytest.raises(SessionClosed):
            s.step([get(1)])
        del s
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()


def test_closing_an_ended_session_keeps_how_it_ended(mini_pack):
    s = session(mini_pack, budgets=Budgets(max_steps=1))
    s.step([get(1)])
    s.close()
    assert (s.truncated, s.truncation_reason) == (True, "max_steps")
