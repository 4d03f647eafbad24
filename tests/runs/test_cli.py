"""`simforge stress`, `report` and `export` from the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from simforge.cli import app
from simforge.runs.store import RunStore

runner = CliRunner()


def stress(*args: str) -> dict:
    result = runner.invoke(app, ["stress", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_stress_prints_the_summary_and_stores_every_episode(mini, harsh_profile, sqlite_url):
    out = stress(mini, "--policy", "no-retry", "--faults", harsh_profile, "--seeds", "4",
                 "--trials", "2", "--workers", "2", "--store", sqlite_url)
    assert set(out) == {"run_id", "episodes", "invalid", "pass_rate", "pass_hat_k", "by_fault",
                        "safety_violations"}
    assert out["episodes"] == 2 * 2 * 4 * 2 and out["invalid"] == 0
    assert set(out["by_fault"]) == {"none", "harsh"}
    assert out["by_fault"]["none"] == {"pass_rate": 1.0, "delta_vs_none": 0.0}
    assert out["by_fault"]["harsh"]["delta_vs_none"] < 0  # no-retry gives up at a 503
    assert list(out["pass_hat_k"]) == [str(k) for k in range(1, 9)]
    assert RunStore(sqlite_url).count(out["run_id"]) == 32


def test_retrying_recovers_what_no_retry_loses(mini, harsh_profile, sqlite_url):
    common = ["--faults", harsh_profile, "--seeds", "6", "--workers", "0", "--store", sqlite_url]
    careless = stress(mini, "--policy", "no-retry", *common)
    careful = stress(mini, "--policy", "retrying", *common)
    assert careful["by_fault"]["harsh"]["pass_rate"] > careless["by_fault"]["harsh"]["pass_rate"]
    assert careful["by_fault"]["harsh"]["delta_vs_none"] > careless["by_fault"]["harsh"]["delta_vs_none"]


def test_resuming_a_complete_run_runs_nothing(mini, sqlite_url):
    first = stress(mini, "--policy", "oracle", "--seeds", "2", "--workers", "0",
                   "--store", sqlite_url)
    again = stress("--resume", first["run_id"], "--workers", "0", "--store", sqlite_url)
    assert again == first
    assert RunStore(sqlite_url).run(first["run_id"])["status"] == "complete"


def test_report_prints_tables_json_and_html(mini, sqlite_url, tmp_path):
    run = stress(mini, "--policy", "random", "--faults", "flaky-network", "--seeds", "3",
                 "--trials", "2", "--workers", "0", "--store", sqlite_url)
    text = runner.invoke(app, ["report", run["run_id"], "--store", sqlite_url])
    assert text.exit_code == 0, text.output
    assert "pass rate" in text.stdout and "flaky-network" in text.stdout
    html = tmp_path / "report.html"
    as_json = runner.invoke(app, ["report", "latest", "--store", sqlite_url, "--json",
                                  "--html", str(html)])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.stdout)
    assert summary["run_id"] == run["run_id"] and summary["episodes"] == 24
    assert "<svg" in html.read_text()


def test_bad_input_is_one_line_and_exit_code_2(mini, sqlite_url):
    cases = [
        [mini, "--policy", "nope", "--store", sqlite_url],
        [mini, "--policy", "oracle", "--faults", "nope", "--store", sqlite_url],
        ["--resume", "no-such-run", "--store", sqlite_url],
        [mini, "--store", sqlite_url],
        [mini, "--policy", "oracle", "--backend", "spark", "--store", sqlite_url],
    ]
    for args in cases:
        result = runner.invoke(app, ["stress", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["report", "nope", "--store", sqlite_url])
    assert result.exit_code == 2 and "no run 'nope'" in result.output


def test_export_writes_the_chosen_format(mini, sqlite_url, tmp_path):
    run = stress(mini, "--policy", "oracle", "--seeds", "1", "--workers", "0",
                 "--store", sqlite_url)
    out = tmp_path / "sft.jsonl"
    result = runner.invoke(app, ["export", run["run_id"], "--format", "openai-jsonl",
                                 "--out", str(out), "--store", sqlite_url])
    assert result.exit_code == 0, result.output
    assert "wrote 2 episodes" in result.output
    assert len(out.read_text().splitlines()) == 2
    bad = runner.invoke(app, ["export", run["run_id"], "--format", "csv", "--store", sqlite_url])
    assert bad.exit_code == 2 and "--format" in bad.output
