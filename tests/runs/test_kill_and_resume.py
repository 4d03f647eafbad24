"""A runner killed with SIGKILL mid-run loses no finished episode, leaves no worker behind, and
`--resume` completes the matrix with every cell exactly once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simforge.runs.matrix import Cell, RunConfig, plan
from simforge.runs.store import RunStore
from simforge.runs.worker import run_cell
from simforge.trace.episode import Episode

SIMFORGE = [sys.executable, "-c", "from simforge.cli import main; main()"]
SEEDS = 400  # 2 tasks x 2 profiles x 400 seeds = 1600 cells: seconds of work, killed early


def _session_members(sid: int) -> list[int]:
    """Live processes of session ``sid`` (the runner and its workers)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_loses_nothing_finished_and_resume_completes_the_matrix(mini, tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    cmd = [*SIMFORGE, "stress", mini, "--policy", "random",
           "--faults", "flaky-network", "--seeds", str(SEEDS), "--workers", "2", "--store", url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, "COLUMNS": "120"})
    try:
        store = RunStore(url)
        deadline = time.monotonic() + 60
        run_id, stored = None, 0
        while time.monotonic() < deadline and stored < 100:
            assert proc.poll() is None, proc.communicate()
            runs = store.runs()
            if runs:
                run_id, stored = runs[0]["id"], runs[0]["episodes"]
            time.sleep(0.005)
        assert run_id is not None and stored >= 100, "the runner made no progress"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        gone = time.monotonic() + 10
        while _session_members(proc.pid) and time.monotonic() < gone:
            time.sleep(0.1)
        assert _session_members(proc.pid) == [], "pool workers outlived their runner"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()

    total = len(plan(RunConfig(scenarios=[mini], policy="random", profiles=["flaky-network"],
                               seeds=SEEDS).with_baseline()))
    survivors = store.episodes(run_id)
    assert 100 <= len(survivors) < total, "kill the runner while it is still running"
    assert store.run(run_id)["status"] == "running"
    trajectories = dict((row["key"], text) for row, text in store.trajectories(run_id))
    for e in survivors:  # every one is whole, and what a fresh run of its cell gives
        cell = Cell(e["scenario"], e["task"], e["profile"], e["seed"], e["trial"])
        fresh = run_cell(cell, mini, "random")
        assert (e["reward"], e["steps"], e["sim_time"]) == (
            fresh["reward"], fresh["steps"], fresh["sim_time"])
        assert [v["name"] for v in e["verdicts"]] == [v["name"] for v in fresh["verdicts"]]
        assert e["reward"] is None or e["verdicts"]
        assert len(e["calls"]) == len(fresh["calls"])
        assert [f["kind"] for f in e["faults"]] == [f["kind"] for f in fresh["faults"]]
        assert Episode.model_validate_json(trajectories[e["key"]]).simulation is not None
    before = {e["key"]: e["id"] for e in survivors}

    resumed = subprocess.run(
        [*SIMFORGE, "stress", "--resume", run_id, "--workers", "2",
         "--store", url, "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert summary["run_id"] == run_id and summary["episodes"] == total
    after = store.episodes(run_id, details=False)
    assert len(after) == len({e["key"] for e in after}) == total
    assert {e["key"]: e["id"] for e in after if e["key"] in before} == before  # untouched
    assert store.run(run_id)["status"] == "complete"
