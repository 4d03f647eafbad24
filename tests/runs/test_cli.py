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
                        "safety_violations", "noise"}
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
    assert _said(result, f"wrote 2 episodes to {out} (tools in {tmp_path / 'sft.tools.json'})")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["tools_id"] in json.loads(
        (tmp_path / "sft.tools.json").read_text())
    inline = tmp_path / "inline.jsonl"
    result = runner.invoke(app, ["export", run["run_id"], "--out", str(inline), "--tools",
                                 "inline", "--store", sqlite_url])
    assert result.exit_code == 0 and "tools in" not in result.output
    assert json.loads(inline.read_text().splitlines()[0])["tools"]
    pairs = runner.invoke(app, ["export", run["run_id"], "--format", "dpo-pairs", "--out",
                                str(tmp_path / "dpo.jsonl"), "--store", sqlite_url])
    assert pairs.exit_code == 0 and _said(pairs, "warning: no pair: a pair needs two episodes")
    for args, says in ((["--format", "csv"], "--format"), (["--tools", "both"], "--tools"),
                       (["--format", "dpo-pairs", "--margin", "-1"], "margin -1.0 < 0")):
        bad = runner.invoke(app, ["export", run["run_id"], *args, "--out",
                                  str(tmp_path / "bad"), "--store", sqlite_url])
        assert bad.exit_code == 2 and _said(bad, says), (args, bad.output)
    assert not (tmp_path / "bad").exists()


def _said(result, message: str) -> bool:
    """Whether the output says ``message`` (the console wraps long lines, even inside paths)."""
    return "".join(message.split()) in "".join(result.output.split())


def test_stress_counts_must_be_positive(mini, sqlite_url):
    for option in ("--seeds", "--trials"):
        result = runner.invoke(app, ["stress", mini, "--policy", "oracle", option, "0",
                                     "--store", sqlite_url])
        assert result.exit_code == 2, result.output
        assert f"Invalid value for '{option}'" in result.output
        assert "validation error" not in result.output


def test_reading_commands_never_create_a_store(tmp_path, monkeypatch):
    """Nor does resuming: the run to resume is in a store that exists."""
    monkeypatch.chdir(tmp_path)
    for command in (["report", "latest"], ["export", "latest"], ["stress", "--resume", "r1"]):
        result = runner.invoke(app, [*command, "--store", "missing.db"])
        assert result.exit_code == 2, result.output
        assert _said(result, f"no run store at sqlite:///{tmp_path / 'missing.db'}")
        assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_stress_creates_a_store_file_but_no_folders(mini, tmp_path):
    missing = tmp_path / "no" / "such" / "runs.db"
    result = runner.invoke(app, ["stress", mini, "--policy", "oracle", "--store", str(missing)])
    assert result.exit_code == 2, result.output
    assert _said(result, f"the folder {missing.parent} does not exist")
    assert not (tmp_path / "no").exists()
    stress(mini, "--policy", "oracle", "--seeds", "1", "--workers", "0",
           "--store", str(tmp_path / "new.db"))
    assert (tmp_path / "new.db").is_file()


def test_an_unreachable_store_is_one_line_without_the_password(mini):
    url = "postgresql://u:secret-pw@127.0.0.1:1/db"
    for command in (["report", "latest"], ["export", "latest"],
                    ["stress", mini, "--policy", "oracle"]):
        result = runner.invoke(app, [*command, "--store", url])
        assert result.exit_code == 2, (command, result.output)
        assert _said(result, "cannot open the run store postgresql+psycopg://u:***@127.0.0.1:1/db")
        assert not _said(result, "secret-pw") and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) <= 4  # one message, however wrapped


def test_exported_ids_are_unique_per_episode(mini, harsh_profile, sqlite_url, tmp_path):
    run = stress(mini, "--policy", "retrying", "--faults", harsh_profile, "--seeds", "2",
                 "--trials", "2", "--workers", "0", "--store", sqlite_url)
    assert run["episodes"] == 2 * 2 * 2 * 2
    for fmt in ("openai-jsonl", "native"):
        out = tmp_path / f"{fmt}.jsonl"
        result = runner.invoke(app, ["export", run["run_id"], "--format", fmt, "--out", str(out),
                                     "--store", sqlite_url])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        ids = [row["id"] for row in rows]
        assert len(ids) == len(set(ids)) == 16, fmt
        key = rows[0]["metadata"]["key"] if fmt == "openai-jsonl" else \
            rows[0]["outcome"]["labels"]["key"]
        assert ids[0] == f"{run['run_id']}/{key}"


def test_replaying_the_source_traces_against_their_synthesized_pack(shared_data, tmp_path):
    """The audit's case: every episode of the tau2 airline file replays in the pack made from
    it (none invalid for want of a source episode)."""
    from simforge.synth.pipeline import synthesize

    traces = shared_data / "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
    # all 20, the failed ones too, less the gold ones with nothing that proves the work
    report = synthesize([traces], tmp_path / "pack", keep_nongold=True)
    out = stress(str(tmp_path / "pack" / "scenario.yaml"), "--policy", f"replay:{traces}",
                 "--workers", "0", "--store", str(tmp_path / "runs.db"))
    assert out["episodes"] == 20 - len(report.unproven) == report.tasks
    reasons = [e["invalid_reason"] for e in RunStore(str(tmp_path / "runs.db")).episodes(
        out["run_id"]) if e["reward"] is None]
    # tasks with nothing to check are ungraded, never for want of a source episode
    assert all(r.startswith("ungraded") for r in reasons), reasons
    assert len(reasons) < out["episodes"]


def test_piped_stress_prints_progress_lines(mini, sqlite_url):
    """Off a terminal there is no bar to draw; long work still says how far it got."""
    result = runner.invoke(app, ["stress", mini, "--policy", "oracle", "--seeds", "10",
                                 "--workers", "0", "--store", sqlite_url])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("oracle: ")]
    assert 2 <= len(lines) <= 11, lines
    assert lines[-1].startswith("oracle: 20/20 (100%), pass 100.0%, invalid 0")
