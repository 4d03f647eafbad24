"""The plan's keyed draws: counter-based (splitmix64 over integers), walked by the gaps between
firings. Whether a rule fires on the k-th call to a tool is a function of (seed, rule, tool, k)
alone, whichever calls were asked before; the firings are Bernoulli(p); and the schedule is the
same in another process under another hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from simforge.faults.plan import _Compiled, _threshold, _Tool, key_of, uniform
from simforge.faults.rules import FaultRule

ROOT = Path(__file__).resolve().parents[2]


def compiled(p: float) -> _Compiled:
    return _Compiled(FaultRule.model_validate(
        {"id": "r", "fault": {"kind": "error_status"}, "probability": p}
    ))


class Schedule:
    """One rule's schedule against one tool in a session of ``seed``, as the plan keeps it."""

    def __init__(self, p: float, seed: int, tool: str = "t") -> None:
        c = compiled(p)
        pair = key_of("r", tool)
        once = (pair, -1, -1) if p >= 1 else (pair, _threshold(1 - p), _threshold((1 - p) ** 2))
        self.tool = _Tool(key_of(seed, "rule"), ([c], [c.log_q], [once]))

    def fires(self, index: int) -> bool:
        return self.tool.nexts[0] <= index and self.tool.fires(0, index)


@given(
    p=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**70),
    asked=st.lists(st.booleans(), min_size=1, max_size=200),
)
def test_a_calls_firing_does_not_depend_on_which_calls_were_asked_before(p, seed, asked):
    every = Schedule(p, seed)
    full = [every.fires(k) for k in range(len(asked))]
    some = Schedule(p, seed)
    # a call answered before the plan is asked (an unknown tool, a refusal) skips its index
    assert [some.fires(k) for k, ask in enumerate(asked) if ask] == [
        f for f, ask in zip(full, asked, strict=True) if ask
    ]


@given(key=st.integers(0, 2**64 - 1), counter=st.integers(0, 2**40))
def test_uniforms_are_in_the_half_open_unit_interval(key, counter):
    assert 0.0 < uniform(key, counter) <= 1.0


def test_firings_are_bernoulli_with_the_rules_probability():
    for p in (0.01, 0.2, 0.5, 0.9):
        fired = first = 0
        for seed in range(400):
            s = Schedule(p, seed)
            hits = [s.fires(k) for k in range(250)]
            fired += sum(hits)
            first += hits[0]
        n = 400 * 250
        assert abs(fired / n - p) < 4 * (p * (1 - p) / n) ** 0.5 + 1e-9, p
        assert abs(first / 400 - p) < 4 * (p * (1 - p) / 400) ** 0.5, p


def test_probability_one_fires_on_every_call():
    s = Schedule(1.0, 7)
    assert all(s.fires(k) for k in range(50))


def test_pairs_of_rules_and_tools_draw_independent_schedules():
    a = Schedule(0.5, 3, "get_customer")
    b = Schedule(0.5, 3, "list_customers")
    c = Schedule(0.5, 4, "get_customer")
    runs = [[s.fires(k) for k in range(64)] for s in (a, b, c)]
    assert runs[0] != runs[1] and runs[0] != runs[2]



SCRIPT = r"""
import json, sys
from simforge.faults import FaultProfile
from simforge.faults.plan import FaultPlan
from simforge.tools.spec import ToolSpec

profile = FaultProfile.model_validate({"name": "p", "rules": [
    {"id": "slow", "fault": {"kind": "latency", "multiplier": 2}, "probability": 0.3},
    {"id": "gw", "fault": {"kind": "error_status"}, "probability": 0.1,
     "target": {"tools": ["get_*"]}},
]})
out = {}
for seed in (0, 1, 12345678901234567890):
    plan = FaultPlan(profile, seed)
    for tool in ("get_customer", "list_orders"):
        spec = ToolSpec(name=tool, description="d", input_schema={})
        fired = []
        for k in range(200):
            fx = plan.decide(spec, f"c{k}", k, {}, 0.0)
            fired.append([r.rule for r in fx.records] if fx is not None else [])
        out[f"{seed}/{tool}"] = fired
print(json.dumps(out, sort_keys=True))
"""


def _schedules(hash_seed: str) -> dict[str, list[list[str]]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


def test_the_schedule_is_the_same_in_another_process_under_another_hash_seed():
    here, there = _schedules("0"), _schedules("4242")
    assert here == there
    assert any(any(f) for f in here["0/get_customer"])
    assert here["0/get_customer"] != here["1/get_customer"]


@given(key=st.integers(0, 2**64 - 1), q=st.floats(0.0, 1.0))
def test_a_keys_threshold_is_its_uniform_compared_with_the_probability(key, q):
    assert (key >= _threshold(q)) == (((key >> 11) + 1) * 2.0**-53 > q)
