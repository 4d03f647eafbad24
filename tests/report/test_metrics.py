"""The metrics a stress report is made of, on episodes whose answers are known."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simforge.report.metrics import (
    by_fault_kind,
    by_profile,
    distribution,
    flakiness,
    pass_hat_ks,
    safety_violations,
    stress_summary,
    summarize,
    wilson,
)


def ep(task="t", profile="none", seed=0, trial=0, passed=True, reward=None, faults=(),
       verdicts=(), scenario="s/x-v1", steps=2, sim_time=5.0):
    reward = (1.0 if passed else 0.0) if reward is None else reward
    return {"scenario": scenario, "task": task, "profile": profile, "seed": seed, "trial": trial,
            "passed": passed, "reward": reward, "invalid_reason": None, "failed": [],
            "faults": [{"kind": k} for k in faults], "verdicts": list(verdicts), "calls": [],
            "steps": steps, "sim_time": sim_time, "wall_s": 0.01}


def invalid(**kw):
    e = ep(**kw)
    e.update(reward=None, passed=False, invalid_reason="tool 'explode' crashed")
    return e


def test_wilson_matches_the_textbook_values():
    lo, hi = wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_brackets_the_observed_rate(successes, n):
    successes = min(successes, n)
    lo, hi = wilson(successes, n)
    assert 0.0 <= lo <= successes / n <= hi <= 1.0


def test_pass_hat_k_is_averaged_over_tasks():
    # task a: 3 of 4 pass; task b: 4 of 4
    episodes = [ep("a", seed=i, passed=i != 0) for i in range(4)] + \
               [ep("b", seed=i) for i in range(4)]
    ks = pass_hat_ks(episodes)
    assert list(ks) == [1, 2, 3, 4]
    assert ks[1] == pytest.approx((0.75 + 1) / 2)
    assert ks[2] == pytest.approx((math.comb(3, 2) / math.comb(4, 2) + 1) / 2)
    assert ks[4] == pytest.approx(0.5)


def test_robustness_deltas_are_paired_by_seed():
    episodes = [ep(seed=s) for s in range(4)]  # none: all pass
    episodes += [ep(profile="flaky", seed=0, passed=False, faults=["timeout"]),
                 ep(profile="flaky", seed=1, passed=True, faults=["latency"]),
                 ep(profile="flaky", seed=2, passed=False, faults=["timeout", "latency"]),
                 ep(profile="flaky", seed=3, passed=True)]
    profiles = by_profile(episodes)
    assert profiles["none"]["delta_vs_none"] == 0.0
    assert profiles["flaky"]["pass_rate"] == 0.5
    assert profiles["flaky"]["delta_vs_none"] == -0.5 and profiles["flaky"]["pairs"] == 4
    kinds = by_fault_kind(episodes)
    assert kinds["timeout"]["delta_vs_none"] == -1.0 and kinds["timeout"]["episodes"] == 2
    assert kinds["latency"]["delta_vs_none"] == -0.5
    split = by_fault_kind(episodes, split="scenario")
    assert set(split) == {"s/x-v1\ttimeout", "s/x-v1\tlatency"}


def test_a_profile_without_a_baseline_has_no_delta():
    assert by_profile([ep(profile="flaky")])["flaky"]["delta_vs_none"] is None


def test_safety_violations_count_failed_gate_verdicts_by_validator():
    bad = {"name": "no_collateral_damage", "category": "safety", "passed": False, "score": 0.0}
    cheat = {"name": "honeypot", "category": "integrity", "passed": False, "score": 0.0}
    fine = {"name": "state_matches", "category": "correctness", "passed": False, "score": 0.0}
    episodes = [ep(verdicts=[bad, fine]), ep(verdicts=[bad, cheat]), ep()]
    assert safety_violations(episodes) == {"honeypot": 1, "no_collateral_damage": 2}


def test_flakiness_is_reward_variance_across_trials():
    episodes = [ep(seed=0, trial=t, passed=t % 2 == 0) for t in range(4)]
    episodes += [ep(seed=1, trial=t) for t in range(4)]
    flaky = flakiness(episodes)
    assert flaky["cells"] == 2 and flaky["flaky_cells"] == 1
    assert flaky["max_variance"] == 0.25 and flaky["mean_variance"] == 0.125
    assert flakiness([ep()])["cells"] == 0


def test_invalid_episodes_are_counted_and_kept_out_of_rates():
    episodes = [ep(seed=0), ep(seed=1, passed=False), invalid(seed=2)]
    summary = summarize(episodes, run_id="r1")
    assert (summary["episodes"], summary["invalid"], summary["pass_rate"]) == (3, 1, 0.5)
    assert summary["invalid_rate"] == pytest.approx(1 / 3, abs=1e-6)
    assert summary["invalid_reasons"] == {"tool 'explode' crashed": 1}
    out = stress_summary(summary)
    assert out == {"run_id": "r1", "episodes": 3, "invalid": 1, "pass_rate": 0.5,
                   "pass_hat_k": {"1": 0.5, "2": 0.0},
                   "by_fault": {"none": {"pass_rate": 0.5, "delta_vs_none": 0.0}},
                   "safety_violations": {},
                   # one passing and one failing seed: all a detectable difference can be is 100%
                   "noise": {"flip_rate": None, "mdd": 1.0, "noise_floor": None}}


def test_distributions_give_quantiles():
    d = distribution([float(i) for i in range(1, 101)])
    # simforge.quantiles' one definition (inclusive, numpy's default): position p * (n - 1)
    assert (d["n"], d["p50"], d["p90"], d["max"]) == (100, 50.5, 90.1, 100.0)
    assert distribution([])["mean"] is None


def test_pass_hat_k_is_reported_at_a_bounded_set_of_k():
    episodes = [ep(seed=s, passed=s % 10 != 0) for s in range(300)]
    ks = list(pass_hat_ks(episodes))
    assert ks == [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128, 256, 300]
    assert list(pass_hat_ks(episodes[:5])) == [1, 2, 3, 4, 5]
