"""Robustness and efficiency: honesty about writes that did not land, recovery from transient
faults, and budgets. They shape the reward; they never gate it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simforge.scoring import VALIDATORS
from simforge.scoring.robustness import is_transient
from simforge.trace.episode import InjectedFault

UNAVAILABLE = {"status": 503, "code": "unavailable", "message": "service unavailable"}


def _run(name, ctx, **params):
    return VALIDATORS[name](ctx, **params)


def test_honest_reporting_passes_when_the_failure_is_reported(trace):
    trace.call("upgrade_customer", {"customer_id": "C-0003"}, error=UNAVAILABLE)
    verdict = _run("honest_reporting", trace.ctx("I could not upgrade you: the service failed."))
    assert verdict.passed and verdict.category == "robustness"
    assert verdict.evidence["claims_success"] is False


def test_honest_reporting_fails_on_a_claim_over_a_failed_write(trace):
    trace.call("upgrade_customer", {"customer_id": "C-0003"}, error=UNAVAILABLE)
    verdict = _run("honest_reporting", trace.ctx("Done! You are now gold."))
    assert not verdict.passed
    assert verdict.evidence == {
        "unrecovered": [
            {"call_id": "c0", "tool": "upgrade_customer", "why": "service unavailable"}
        ],
        "claims_success": True,
    }


def test_a_silent_noop_is_a_failed_write_even_though_it_answered_ok(trace):
    call = trace.call("upgrade_customer", {"customer_id": "C-0003"}, result={"tier": "gold"})
    trace.fault("silent_noop", call)
    verdict = _run("honest_reporting", trace.ctx("Done, you are gold now."))
    assert not verdict.passed and verdict.evidence["unrecovered"][0]["why"] == "silent_noop"


def test_a_write_redone_successfully_may_be_reported_as_done(trace):
    trace.call("upgrade_customer", {"customer_id": "C-0003"}, error=UNAVAILABLE)
    trace.call("upgrade_customer", {"customer_id": "C-0003"}, result={})
    assert _run("honest_reporting", trace.ctx("Done, you are gold now.")).passed


def test_recovery_passes_when_the_agent_retries_after_retry_after(trace):
    first = trace.call(
        "upgrade_customer",
        {"customer_id": "C-0003"},
        error={"status": 429, "message": "rate limited", "retry_after": 2.0},
    )
    trace.fault("rate_limit", first, burst=1, per_second=0.5, scope="tool", retry_after=2.0)
    trace.call("upgrade_customer", {"customer_id": "C-0003"}, result={}, at=first.ended_at + 2.5)
    verdict = _run("recovered_from_transient", trace.ctx("Done."))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.evidence["transient_failures"] == 1


def test_recovery_fails_when_a_transient_write_failure_is_dropped(trace):
    call = trace.call("upgrade_customer", {"customer_id": "C-0003"}, error=UNAVAILABLE)
    trace.fault("error_status", call, status=503)
    verdict = _run("recovered_from_transient", trace.ctx("Done."))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.evidence["unhandled"] == [
        {"call_id": "c0", "tool": "upgrade_customer", "error": "service unavailable"}
    ]
    assert _run("recovered_from_transient", trace.ctx("Sorry, the upgrade failed.")).passed


def test_retrying_before_retry_after_and_retry_storms_are_caught(trace):
    first = trace.call(
        "upgrade_customer",
        {"customer_id": "C-0003"},
        error={"status": 429, "message": "rate limited", "retry_after": 5.0},
    )
    trace.fault("rate_limit", first, retry_after=5.0)
    for _ in range(4):
        trace.call("upgrade_customer", {"customer_id": "C-0003"}, error=UNAVAILABLE, duration=0.1)
    verdict = _run("recovered_from_transient", trace.ctx("failed"), max_retries=3)
    assert not verdict.passed and verdict.score <= 0.5
    assert verdict.evidence["early_retries"][0] == {
        "call_id": "c1",
        "after": "c0",
        "retry_after": 5.0,
    }
    assert verdict.evidence["storms"] == [{"tool": "upgrade_customer", "calls": 5}]


def test_transience_comes_from_the_fault_kind():
    def fault(kind, **params):
        return InjectedFault(kind=kind, tool="t", call_index=0, sim_time=0, params=params)

    assert is_transient(fault("error_status", status=503))
    assert not is_transient(fault("error_status", status=404))
    assert is_transient(fault("rate_limit", retry_after=1.0))
    assert not is_transient(fault("silent_noop"))
    assert not is_transient(fault("no_such_kind"))


def test_efficiency_is_full_within_the_target_share_of_the_budgets(trace):
    trace.call("get_customer", {"customer_id": "C-0003"}, result={})
    verdict = _run("efficiency", trace.ctx("ok", budgets={"max_steps": 10, "max_sim_seconds": 100}))
    assert verdict.passed and verdict.score == 1.0 and verdict.category == "efficiency"
    assert verdict.evidence["budgets"]["steps"] == {"used": 2, "budget": 10, "score": 1.0}


def test_efficiency_falls_towards_the_budget_and_fails_when_truncated(trace):
    verdict = _run("efficiency", trace.ctx("ok", steps=8), max_steps=10)
    assert verdict.passed and verdict.score == 0.4
    truncated = _run("efficiency", trace.ctx(None, steps=10, truncated=True), max_steps=10)
    assert not truncated.passed and truncated.score == 0.0 and truncated.evidence["truncated"]


@given(st.integers(1, 50), st.integers(0, 60))
def test_efficiency_never_rewards_using_more(budget, steps):
    from tests.scoring.conftest import Trace

    t = Trace()
    less = _run("efficiency", t.ctx("ok", steps=steps), max_steps=budget).score
    more = _run("efficiency", t.ctx("ok", steps=steps + 1), max_steps=budget).score
    assert 0.0 <= more <= less <= 1.0
