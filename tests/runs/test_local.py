"""Worker processes give exactly the episodes the parent would; failures become invalid records."""

from __future__ import annotations

from simforge.runs.local import run_local
from simforge.runs.matrix import RunConfig, plan
from simforge.runs.worker import run_cell

FIELDS = ("reward", "passed", "steps", "sim_time", "faults", "calls", "trajectory")


def test_two_worker_processes_reproduce_the_in_process_run(mini):
    config = RunConfig(scenarios=[mini], policy="random", profiles=["flaky-network"], seeds=3,
                       trials=2).with_baseline()
    the_plan = plan(config)
    inline = {r["key"]: r for b in run_local(the_plan.cells, the_plan.refs, "random", workers=0,
                                               profiles=the_plan.profiles) for r in b}
    pooled = {r["key"]: r for b in run_local(the_plan.cells, the_plan.refs, "random", workers=2,
                                               profiles=the_plan.profiles) for r in b}
    assert inline.keys() == pooled.keys() == {c.key for c in the_plan.cells}
    for key, record in inline.items():
        assert {f: record[f] for f in FIELDS} == {f: pooled[key][f] for f in FIELDS}, key


def test_a_crashing_policy_makes_an_invalid_record_not_a_lost_cell(mini, tmp_path):
    the_plan = plan(RunConfig(scenarios=[mini], policy="noop", seeds=1, tasks=["upgrade"]))
    (cell,) = the_plan.cells
    record = run_cell(cell, mini, f"replay:{tmp_path / 'missing.jsonl'}")
    assert record["reward"] is None and record["passed"] is False
    assert "runner error" in record["invalid_reason"]
    assert "does not exist" in record["invalid_reason"]
