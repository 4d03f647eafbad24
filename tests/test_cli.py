"""The command line: `run --json`, the listings, the demo, and clear errors for bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from simforge.cli import app

MINI = str(Path(__file__).resolve().parent / "fixtures" / "scenarios" / "mini.yaml")
runner = CliRunner()


def test_run_json_has_one_record_per_task_and_seed():
    result = runner.invoke(app, ["run", MINI, "--policy", "oracle", "--seeds", "3", "--json"])
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    assert [(e["task"], e["seed"]) for e in episodes] == [
        ("upgrade", 0),
        ("upgrade", 1),
        ("upgrade", 2),
        ("note", 0),
        ("note", 1),
        ("note", 2),
    ]
    for e in episodes:
        assert {
            "scenario",
            "task",
            "seed",
            "policy",
            "reward",
            "terminated",
            "truncated",
            "steps",
            "sim_time",
        } <= set(e)
        assert (
            e["reward"] == 1.0
            and e["terminated"]
            and not e["truncated"]
            and e["policy"] == "oracle"
        )


def test_run_noop_scores_zero():
    result = runner.invoke(app, ["run", MINI, "--policy", "noop", "--task", "upgrade", "--json"])
    episodes = json.loads(result.stdout)["episodes"]
    assert [e["reward"] for e in episodes] == [0.0, 0.0]


def test_run_is_deterministic_across_invocations():
    a = runner.invoke(app, ["run", MINI, "--seeds", "2", "--json"]).stdout
    b = runner.invoke(app, ["run", MINI, "--seeds", "2", "--json"]).stdout
    assert a == b


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    result = runner.invoke(app, ["run", "nope/missing-v1"])
    assert result.exit_code == 2 and "unknown scenario 'nope/missing-v1'" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["run", MINI, "--policy", "genius"])
    assert result.exit_code == 2 and "unknown policy 'genius'" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x/y-v1\npack: mini\ntasks: []\n")
    result = runner.invoke(app, ["run", str(bad)])
    assert result.exit_code == 2 and "tasks" in result.output and str(bad) in result.output


def test_scenarios_and_tools_are_listed_as_json():
    result = runner.invoke(app, ["scenarios", "list", "--json"])
    assert result.exit_code == 0, result.output
    scenarios = json.loads(result.stdout)["scenarios"]
    assert len(scenarios) >= 3
    assert all({"id", "pack", "tasks"} <= set(s) for s in scenarios)
    result = runner.invoke(app, ["tools", "list", "--json"])
    assert result.exit_code == 0, result.output
    tools = json.loads(result.stdout)["tools"]
    assert len(tools) >= 20
    assert all(t["input_schema"]["type"] == "object" and t["description"] for t in tools)


def test_demo_shows_a_real_drop_under_faults_in_80_columns(tmp_path, monkeypatch):
    """Traces ingested and synthesized into a pack; every task played by a careful client and
    by one that does not retry (3 seeds x 2 trials, each fault kind also alone) and by two
    floors, without faults and under a profile every scenario declares solvable. The careful
    client solves everything, the no-op and the cheater nothing, and the client that does not
    retry drops under faults: the report shows it with an interval, pass^k curves and the fault
    kinds attributed, and compare calls the gap real. The summary fits 80 columns in 40 lines,
    and progress is shown although the output is a pipe."""
    import sqlite3

    from rich.console import Console

    monkeypatch.setattr("simforge.cli.console", Console(width=80))
    result = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 80, result.stdout
    said = " ".join(result.stdout.split())
    assert "B (no-retry) is worse than A (retrying) by" in said
    assert "each kind alone: " in said and "latency +0.0" in said
    assert "simulating and scoring:" in result.stderr  # progress lines, piped
    assert (tmp_path / "synth-pack" / "pack.yaml").is_file()

    report = (tmp_path / "report.html").read_text()
    assert "simforge demo: no-retry on" in report and "<script" not in report
    assert re.search(r"<td class=\"l\">flaky-network</td><td>\d+</td><td>(\d+\.\d)%</td>\s*"
                     r"<td>\d+\.\d%\u2013\d+\.\d%</td>", report)  # below 100%, with its interval
    rate = float(re.search(r"<td class=\"l\">flaky-network</td><td>\d+</td><td>(\d+\.\d)%",
                           report).group(1))
    assert rate < 100
    curves = next(part for part in report.split("<svg") if "pass^k by fault profile" in part)
    assert curves.count("<polyline") >= 2  # pass^k curves, not a sentence
    attributed = report[report.index("By fault kind: each kind alone"):]
    assert attributed.count("<td class=\"l\">alone") == 4  # flaky-network's four kinds
    assert "B (no-retry) is worse than A (retrying)" in report
    compare = (tmp_path / "compare.html").read_text()
    assert "is worse than A (retrying) by" in compare
    # every run has a report, and each lists all of them with links that resolve
    reports = [tmp_path / "report.html", *sorted((tmp_path / "reports").glob("*.html"))]
    assert len(reports) == 8
    for page in reports:
        html = page.read_text()
        assert "Runs side by side" in html
        for href in re.findall(r'href="([^"#]+)"', html):
            assert (page.parent / href).is_file(), (page, href)

    db = sqlite3.connect(tmp_path / "runs.db")
    rows = db.execute("SELECT policy, profile, reward, scenario FROM episodes").fetchall()
    hand = [r for r in rows if not r[3].startswith("synth/")]
    careful = [r for r in hand if r[0] == "retrying"]
    assert careful and all(r[2] == 1.0 for r in careful), "the careful client solves every task"
    assert {r[1] for r in careful} >= {"none", "flaky-network", "flaky-network--timeout"}
    assert all(r[2] == 0.0 for r in hand if r[0] in ("noop", "cheater"))
    careless = [r for r in hand if r[0] == "no-retry" and r[1] == "flaky-network"]
    assert any(r[2] < 1.0 for r in careless)
    assert any(r[3].startswith("synth/") for r in rows)


def test_demo_json_names_every_run_and_the_comparison(tmp_path):
    result = runner.invoke(app, ["demo", "--json", "--out", str(tmp_path), "--seeds", "1",
                                 "--trials", "1"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ingest"]["episodes"] > 0 and data["ingest"]["rejected"] == 0
    assert set(data["runs"]) == {f"{p}{s}" for p in ("retrying", "no-retry", "noop", "cheater")
                                 for s in ("", " (synthesized)")}
    assert Path(data["report"]).is_file() and Path(data["compare_report"]).is_file()
    assert data["compare"]["verdict"] and data["summaries"]["no-retry"]["attribution"]
    assert (data["seeds"], data["trials"]) == (1, 1)


def _native_source(tmp_path: Path) -> Path:
    """The oracle's episodes of every mini task as a native JSONL trace (a replay source)."""
    import simforge
    from simforge.policies import get_policy
    from simforge.runs.episode import play_episode

    env = simforge.make(MINI)
    path = tmp_path / "source.jsonl"
    path.write_text("".join(
        play_episode(env, get_policy("oracle"), seed=0, task=t).trajectory.model_dump_json()
        + "\n" for t in ("upgrade", "note")
    ))
    return path


def test_run_takes_the_policy_specs_stress_takes(tmp_path):
    source = _native_source(tmp_path)
    result = runner.invoke(app, ["run", MINI, "--policy", f"replay:{source}", "--seeds", "1",
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert [e["reward"] for e in json.loads(result.stdout)["episodes"]] == [1.0, 1.0]


def test_run_policy_errors_are_one_line_and_exit_2(tmp_path, monkeypatch):
    cases = {
        "replay": "needs a source",
        f"replay:{tmp_path / 'nope.jsonl'}": "does not exist",
        "replay:": "the argument after ':' is empty",
        "oracle:x": "takes no argument",
    }
    for spec, message in cases.items():
        result = runner.invoke(app, ["run", MINI, "--policy", spec])
        said = " ".join(result.output.split())  # the console wraps long lines
        assert result.exit_code == 2, (spec, result.output)
        assert message in said and "Traceback" not in said, spec
    # an endpoint that is down is the endpoint's failure: every episode invalid (not 0), the
    # reason told in one line, the run complete
    monkeypatch.setenv("SIMFORGE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("SIMFORGE_LLM_RETRIES", "0")
    result = runner.invoke(
        app, ["run", MINI, "--policy", "llm:some-model", "--seeds", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert "invalid: 2 of 2 episode(s)" in said and "http://127.0.0.1:1/v1" in said
    assert "Traceback" not in result.output
    episodes = json.loads(result.stdout)["episodes"]
    assert [e["reward"] for e in episodes] == [None, None]
    assert all("policy unavailable" in e["invalid_reason"] for e in episodes)


def test_run_seeds_must_be_positive():
    result = runner.invoke(app, ["run", MINI, "--seeds", "0"])
    assert result.exit_code == 2 and "Invalid value for '--seeds'" in result.output


def test_piped_output_is_wide_enough_for_the_reports(monkeypatch):
    """Rich lays out at 80 columns off a terminal, cutting task and tool names; the CLI's
    consoles take 160 there, unless $COLUMNS says otherwise."""
    from simforge.console import PIPED_WIDTH, make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console().width == PIPED_WIDTH  # pytest captures stdout: not a terminal
    monkeypatch.setenv("COLUMNS", "100")
    assert make_console().width == 100
