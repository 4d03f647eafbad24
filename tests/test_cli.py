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


def test_demo_runs_the_whole_pipeline(tmp_path):
    """Traces ingested and synthesized into a pack; every hand-written task, without faults and
    under a profile its scenario declares solvable: the careful reference client solves it, the
    no-op and the cheater score nothing; a run store and an HTML report are written."""
    result = runner.invoke(app, ["demo", "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ingest"]["episodes"] > 0 and data["ingest"]["rejected"] == 0
    assert data["synth"]["tools"] > 0 and (tmp_path / "synth-pack" / "pack.yaml").is_file()
    assert Path(data["report"]).is_file() and "<svg" in Path(data["report"]).read_text()
    # every run has a report, and each lists all of them with links that resolve
    report = Path(data["report"])
    reports = [report, *sorted((tmp_path / "reports").glob("*.html"))]
    assert len(reports) == len(data["runs"]) == 6
    for page in reports:
        html = page.read_text()
        assert "Runs side by side" in html and html.count("</tr>") > 6
        for href in re.findall(r'href="([^"]+)"', html):
            assert (page.parent / href).is_file(), (page, href)
    episodes = [e for e in data["episodes"] if not e["scenario"].startswith("synth/")]
    by_policy = {p: [e for e in episodes if e["policy"] == p] for p in ("retrying", "noop", "cheater")}
    assert all(by_policy.values())
    assert {e["faults"] for e in by_policy["retrying"]} == {"none", "flaky-network"}
    failed = [(e["scenario"], e["task"], e["faults"], e["reward"]) for e in by_policy["retrying"] if e["reward"] != 1.0]
    assert not failed
    assert all(e["reward"] == 0.0 for e in by_policy["noop"] + by_policy["cheater"])
    assert any(e["scenario"].startswith("synth/") for e in data["episodes"])
    table = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert table.exit_code == 0 and "cheater" in table.stdout and "report:" in table.stdout


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
