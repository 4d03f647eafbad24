"""Synthesize a pack from small episodes, load it like a hand-written pack, run it, replay a
source episode to its gold state, and measure fidelity; bad input is survived and reported."""

from __future__ import annotations

import json
import warnings

import simforge
from simforge.audit.fidelity import fidelity, replay_gold
from simforge.scenario.plugins import load_pack
from simforge.synth.pack.loader import load_synth_pack
from simforge.synth.pipeline import SynthWarning, synthesize

from .conftest import episode, shop_episodes


def test_pack_is_plain_files_and_loads_through_the_plugin_hook(shop_pack):
    assert {p.name for p in shop_pack.iterdir()} == {
        "pack.yaml",
        "tools.json",
        "world.json.gz",
        "replay.json.gz",
        "scenario.yaml",
    }
    pack = load_pack(str(shop_pack))
    assert set(pack.catalog) == {"get_order", "cancel_order", "calculate"}
    assert pack.catalog["cancel_order"].spec.kind == "write"
    assert pack.catalog["get_order"].spec.entities == ("Order",)
    schema = pack.catalog["cancel_order"].spec.input_schema
    assert schema["required"] == ["order_id", "reason"]
    assert schema["properties"]["reason"]["enum"] == ["no longer needed", "ordered by mistake"]


def test_agent_side_files_hold_no_ground_truth(shop_pack):
    agent_side = (shop_pack / "tools.json").read_text() + (shop_pack / "pack.yaml").read_text()
    assert "expected" not in agent_side and "oracle" not in agent_side
    scenario = (shop_pack / "scenario.yaml").read_text()
    assert "expected:" in scenario


def test_make_reset_step_read_after_write_and_scripted_user(shop_pack):
    env = simforge.make(str(shop_pack / "scenario.yaml"))
    obs, info = env.reset(seed=0, options={"task": "ep00000-ep-1"})
    assert obs["task"]["instruction"] == "Hello, I am customer 1."
    assert {t["function"]["name"] for t in obs["tools"]} == {
        "get_order",
        "cancel_order",
        "calculate",
    }
    obs, *_ = env.step(
        {
            "tool_calls": [
                {
                    "name": "cancel_order",
                    "arguments": {"order_id": "#W3", "reason": "ordered by mistake"},
                }
            ]
        }
    )
    assert obs["results"][0]["result"]["status"] == "cancelled"
    obs, *_ = env.step({"tool_calls": [{"name": "get_order", "arguments": {"order_id": "#W3"}}]})
    row = obs["results"][0]["result"]
    assert row["status"] == "cancelled" and row["payment_history"][-1]["kind"] == "refund"
    obs, *_ = env.step(
        {"tool_calls": [{"name": "cancel_order", "arguments": {"order_id": "#W2", "reason": "x"}}]}
    )
    assert obs["results"][0]["ok"] is False
    obs, *_ = env.step({"message": "anything else?"})
    assert obs["user"] == "Thanks, that is all."


def test_replay_of_source_episodes_reaches_their_gold_state(shop_pack):
    result = replay_gold(shop_pack)
    # 13 gold episodes, less 5 read-only ones whose answers ("Done.") prove no work
    assert result["tasks"] == 8 and result["rate"] == 1.0


def test_fidelity_on_the_source_episodes(shop_pack):
    result = fidelity(shop_pack, episodes=shop_episodes())
    assert result["reads"]["rate"] == 1.0
    assert result["writes"]["rate"] == 1.0
    assert result["errors"]["rate"] == 1.0
    assert result["by_tool"]["calculate"]["reads"]["exact"] == 5
    assert result["episodes"] == 13


def test_holdout_keeps_episodes_out_of_learning(tmp_path, snapshot_dir):
    report = synthesize(
        [], tmp_path / "p", data=[snapshot_dir], episodes=shop_episodes(), holdout=0.4, seed=3
    )
    again = synthesize(
        [], tmp_path / "q", data=[snapshot_dir], episodes=shop_episodes(), holdout=0.4, seed=3
    )
    assert report.holdout == again.holdout and 0 < len(report.holdout) < 13
    assert report.train + len(report.holdout) == 13
    manifest = (tmp_path / "p" / "pack.yaml").read_text()
    assert all(i in manifest for i in report.holdout)


def test_empty_episodes_are_counted_and_conflicting_tools_versioned(tmp_path, snapshot_dir):
    eps = shop_episodes()
    eps.append(episode(90, [("calculate", {"numbers": [1, 2]}, "3", None)]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = synthesize([], tmp_path / "p", data=[snapshot_dir], episodes=eps)
    assert report.empty_episodes == 1
    assert any(
        issubclass(w.category, SynthWarning) and "calculate" in str(w.message) for w in caught
    )
    pack = load_synth_pack(tmp_path / "p")
    assert {"calculate", "calculate_v2"} <= set(pack.catalog)


def test_bad_snapshot_is_named_by_the_cli(tmp_path):
    from typer.testing import CliRunner

    from simforge.cli import app

    bad = tmp_path / "orders.json"
    bad.write_text('{"o1": {"a": 1},\n "o2": {"a": }}')
    traces = tmp_path / "t.jsonl"
    traces.write_text("\n".join(e.model_dump_json() for e in shop_episodes()) + "\n")
    result = CliRunner().invoke(
        app, ["synth", str(traces), "--data", str(bad), "--out", str(tmp_path / "p")]
    )
    assert result.exit_code == 2
    assert "orders.json" in result.output and "'o2'" in result.output


def test_cli_synth_and_fidelity_json(tmp_path, snapshot_dir):
    from typer.testing import CliRunner

    from simforge.cli import app

    traces = tmp_path / "t.jsonl"
    traces.write_text("\n".join(e.model_dump_json() for e in shop_episodes()) + "\n")
    runner = CliRunner()
    out = tmp_path / "p"
    result = runner.invoke(
        app, ["synth", str(traces), "--data", str(snapshot_dir), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["empty_episodes"] == 1
    # the read-only episodes whose answers state nothing ("Done.") prove no work: left out
    assert summary["tasks"] == 8 and len(summary["unproven"]) == 5
    result = runner.invoke(app, ["fidelity", str(out), str(traces), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert set(figures) >= {"reads", "writes", "errors", "by_tool"}
    assert figures["writes"] == {"calls": 8, "exact": 8, "rate": 1.0}
    assert set(figures["reward"]) == {"episodes", "agree", "rate", "confusion"}
    assert figures["reward"]["confusion"]["hit"] == figures["reward"]["agree"] > 0
