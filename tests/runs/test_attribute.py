"""Fault attribution by ablation: each kind of a profile played alone on the same seeds, so a
kind that only ever fires beside a harmful one is not blamed for its harm."""

from __future__ import annotations

import json

from rich.console import Console
from typer.testing import CliRunner

from simforge.cli import app
from simforge.faults.library import resolve_profile
from simforge.report.metrics import summarize
from simforge.report.terminal import kinds_table
from simforge.runs.matrix import RunConfig, ablate, plan
from simforge.runs.store import RunStore

runner = CliRunner()

# latency fires on every call and hurts no one; a 503 on half the calls stops a no-retry agent
TWO_KINDS = """\
name: slow-and-failing
description: Every call slow, half of them a 503.
rules:
  - id: slow
    fault: {kind: latency, multiplier: 2.0}
  - id: gateway
    fault: {kind: error_status, status: 503}
    probability: 0.5
"""


def _profile(tmp_path):
    path = tmp_path / "slow-and-failing.yaml"
    path.write_text(TWO_KINDS)
    return str(path)


def stress(*args: str) -> dict:
    result = runner.invoke(app, ["stress", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_profile_is_split_into_one_profile_per_fault_kind(tmp_path, mini):
    profile = resolve_profile(_profile(tmp_path))
    parts = ablate(profile)
    assert {name: kind for name, (kind, _) in parts.items()} == {
        "slow-and-failing--latency": "latency", "slow-and-failing--error_status": "error_status"}
    assert [r.id for r in parts["slow-and-failing--latency"][1].rules] == ["slow"]
    assert ablate(resolve_profile("hostile-content")) == {}  # one kind: it measures itself
    config = RunConfig(scenarios=[mini], policy="no-retry", profiles=[_profile(tmp_path)],
                       seeds=3, attribute=True).with_baseline()
    the_plan = plan(config)
    assert [p for p in dict.fromkeys(c.profile for c in the_plan.cells)] == [
        "none", "slow-and-failing", "slow-and-failing--latency",
        "slow-and-failing--error_status"]
    assert len(the_plan) == 2 * 4 * 3
    # the ablated profile resolves from its file, as a worker will resolve it
    alone = resolve_profile(the_plan.profiles["slow-and-failing--error_status"])
    assert [r.id for r in alone.rules] == ["gateway"]


def test_attribution_clears_a_kind_that_only_fired_beside_the_harmful_one(tmp_path, mini,
                                                                         sqlite_url):
    common = [mini, "--policy", "no-retry", "--faults", _profile(tmp_path), "--seeds", "4",
              "--workers", "0", "--store", sqlite_url]
    shared = stress(*common)
    store = RunStore(sqlite_url)
    blamed = {r["kind"]: r for r in summarize(store.episodes(shared["run_id"]))["attribution"]}
    assert blamed["latency"]["how"] == "co-fired"
    assert blamed["latency"]["delta_vs_none"] < 0  # shared blame: it fired on every failing call

    attributed = stress(*common, "--attribute")
    assert attributed["by_fault"] == shared["by_fault"]  # ablations stay out of the rates
    episodes = store.episodes(attributed["run_id"])
    assert len(episodes) == 2 * 4 * 4
    summary = summarize(episodes, run_id=attributed["run_id"])
    assert summary["episodes"] == 2 * 4 * 2 and summary["ablation_episodes"] == 2 * 4 * 2
    rows = {r["kind"]: r for r in summary["attribution"]}
    assert rows["latency"]["how"] == "alone" and rows["latency"]["delta_vs_none"] == 0.0
    assert rows["error_status"]["how"] == "alone" and rows["error_status"]["delta_vs_none"] < 0
    assert rows[None]["how"] == "together"
    assert rows[None]["delta_vs_none"] == shared["by_fault"]["slow-and-failing"]["delta_vs_none"]
    console = Console(record=True, width=80)
    console.print(kinds_table(summary))
    text = console.export_text()
    assert "each kind alone" in text and "co-fired" not in text


def test_resume_with_attribute_adds_the_ablations_to_a_stored_run(tmp_path, mini, sqlite_url):
    run = stress(mini, "--policy", "no-retry", "--faults", _profile(tmp_path), "--seeds", "2",
                 "--workers", "0", "--store", sqlite_url)
    store = RunStore(sqlite_url)
    assert store.count(run["run_id"]) == 2 * 2 * 2
    again = stress("--resume", run["run_id"], "--attribute", "--workers", "0",
                   "--store", sqlite_url)
    assert again["run_id"] == run["run_id"] and store.count(run["run_id"]) == 2 * 2 * 4
    stored = store.run(run["run_id"])
    assert stored["status"] == "complete" and stored["total"] == 16
    assert stored["config"]["attribute"] is True
    rows = summarize(store.episodes(run["run_id"]))["attribution"]
    assert {r["how"] for r in rows if r["kind"]} == {"alone"}
