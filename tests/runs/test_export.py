"""Exports: SFT chat JSONL, a datasets folder, DPO pairs, and native JSONL that replays."""

from __future__ import annotations

import json

import pytest

from simforge.runs.export import export_runs
from simforge.runs.matrix import RunConfig
from simforge.runs.runner import execute, prepare
from simforge.runs.store import RunStore


def _run(store: RunStore, mini: str, policy: str, **kw) -> str:
    config = RunConfig(scenarios=[mini], policy=policy, seeds=2, **kw).with_baseline()
    prepared = prepare(store, config)
    execute(store, prepared, workers=0)
    return prepared.run_id


@pytest.fixture
def runs(mini, sqlite_url):
    store = RunStore(sqlite_url)
    good = _run(store, mini, "oracle")
    bad = _run(store, mini, "noop")
    return store, good, bad


def test_openai_jsonl_has_messages_tools_and_reward_metadata(runs, tmp_path):
    store, good, _ = runs
    out = tmp_path / "sft.jsonl"
    assert export_runs(store, [good], "openai-jsonl", out) == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    first = rows[0]
    assert set(first) == {"id", "messages", "tools", "metadata"}
    roles = [m["role"] for m in first["messages"]]
    assert roles[0] == "user" and roles[-1] == "assistant" and "tool" in roles
    call = next(m for m in first["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"])
    assert any(t["function"]["name"] == call["function"]["name"] for t in first["tools"])
    meta = first["metadata"]
    assert meta["run_id"] == good and meta["reward"] == 1.0 and meta["passed"] is True
    assert {v["category"] for v in meta["verdicts"]} >= {"correctness", "safety"}


def test_hf_dataset_loads_from_disk(runs, tmp_path):
    datasets = pytest.importorskip("datasets")
    store, good, bad = runs
    out = tmp_path / "ds"
    assert export_runs(store, [good, bad], "hf-dataset", out) == 8
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == 8
    assert sorted(set(ds["reward"])) == [0.0, 1.0]
    row = ds[0]
    assert row["messages"][0]["role"] == "user"
    assert json.loads(row["tools"]) and json.loads(row["verdicts"])


def test_dpo_pairs_prefer_the_higher_reward(runs, tmp_path):
    datasets = pytest.importorskip("datasets")
    store, good, bad = runs
    out = tmp_path / "dpo.jsonl"
    n = export_runs(store, [good, bad], "dpo-pairs", out)
    assert n == 4  # per task: 2 oracle and 2 noop episodes -> 2 pairs
    ds = datasets.load_dataset("json", data_files=str(out), split="train")
    assert len(ds) == 4
    for pair in ds:
        assert pair["chosen_reward"] > pair["rejected_reward"]
        assert pair["prompt"][-1]["role"] == "user"
        assert pair["chosen"][0]["role"] == "assistant"
        assert pair["chosen_key"].startswith(good) and pair["rejected_key"].startswith(bad)
    assert export_runs(store, [good], "dpo-pairs", tmp_path / "none.jsonl") == 0  # all equal


def test_native_export_replays_to_the_same_rewards(runs, tmp_path):
    store, good, _ = runs
    out = tmp_path / "native.jsonl"
    assert export_runs(store, [good], "native", out) == 4
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert episodes[0]["outcome"]["reward"] == 1.0
    replay = _run(store, str(store.run(good)["config"]["scenarios"][0]), f"replay:{out}")
    assert [e["reward"] for e in store.episodes(replay)] == [1.0] * 4


def test_invalid_episodes_are_left_out_unless_asked(mini, sqlite_url, tmp_path):
    from simforge.trace.episode import Episode, Message, Source, TaskSpec, ToolCall

    source = Episode(
        id="boom", source=Source(format="simforge"), task=TaskSpec(id="upgrade"),
        messages=[Message(role="assistant", tool_call_ids=["c1"]),
                  Message(role="assistant", content="done")],
        tool_calls=[ToolCall(call_id="c1", tool="explode", args={"customer_id": "C-0001"})],
    )
    path = tmp_path / "boom.jsonl"
    path.write_text(source.model_dump_json() + "\n")
    store = RunStore(sqlite_url)
    run_id = _run(store, mini, f"replay:{path}", tasks=["upgrade"])
    assert all(e["reward"] is None for e in store.episodes(run_id))
    assert export_runs(store, [run_id], "openai-jsonl", tmp_path / "a.jsonl") == 0
    assert export_runs(store, [run_id], "openai-jsonl", tmp_path / "b.jsonl",
                       include_invalid=True) == 2
