"""What `simforge synth` and `simforge fidelity` do with odd inputs: several `--data` paths,
rejected trace records, tables of one name in two snapshots, nothing readable, a missing pack."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simforge.cli import app
from simforge.synth.pipeline import SynthWarning, synthesize
from simforge.synth.read.snapshot import load_snapshots
from simforge.synth.read.traces import NothingToLearn

from .conftest import ORDERS, shop_episodes

runner = CliRunner()

USERS = {f"user_{n}": {"name": f"User {n}", "email": f"u{n}@example.com"} for n in range(3)}


def _traces(tmp_path: Path, bad_line: bool = False) -> Path:
    lines = [e.model_dump_json() for e in shop_episodes()]
    if bad_line:
        lines.insert(2, '{"id": "broken", "messages": ')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_several_paths_after_one_data_option_are_all_read(tmp_path):
    """`--data A B C` as docs/synth.md writes it: B and C land among the positional trace
    paths; they are no traces but snapshots, so they are read as data and said so."""
    orders = _write(tmp_path / "data" / "orders.json", ORDERS)
    users = _write(tmp_path / "more" / "users.json", USERS)
    out = tmp_path / "p"
    result = runner.invoke(
        app,
        [
            "synth",
            str(_traces(tmp_path)),
            "--data",
            str(orders),
            str(users),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["entities"]["Order"] == 20 and summary["entities"]["User"] >= 3
    assert summary["read_as_data"] == [str(users)]
    assert summary["rejected"] == 0 and summary["rejections"] == []
    text = runner.invoke(
        app,
        [
            "synth",
            str(_traces(tmp_path)),
            "--data",
            str(orders),
            str(users),
            "--out",
            str(tmp_path / "q"),
        ],
    )
    assert text.exit_code == 0, text.output
    assert "read as --data" in text.stdout and "users.json" in text.stdout


def test_rejected_trace_records_are_counted_and_named(tmp_path, snapshot_dir):
    traces = _traces(tmp_path, bad_line=True)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a trace, not a snapshot\n")
    out = tmp_path / "p"
    result = runner.invoke(
        app,
        [
            "synth",
            str(traces),
            str(notes),
            "--data",
            str(snapshot_dir),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rejected"] == 2 and summary["read_as_data"] == []
    assert any(f"{traces}:3" in r for r in summary["rejections"])
    assert any(str(notes) in r for r in summary["rejections"])
    assert any("2 trace record(s) rejected" in w for w in summary["warnings"])
    text = runner.invoke(
        app, ["synth", str(traces), str(notes), "--data", str(snapshot_dir), "--out", str(out)]
    )
    assert text.exit_code == 0, text.output
    assert "2 trace records rejected" in text.stdout and f"{traces}:3" in text.stdout


def test_same_table_name_in_two_snapshots_is_kept_apart_and_warned(tmp_path):
    airline = _write(tmp_path / "airline" / "data" / "users.json", USERS)
    retail = _write(
        tmp_path / "retail" / "data" / "users.json",
        {"u9": {"name": "Nine", "orders": ["#W1"]}, "u8": {"name": "Eight", "orders": []}},
    )
    notes: list[str] = []
    tables = load_snapshots([airline.parent, retail.parent], notes)
    assert sorted(tables) == ["retail_users", "users"]
    assert len(tables["users"]) == 3 and len(tables["retail_users"]) == 2
    assert len(notes) == 1 and str(airline) in notes[0] and str(retail) in notes[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = synthesize(
            [], tmp_path / "p", data=[airline.parent, retail.parent], episodes=shop_episodes()
        )
    assert "RetailUser" in report.entities and report.entities["User"] >= 3
    assert any("retail_users" in w for w in report.warnings)
    assert any(issubclass(w.category, SynthWarning) and "users" in str(w.message) for w in caught)


def test_same_table_in_parts_with_the_same_fields_is_one_table(tmp_path):
    first = _write(tmp_path / "part1" / "users.json", dict(list(USERS.items())[:2]))
    second = _write(tmp_path / "part2" / "users.json", dict(list(USERS.items())[2:]))
    notes: list[str] = []
    tables = load_snapshots([first, second, first], notes)
    assert list(tables) == ["users"] and len(tables["users"]) == 3 and notes == []


def test_nothing_readable_exits_1_and_writes_no_pack(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": ')
    orders = _write(tmp_path / "orders.json", ORDERS)
    out = tmp_path / "p5"
    result = runner.invoke(app, ["synth", str(bad), str(orders), "--out", str(out)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "nothing could be read" in lines[0]
    assert str(bad) in lines[0] and "orders.json" in lines[0]
    assert not out.exists()
    result = runner.invoke(app, ["synth", str(bad), "--out", str(out), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["rejected"] == 1 and not out.exists()


def test_episodes_without_tool_calls_or_all_held_out_are_nothing_to_learn(tmp_path):
    talk = [e for e in shop_episodes() if not e.tool_calls]
    with pytest.raises(NothingToLearn, match="none of the 1 episodes read has a tool call"):
        synthesize([], tmp_path / "a", episodes=talk)
    with pytest.raises(NothingToLearn, match="holdout"):
        synthesize([], tmp_path / "b", episodes=shop_episodes(), holdout=1.0)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_fidelity_of_a_missing_pack_is_one_line_and_exit_2(tmp_path):
    traces = _traces(tmp_path)
    for pack, why in ((tmp_path / "nope", "no such pack directory"), (tmp_path, "no pack.yaml")):
        result = runner.invoke(app, ["fidelity", str(pack), str(traces)])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and str(pack) in lines[0] and why in lines[0]


def test_real_airline_and_retail_users_stay_apart(shared_data):
    envs = shared_data / "tau-bench" / "envs"
    notes: list[str] = []
    tables = load_snapshots([envs / "airline" / "data", envs / "retail" / "data"], notes)
    assert len(tables["users"]) == 500 and len(tables["retail_users"]) == 500
    assert "dob" in tables["users"][0] and "orders" in tables["retail_users"][0]
    assert len(notes) == 1 and "airline" in notes[0] and "retail" in notes[0]
