"""Exports: SFT chat JSONL, a datasets folder, DPO pairs, and native JSONL that replays."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from simforge.config import NotFound
from simforge.runs.export import (
    Exported,
    ExportError,
    dpo_pairs,
    export_runs,
    pair_up,
    tools_path,
)
from simforge.runs.matrix import RunConfig
from simforge.runs.runner import execute, prepare
from simforge.runs.store import EPISODES, RunStore, compress_trajectory
from simforge.trace.episode import Episode, Message, Source, TaskSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _run(store: RunStore, mini: str, policy: str, trajectories: bool = True, **kw) -> str:
    config = RunConfig(scenarios=[mini], policy=policy, seeds=2, **kw).with_baseline()
    prepared = prepare(store, config)
    execute(store, prepared, workers=0, trajectories=trajectories)
    return prepared.run_id


@pytest.fixture
def mini_eval(tmp_path) -> str:
    """The mini scenario with its ``note`` task in the eval split."""
    text = (FIXTURES / "scenarios" / "mini.yaml").read_text()
    text = text.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    text = text.replace('saying "called back".\n', 'saying "called back".\n    split: eval\n')
    path = tmp_path / "mini_eval.yaml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def runs(mini_eval, sqlite_url):
    store = RunStore(sqlite_url)
    good = _run(store, mini_eval, "oracle")
    bad = _run(store, mini_eval, "noop")
    return store, good, bad


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cell(exported_id: str) -> str:
    """``scenario|task|profile|seed`` of an exported id ``RUN/scenario|task|profile|seed|trial``."""
    return exported_id.split("/", 2)[-1].rsplit("|", 1)[0]


def test_openai_jsonl_names_each_tool_list_once(runs, tmp_path):
    store, good, _ = runs
    out = tmp_path / "sft.jsonl"
    assert export_runs(store, [good], "openai-jsonl", out) == 4
    rows = _lines(out)
    catalogs = json.loads(tools_path(out).read_text())
    assert tools_path(out).name == "sft.tools.json"
    first = rows[0]
    assert set(first) == {"id", "messages", "tools_id", "metadata"}
    roles = [m["role"] for m in first["messages"]]
    assert roles[0] == "user" and roles[-1] == "assistant" and "tool" in roles
    call = next(m for m in first["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"])
    assert any(t["function"]["name"] == call["function"]["name"]
               for t in catalogs[first["tools_id"]])
    # both tasks of the scenario offer the same tools: one list for the four rows
    assert len(catalogs) == 1 and {r["tools_id"] for r in rows} == set(catalogs)
    meta = first["metadata"]
    assert meta["run_id"] == good and meta["reward"] == 1.0 and meta["passed"] is True
    assert {v["category"] for v in meta["verdicts"]} >= {"correctness", "safety"}
    assert {r["metadata"]["task"]: r["metadata"]["split"] for r in rows} == {
        "note": "eval", "upgrade": "train"}

    inline = tmp_path / "inline.jsonl"
    assert export_runs(store, [good], "openai-jsonl", inline, tools="inline") == 4
    assert not tools_path(inline).exists()
    inlined = _lines(inline)
    assert set(inlined[0]) == {"id", "messages", "tools", "metadata"}
    assert [r["tools"] for r in inlined] == [catalogs[r["tools_id"]] for r in rows]
    assert out.stat().st_size + tools_path(out).stat().st_size < inline.stat().st_size


def _declared_features(folder: Path) -> dict:
    import yaml
    from datasets import Features

    card = yaml.safe_load(folder.joinpath("README.md").read_text().split("---")[1])
    return {i["config_name"]: Features._from_yaml_list(i["features"]) for i in card["dataset_info"]}


def _types(feature) -> list[str]:
    """Every leaf dtype under a feature."""
    from datasets import List, Value

    if isinstance(feature, Value):
        return [feature.dtype]
    if isinstance(feature, List):
        return _types(feature.feature)
    return [t for sub in feature.values() for t in _types(sub)]


def test_hf_dataset_loads_every_split_with_its_declared_features(runs, tmp_path):
    datasets = pytest.importorskip("datasets")
    import pyarrow.parquet as pq

    store, good, bad = runs
    out = tmp_path / "ds"
    assert export_runs(store, [good, bad], "hf-dataset", out) == 8
    declared = _declared_features(out)
    assert set(declared) == {"sft", "dpo"}
    for config, features in declared.items():
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "cache"))
        assert set(loaded) == {"train", "eval"}
        for split, ds in loaded.items():
            on_disk = pq.read_schema(out / config / f"{split}.parquet").remove_metadata()
            inferred = datasets.Features.from_arrow_schema(on_disk)
            assert ds.features == features == inferred, (config, split)
            assert "null" not in _types(features)
            assert set(ds["split"]) == {split}
    sft = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))  # sft: default
    assert sorted(set(sft["train"]["reward"])) == [0.0, 1.0] and len(sft["eval"]) == 4
    row = sft["train"][0]
    assert row["messages"][0]["role"] == "user"
    calls = [c for m in row["messages"] for c in m["tool_calls"]]
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    names = {t["function"]["name"] for t in json.loads(row["tools"])}
    assert {c["function"]["name"] for c in calls} <= names
    assert row["verdicts"][0].keys() == {"name", "category", "passed", "score"}


def _tokenizer():
    from tests.integrations.test_trl import make_tokenizer

    return make_tokenizer()


@pytest.mark.slow
def test_trl_prepares_the_hf_dataset_for_sft_and_dpo(runs, tmp_path, monkeypatch):
    """TRL's own dataset preparation (chat template with the row's tools, tokenization) takes
    both configs as loaded: no column to cast, rename or parse first."""
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from types import SimpleNamespace

    from trl.data_utils import is_conversational, maybe_apply_chat_template

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    store, good, bad = runs
    out = tmp_path / "ds"
    export_runs(store, [good, bad], "hf-dataset", out)
    tokenizer = _tokenizer()
    sft = datasets.load_dataset(str(out), "sft", split="train", cache_dir=str(tmp_path / "c"))
    dpo = datasets.load_dataset(str(out), "dpo", split="train", cache_dir=str(tmp_path / "c"))
    assert is_conversational(sft[0]) and is_conversational(dpo[0])
    pair = dpo[0]
    text = maybe_apply_chat_template(
        {k: pair[k] for k in ("prompt", "chosen", "rejected")}, tokenizer,
        tools=json.loads(pair["tools"]))
    assert "upgrade_customer" in text["prompt"] and "<tool_call>" in text["chosen"]

    trainer = SimpleNamespace(_is_vlm=False)  # all _prepare_dataset reads of the trainer
    args = dict(output_dir=str(tmp_path / "o"), report_to="none", use_cpu=True)
    prepared = trl.SFTTrainer._prepare_dataset(
        trainer, sft, tokenizer, trl.SFTConfig(max_length=None, **args), False, None, "train")
    rendered = tokenizer.decode(prepared[0]["input_ids"])
    assert "<tools>" in rendered and "upgrade_customer" in rendered
    assert "<tool_response>" in rendered
    prepared = trl.DPOTrainer._prepare_dataset(trainer, dpo, tokenizer, trl.DPOConfig(**args),
                                               "train")
    assert len(prepared) == len(dpo)
    assert "<tools>" in tokenizer.decode(prepared[0]["prompt_ids"])
    assert all(r["chosen_ids"] and r["rejected_ids"] for r in prepared)


def test_dpo_pairs_stay_within_a_cell(runs, tmp_path):
    datasets = pytest.importorskip("datasets")
    store, good, bad = runs
    out = tmp_path / "dpo.jsonl"
    n = export_runs(store, [good, bad], "dpo-pairs", out)
    assert n == 4  # a cell per (task, seed): its oracle episode paired with its noop one
    ds = datasets.load_dataset("json", data_files=str(out), split="train",
                               cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 4
    catalogs = json.loads(tools_path(out).read_text())
    for pair in ds:
        assert pair["chosen_reward"] > pair["rejected_reward"]
        assert pair["prompt"][-1]["role"] == "user"
        assert pair["chosen"][0]["role"] == "assistant"
        assert pair["chosen_key"].startswith(good) and pair["rejected_key"].startswith(bad)
        assert _cell(pair["chosen_key"]) == _cell(pair["rejected_key"])
        assert pair["tools_id"] in catalogs
    assert export_runs(store, [good], "dpo-pairs", tmp_path / "none.jsonl") == 0  # one a cell
    with pytest.raises(ExportError, match="margin"):
        export_runs(store, [good, bad], "dpo-pairs", tmp_path / "neg.jsonl", margin=-1)


def _exported(scenario: str, task: str, profile: str, seed: int, run: str, trial: int,
              reward: float | None) -> Exported:
    key = f"{scenario}|{task}|{profile}|{seed}|{trial}"
    episode = Episode(id=key, source=Source(format="simforge"), task=TaskSpec(id=task),
                      messages=[Message(role="user", content=f"do {task}"),
                                Message(role="assistant", content=f"{run} {trial}")])
    meta = {"run_id": run, "key": key, "scenario": scenario, "task": task, "split": "train",
            "profile": profile, "seed": seed, "reward": reward}
    messages = [{"role": "user", "content": f"do {task}"},
                {"role": "assistant", "content": f"{run} {trial}"}]
    return Exported(meta, episode, messages, "tools-1")


def _most_pairs(rewards: list[float], margin: float) -> int:
    """The largest matching of items whose rewards differ by more than ``margin`` (brute)."""
    if len(rewards) < 2:
        return 0
    first, rest = rewards[0], rewards[1:]
    best = _most_pairs(rest, margin)
    for i, other in enumerate(rest):
        if abs(first - other) > margin:
            best = max(best, 1 + _most_pairs(rest[:i] + rest[i + 1:], margin))
    return best


episodes = st.lists(
    st.tuples(st.sampled_from(["s1", "s2"]), st.sampled_from(["t1", "t2"]),
              st.sampled_from(["none", "flaky"]), st.integers(0, 2),
              st.sampled_from(["runA", "runB"]), st.integers(0, 2),
              st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0]))),
    max_size=30, unique_by=lambda t: t[:6],
)


@settings(max_examples=150, deadline=None)
@given(cells=episodes, margin=st.sampled_from([0.0, 0.2, 0.5]))
def test_dpo_pairs_are_the_most_pairs_of_one_cell_clearing_the_margin(cells, margin):
    items = [_exported(*c) for c in cells]
    pairs = list(dpo_pairs(items, margin=margin))
    used = [k for p in pairs for k in (p["chosen_key"], p["rejected_key"])]
    assert len(used) == len(set(used)), "an episode is in one pair at most"
    by_id = {e.id: e for e in items}
    for p in pairs:
        good, bad = by_id[p["chosen_key"]].meta, by_id[p["rejected_key"]].meta
        assert _cell(p["chosen_key"]) == _cell(p["rejected_key"])  # never across cells
        assert (p["scenario"], p["task"], p["profile"], p["seed"]) == (
            good["scenario"], good["task"], good["profile"], good["seed"])
        assert good["reward"] - bad["reward"] > margin  # ties never pair
        assert (p["chosen_reward"], p["rejected_reward"]) == (good["reward"], bad["reward"])
        assert p["chosen"] == by_id[p["chosen_key"]].messages[1:]
        assert p["rejected"] == by_id[p["rejected_key"]].messages[1:]
    for cell, group in itertools.groupby(sorted(items, key=lambda e: _cell(e.id)),
                                         key=lambda e: _cell(e.id)):
        rewards = [e.meta["reward"] for e in group if e.meta["reward"] is not None]
        assert sum(_cell(p["chosen_key"]) == cell for p in pairs) == _most_pairs(rewards, margin)


@given(st.lists(st.integers(0, 4), max_size=9), st.sampled_from([0, 1, 2]))
def test_pair_up_finds_a_largest_matching(rewards, margin):
    pairs = pair_up(list(enumerate(rewards)), lambda ir: ir[1], margin)
    assert len(pairs) == _most_pairs([float(r) for r in rewards], margin)
    assert all(good[1] - bad[1] > margin for good, bad in pairs)


def test_native_export_replays_to_the_same_rewards(runs, tmp_path):
    store, good, _ = runs
    out = tmp_path / "native.jsonl"
    assert export_runs(store, [good], "native", out) == 4
    episodes = _lines(out)
    assert episodes[0]["outcome"]["reward"] == 1.0
    replay = _run(store, str(store.run(good)["config"]["scenarios"][0]), f"replay:{out}")
    assert [e["reward"] for e in store.episodes(replay)] == [1.0] * 4


def test_invalid_episodes_are_left_out_unless_asked(mini, sqlite_url, tmp_path):
    from simforge.trace.episode import ToolCall

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
    with pytest.raises(ExportError, match=r"no episode .* has a reward"):
        export_runs(store, [run_id], "hf-dataset", tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_bad_runs_are_named_before_anything_is_written(mini, sqlite_url, tmp_path):
    store = RunStore(sqlite_url)
    out = tmp_path / "x.jsonl"
    with pytest.raises(NotFound, match="no run 'nope'"):
        export_runs(store, ["nope"], "openai-jsonl", out)
    empty = store.create_run({"scenarios": [mini]}, policy="oracle", total=0)
    with pytest.raises(ExportError, match=f"run '{empty}' .* has no episodes"):
        export_runs(store, [empty], "openai-jsonl", out)
    bare = _run(store, mini, "oracle", trajectories=False)
    with pytest.raises(ExportError, match=f"run '{bare}' stored no trajectories"):
        export_runs(store, [bare], "dpo-pairs", out)
    assert [p for p in tmp_path.iterdir() if not p.name.startswith("runs.db")] == []


@pytest.mark.parametrize("kept", ["compressed", "text"])  # as the store writes it; as older rows
def test_an_unreadable_trajectory_is_named_and_leaves_the_previous_export(mini, sqlite_url,
                                                                        tmp_path, kept):
    store = RunStore(sqlite_url)
    run_id = _run(store, mini, "oracle")
    folder = tmp_path / "exports"
    out = folder / "sft.jsonl"
    export_runs(store, [run_id], "openai-jsonl", out)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    key = store.episodes(run_id)[-1]["key"]
    broken = '{"id": "x", "messages": 3}'
    values = ({"trajectory": None, "trajectory_z": compress_trajectory(broken)}
              if kept == "compressed" else {"trajectory": broken, "trajectory_z": None})
    with store.engine.begin() as conn:
        conn.execute(update(EPISODES).where(EPISODES.c.key == key).values(**values))
    with pytest.raises(ExportError, match=re.escape(f"run '{run_id}', episode '{key}': its stored trajectory cannot be read")):
        export_runs(store, [run_id], "openai-jsonl", out)
    with pytest.raises(ExportError, match="cannot be read"):
        export_runs(store, [run_id], "hf-dataset", folder / "ds")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
