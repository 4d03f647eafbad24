"""`simforge ingest` and `simforge export-episodes`, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simforge.cli import app
from simforge.trace.ingest import ingest

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def test_ingest_json_has_exactly_the_documented_shape() -> None:
    result = runner.invoke(app, ["ingest", str(FIXTURES / "otlp_genai.json"),
                                 str(FIXTURES / "openai_tool_calls.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert set(summary) == {"episodes", "tool_calls", "tools", "rejected", "formats", "by_tool"}
    assert summary["episodes"] == 5 and summary["tool_calls"] == 8
    assert summary["formats"] == {"otlp": 2, "openai": 3}
    assert summary["rejected"] == 0
    weather = summary["by_tool"]["get_weather"]
    assert set(weather) == {"calls", "errors", "p50_ms", "p95_ms", "p99_ms"}
    assert (weather["calls"], weather["errors"]) == (4, 1)
    assert weather["p50_ms"] == 310.0
    assert summary["by_tool"]["book_table"]["p99_ms"] is None, "no timing, no latency"
    assert summary["tools"] == len(summary["by_tool"])


def test_ingest_prints_a_table_and_writes_native_and_quarantine(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text((FIXTURES / "openai_tool_calls.jsonl").read_text() + '{"messages": 3}\n')
    out = tmp_path / "episodes.jsonl"
    quarantine = tmp_path / "rejected.jsonl"
    result = runner.invoke(app, ["ingest", str(bad), "--out", str(out),
                                 "--quarantine", str(quarantine)])
    assert result.exit_code == 0, result.output
    assert "get_weather" in result.stdout
    assert "1 records rejected" in result.stdout
    assert len(out.read_text().splitlines()) == 3
    entry = json.loads(quarantine.read_text())
    assert entry["line"] == 4 and entry["file"] == str(bad)


def test_strict_mode_stops_at_the_first_bad_record_with_exit_code_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "x"}]}\n{"messages": 3}\n')
    result = runner.invoke(app, ["ingest", str(bad), "--strict"])
    assert result.exit_code == 2
    assert f"{bad}:2" in result.output and "not an array" in result.output
    assert "Traceback" not in result.output


def test_nothing_readable_exits_1_without_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("this is not json")
    result = runner.invoke(app, ["ingest", str(junk), str(tmp_path / "missing.json"), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["rejected"] == 2
    assert "nothing could be read" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_unknown_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["ingest", str(FIXTURES / "otlp_genai.json"), "-f", "csv"])
    assert result.exit_code == 2 and "unknown format 'csv'" in result.output


def test_export_native_round_trips_and_openai_keeps_agent_calls(tmp_path: Path) -> None:
    sources = [str(FIXTURES / "anthropic_messages.json"), str(FIXTURES / "otlp_genai.json")]
    native = tmp_path / "episodes.jsonl.gz"
    assert runner.invoke(app, ["export-episodes", *sources, "--out", str(native)]).exit_code == 0
    original = ingest(sources, keep=True).collected
    again = ingest(native, keep=True)
    assert again.formats == {"native": len(original)}
    assert again.collected == original

    openai = tmp_path / "openai.jsonl"
    result = runner.invoke(app, ["export-episodes", *sources, "--to", "openai",
                                 "--out", str(openai)])
    assert result.exit_code == 0, result.output
    reread = ingest(openai, keep=True)
    assert reread.formats == {"openai": len(original)}
    for before, after in zip(original, reread.collected, strict=True):
        assert after.id == before.id
        assert [(c.call_id, c.tool, c.args) for c in after.tool_calls] == [
            (c.call_id, c.tool, c.args) for c in before.tool_calls]
        assert [c.result for c in after.tool_calls] == [c.result for c in before.tool_calls]
