"""Worker processes give (and store) exactly the episodes the parent would; failures become
invalid records."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simforge.runs.local import run_local
from simforge.runs.matrix import RunConfig, chunks, plan
from simforge.runs.runner import execute, prepare
from simforge.runs.store import RunStore
from simforge.runs.worker import run_cell, run_cells

SIMFORGE = [sys.executable, "-c", "from simforge.cli import main; main()"]

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


def _stored(store: RunStore, run_id: str) -> dict[str, tuple]:
    """Everything a stored episode says, by cell key, but the row ids and the times."""
    texts = dict((row["key"], text) for row, text in store.trajectories(run_id))
    out = {}
    for e in store.episodes(run_id):
        summary = tuple(e[f] for f in ("reward", "passed", "steps", "sim_time", "failed",
                                       "invalid_reason", "truncation_reason"))
        verdicts = [(v["name"], v["passed"], v["score"], v["evidence"]) for v in e["verdicts"]]
        calls = [(c["idx"], c["call_id"], c["tool"], c["ok"], c["status"], c["started_at"])
                 for c in e["calls"]]
        faults = [(f["kind"], f["tool"], f["call_index"], f["rule"]) for f in e["faults"]]
        out[e["key"]] = (summary, verdicts, calls, faults, texts[e["key"]])
    return out


@pytest.fixture
def matrix(mini) -> RunConfig:
    return RunConfig(scenarios=[mini], policy="random", profiles=["flaky-network"], seeds=6,
                     trials=2).with_baseline()


def test_pool_workers_store_exactly_what_the_runner_stores_in_process(matrix, tmp_path):
    """Workers write their own chunks (3 cells each here, 8 handed out at a time): every cell
    is stored once, whole, identical to the in-process run, and the progress callback sees
    each cell once, after its chunk is committed."""
    inline = RunStore(f"sqlite:///{tmp_path / 'inline.db'}")
    first = prepare(inline, matrix)
    assert execute(inline, first, workers=0) == len(first.plan)
    pooled = RunStore(f"sqlite:///{tmp_path / 'pooled.db'}")
    second = prepare(pooled, matrix)
    assert len(chunks(second.plan.cells, 2)) == 16
    seen: list[str] = []

    def on_record(record: dict, written: bool) -> None:
        assert written and record["trajectory"] is None
        assert record["verdicts"] is None and record["calls"] is None  # in the store
        assert record["key"] in pooled.done_keys(second.run_id)  # committed before it is seen
        seen.append(record["key"])

    assert execute(pooled, second, workers=2, on_record=on_record) == len(second.plan)
    assert sorted(seen) == sorted(c.key for c in second.plan.cells)
    assert _stored(pooled, second.run_id) == _stored(inline, first.run_id)
    assert pooled.run(second.run_id)["status"] == "complete"


def test_resuming_with_workers_runs_each_missing_cell_once(matrix, tmp_path):
    reference = RunStore(f"sqlite:///{tmp_path / 'reference.db'}")
    whole = prepare(reference, matrix)
    execute(reference, whole, workers=0)
    store = RunStore(f"sqlite:///{tmp_path / 'runs.db'}")
    started = prepare(store, matrix)
    early = started.plan.cells[::5]
    store.add_episodes(started.run_id, run_cells(early, started.plan.refs, matrix.policy,
                                                 profiles=started.plan.profiles))
    before = {e["key"]: e["id"] for e in store.episodes(started.run_id, details=False)}
    resumed = prepare(store, resume=started.run_id)
    assert len(resumed.todo) == len(started.plan) - len(early)
    assert execute(store, resumed, workers=2) == len(resumed.todo)
    after = store.episodes(started.run_id, details=False)
    assert len(after) == len({e["key"] for e in after}) == len(started.plan)
    assert {e["key"]: e["id"] for e in after if e["key"] in before} == before
    assert _stored(store, started.run_id) == _stored(reference, whole.run_id)
    again = prepare(store, resume=started.run_id)
    assert again.todo == [] and execute(store, again, workers=2) == 0


@pytest.mark.slow
def test_runs_are_byte_identical_across_worker_counts_and_hash_seeds(mini, tmp_path):
    exported = []
    for workers, hash_seed in (("1", "1"), ("2", "2"), ("0", "3")):
        url = f"sqlite:///{tmp_path / f'w{workers}.db'}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        for args in (["stress", mini, "--policy", "random", "--faults", "flaky-network",
                      "--seeds", "5", "--workers", workers, "--store", url, "--json"],
                     ["export", "latest", "--format", "native", "--store", url,
                      "--out", str(tmp_path / f"w{workers}.jsonl")]):
            done = subprocess.run([*SIMFORGE, *args], capture_output=True, text=True, env=env,
                                  timeout=300)
            assert done.returncode == 0, done.stderr
            if args[0] == "stress":
                run_id = json.loads(done.stdout.splitlines()[-1])["run_id"]
        text = (tmp_path / f"w{workers}.jsonl").read_text()
        exported.append(text.replace(run_id, "RUN"))  # the one thing that differs, by design
    assert exported[0] and exported[0] == exported[1] == exported[2]
