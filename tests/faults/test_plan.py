"""Seeded fault plans: probability 0 changes nothing, the same seed gives the same schedule,
another tool's calls never shift this tool's decisions; load and drift emerge in the kernel."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.faults import FaultProfile
from simforge.sim import CallRequest, Session
from simforge.trace import TaskSpec

from .conftest import get

KINDS = st.sampled_from(
    [
        {"kind": "timeout"},
        {"kind": "latency", "multiplier": 3},
        {"kind": "error_status", "status": 500},
        {"kind": "connection_reset", "effect": "applied"},
        {"kind": "partial_result", "mode": "truncate_list"},
        {"kind": "stale_read", "lag": 5},
        {"kind": "write_lag", "lag": 5},
        {"kind": "duplicate_effect"},
        {"kind": "silent_noop"},
        {"kind": "prompt_injection"},
    ]
)
TOOLS = ["get_customer", "list_customers", "upgrade_customer", "create_note"]
CALLS = st.lists(
    st.lists(st.tuples(st.sampled_from(TOOLS), st.integers(1, 30)), min_size=1, max_size=3),
    min_size=1,
    max_size=8,
)
settings.register_profile(
    "faults",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def request(tool: str, i: int) -> CallRequest:
    args = {
        "get_customer": {"customer_id": f"C-{i:04d}"},
        "list_customers": {"limit": i},
        "upgrade_customer": {"customer_id": f"C-{i:04d}"},
        "create_note": {"customer_id": f"C-{i:04d}", "text": "x"},
    }[tool]
    return CallRequest(tool, args)


def play(make_session, rules, seed, steps) -> str:
    s = make_session(rules, seed=seed, capacity=2)
    for step in steps:
        s.step([request(t, i) for t, i in step], think=1.5)
    s.finish("end")
    return s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t")
    ).model_dump_json(exclude={"simulation": {"fault_profile"}})


@settings(settings.get_profile("faults"))
@given(seed=st.integers(0, 10**6), fault=KINDS, steps=CALLS)
def test_probability_zero_is_identical_to_no_faults(make_session, seed, fault, steps):
    rules = [{"id": "off", "fault": fault, "probability": 0.0}]
    assert play(make_session, rules, seed, steps) == play(make_session, [], seed, steps)


@settings(settings.get_profile("faults"))
@given(seed=st.integers(0, 10**6), fault=KINDS, steps=CALLS, p=st.floats(0.1, 0.9))
def test_same_seed_gives_the_same_schedule(make_session, seed, fault, steps, p):
    rules = [{"id": "r", "fault": fault, "probability": p}]
    assert play(make_session, rules, seed, steps) == play(make_session, rules, seed, steps)


def schedule(s: Session, tool: str) -> list[tuple[int, str]]:
    return [(f.call_index, f.kind) for o in s.recorder.calls if o.tool == tool for f in o.faults]


@settings(settings.get_profile("faults"))
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 12),
    extra=st.lists(st.integers(0, 3), min_size=12, max_size=12),
)
def test_calls_to_another_tool_do_not_shift_this_tools_decisions(make_session, seed, n, extra):
    rules = [
        {"id": "a", "fault": {"kind": "error_status"}, "probability": 0.4},
        {"id": "b", "fault": {"kind": "latency", "multiplier": 2}, "probability": 0.3},
    ]
    alone = make_session(rules, seed=seed)
    mixed = make_session(rules, seed=seed)
    for i in range(n):
        alone.step([get(1 + i)])
        mixed.step([CallRequest("list_customers", {})] * extra[i] + [get(1 + i)])
    assert schedule(alone, "get_customer") == schedule(mixed, "get_customer")


def test_different_seeds_give_different_schedules(make_session):
    rules = [{"id": "a", "fault": {"kind": "error_status"}, "probability": 0.5}]
    runs = []
    for seed in (1, 2):
        s = make_session(rules, seed=seed)
        for i in range(30):
            s.step([get(1 + i % 20)])
        runs.append(schedule(s, "get_customer"))
    assert runs[0] != runs[1]


LOAD = {
    "kind": "load",
    "name": "crm-users",
    "tools": ["get_customer"],
    "rate": 4.0,
    "args": {"customer_id": {"entity": "Customer"}},
}


def timeouts(make_session, background) -> int:
    s = make_session([], seed=3, background=background, capacity=2, latency=1.0, call_timeout=5.0)
    failures = 0
    for i in range(20):
        (o,) = s.step([get(1 + i)], think=10.0)
        failures += o.error is not None and o.error["code"] == "timeout"
    return failures


def test_background_load_on_a_small_pool_makes_agent_calls_queue_and_time_out(make_session):
    assert timeouts(make_session, []) == 0
    assert timeouts(make_session, [LOAD]) >= 5


def test_background_calls_are_not_in_the_agents_trajectory(make_session):
    s = make_session([], background=[LOAD], capacity=2, latency=0.2)
    s.step([get(1)], think=30.0)
    assert [o.tool for o in s.recorder.calls] == ["get_customer"]
    assert s.pipeline.background_counts["get_customer"] > 50


def test_drift_changes_the_world_while_the_agent_thinks(make_session):
    drift = {
        "kind": "drift",
        "name": "promotions",
        "entity": "Customer",
        "every": 30,
        "where": {"tier": "standard"},
        "set": {"tier": "silver"},
    }
    s = make_session([], background=[drift], seed=4)
    (before,) = s.step([get(1)], think=0.0)
    s.step([get(1)], think=3600.0)
    promoted = [c for c in s.world.diff() if c.fields.get("tier") == ("standard", "silver")]
    assert before.result["tier"] == "standard" and len(promoted) >= 20


def test_an_empty_profile_gives_no_plan(make_session):
    assert make_session([]).plan is None
    assert FaultProfile(name="x").empty


@settings(settings.get_profile("faults"))
@given(seed=st.integers(0, 10**6), steps=CALLS, p=st.floats(0.2, 0.9))
def test_sessions_sharing_one_profile_play_as_if_each_had_its_own(mini_pack, seed, steps, p):
    """What a profile's rules are against each tool is worked out once and shared by every
    session of the profile; a session's draws, windows and gates stay its own."""
    rules = [
        {"id": "w", "fault": {"kind": "error_status"}, "probability": p,
         "when": {"after_calls": 1}},
        {"id": "g", "fault": {"kind": "latency", "multiplier": 2}, "probability": p,
         "target": {"tools": ["get_*", "list_*"]}},
        {"id": "a", "fault": {"kind": "timeout"}, "probability": p,
         "target": {"args": {"limit": {"gt": 10}}}},
    ]

    def profile() -> FaultProfile:
        return FaultProfile.model_validate({"name": "test", "rules": rules})

    def trajectory(s: Session) -> list[tuple[str, int, list[str]]]:
        return [(o.tool, o.call_index, [f.rule for f in o.faults]) for o in s.recorder.calls]

    shared = profile()
    first = Session(mini_pack.catalog, mini_pack.world(), seed=seed, faults=shared)
    second = Session(mini_pack.catalog, mini_pack.world(), seed=seed + 1, faults=shared)
    own = [Session(mini_pack.catalog, mini_pack.world(), seed=s, faults=profile())
           for s in (seed, seed + 1)]
    for step in steps:  # the shared sessions interleaved, each own session alone
        for s in (first, second):
            s.step([request(t, i) for t, i in step], think=1.0)
    for s in own:
        for step in steps:
            s.step([request(t, i) for t, i in step], think=1.0)
    assert trajectory(first) == trajectory(own[0])
    assert trajectory(second) == trajectory(own[1])
