"""Every registered fault kind, one by one: it fires and is recorded, the same seed gives the
same trajectory, and probability 0 is the same trajectory as no fault at all. A kind added to
the registry without an entry in ``CONFIGS`` fails here, so none goes untested."""

from __future__ import annotations

import pytest

from simforge.faults import KINDS
from simforge.sim import CallRequest
from simforge.trace import TaskSpec

from .conftest import get, upgrade

CONFIGS: dict[str, dict] = {
    "timeout": {},
    "latency": {"multiplier": 4},
    "error_status": {"status": 503},
    "rate_limit": {"burst": 1, "per_second": 0.01},
    "connection_reset": {},
    "empty_response": {},
    "partial_result": {"mode": "null_fields"},
    "stale_read": {"lag": 10},
    "write_lag": {"lag": 10},
    "schema_drift": {"rename": {"email": "mail"}},
    "duplicate_effect": {},
    "silent_noop": {},
    "outage": {},
    "flapping": {"up": 1, "down": 100},
    "prompt_injection": {},
    "malformed_body": {},
    "truncated_body": {},
    "garbage_body": {},
    "slow_body": {},
    "wrong_content_type": {},
    "header_patch": {"set": {"X-Served-By": "edge-7"}},
    "token_expiry": {"after": 0},
    "permission_revoked": {},
    "clock_skew": {},
    "wrong_value": {},
    "body_patch": {"patch": {"status": "frozen"}},
    "long_output": {},
    "tool_rename": {},
    "distractor_tools": {},
    "param_rename": {"rename": {"customer_id": "id"}},
    "tool_delayed": {"until": 1000},
}


def test_every_registered_kind_has_a_config_here():
    assert set(CONFIGS) == set(KINDS)


def steps(n: int = 12) -> list[list[CallRequest]]:
    """Reads and writes alternating, so read-only and write-only kinds both get calls."""
    return [[get(1 + i % 5)] if i % 2 else [upgrade(1 + i % 5)] for i in range(n)]


def play(make_session, rules, seed):
    s = make_session(rules, seed=seed)
    for step in steps():
        s.step(step, think=2.0)
    s.finish("end")
    traj = s.recorder.trajectory(s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t"))
    return s, traj.model_dump_json(exclude={"simulation": {"fault_profile"}})


def rule(kind: str, p: float) -> dict:
    return {"id": "r", "fault": {"kind": kind, **CONFIGS[kind]}, "probability": p}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_each_kind_fires_is_recorded_and_is_deterministic(make_session, kind):
    session, always = play(make_session, [rule(kind, 1.0)], seed=3)
    fired = [f for o in session.recorder.calls for f in o.faults if f.rule == "r"]
    if session.surface is not None:  # surface kinds decide once, for the whole episode
        fired += [f for f in session.surface.fired if f["rule"] == "r"]
    assert fired, f"{kind}: never fired at probability 1"
    for f in fired:
        assert (f["kind"] if isinstance(f, dict) else f.kind) == kind
    _, none = play(make_session, [], seed=3)
    assert always != none, f"{kind}: fired but left no trace in the trajectory"
    # the same seed, the same schedule; probability 0, no fault at all
    assert play(make_session, [rule(kind, 0.5)], seed=8)[1] == \
        play(make_session, [rule(kind, 0.5)], seed=8)[1]
    assert play(make_session, [rule(kind, 0.0)], seed=8)[1] == play(make_session, [], seed=8)[1]
