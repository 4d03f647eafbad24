"""Exports of stored runs for training.

Every exported episode is identified by ``RUN_ID/KEY`` (its run and its cell
``scenario|task|profile|seed|trial``), unique however many profiles, trials and runs are
exported together.

- ``openai-jsonl`` (SFT): one ``{"id", "messages", "tools", "metadata"}`` object a line; the
  messages are the trajectory as Chat Completions messages (assistant ``tool_calls`` with JSON
  string arguments, ``tool`` results), ``tools`` the catalog the agent saw, ``metadata`` the
  reward, pass/fail, every verdict and where the episode came from.
- ``hf-dataset``: the same rows as a folder that ``datasets.load_from_disk`` reads. Columns a
  fixed Arrow schema cannot hold (tool schemas, verdict evidence) are JSON strings.
- ``dpo-pairs``: ``{"prompt", "chosen", "rejected", ...}`` JSONL in the conversational format
  TRL's DPO trainer reads: for each (scenario, task), the best remaining episode is paired with
  the worst remaining one while the chosen reward exceeds the rejected by more than ``margin``;
  each episode is used once. The prompt is the instruction; the completions are the rest of the
  trajectories. ``load_dataset("json", data_files=...)`` reads it.
- ``native``: simforge's lossless Episode JSONL with the reward in ``outcome`` (replayable with
  ``--policy replay:FILE`` and re-ingestable).

Invalid episodes (no reward) carry no training signal and are left out unless asked for.

Every output is written under a temporary sibling name and renamed into place when complete
(``simforge.atomic``): an export killed half way leaves the previous one intact, and no file or
folder that looks whole.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from simforge.atomic import AtomicFile, replacing
from simforge.jsonio import dumps
from simforge.runs.store import RunStore
from simforge.trace.episode import Episode, Outcome
from simforge.trace.export import to_native, to_openai

FORMATS = {
    "openai-jsonl": "{run}.openai.jsonl",
    "hf-dataset": "{run}.hf",
    "dpo-pairs": "{run}.dpo.jsonl",
    "native": "{run}.native.jsonl",
}


class _Tools:
    """The tools each task of a run offered its agent, built once per task (the export's
    ``tools`` field: what the agent saw, not the whole pack)."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}
        self._by_task: dict[tuple[str, str], list[dict[str, Any]] | None] = {}

    def add_refs(self, refs: list[str]) -> None:
        from simforge.scenario.registry import default_registry

        for ref in refs:
            try:
                loaded = default_registry.get(ref)
            except Exception:  # a scenario gone since the run: export without tools
                continue
            self._loaded.setdefault(loaded.scenario.id, loaded)

    def get(self, scenario: str, task: str) -> list[dict[str, Any]] | None:
        key = (scenario, task)
        if key not in self._by_task:
            loaded = self._loaded.get(scenario)
            tools = None
            if loaded is not None and task in loaded.offered:
                tools = loaded.tools(task).to_openai()
            self._by_task[key] = tools
        return self._by_task[key]


def episode_id(run_id: str, key: str) -> str:
    """An exported episode's id: its run and cell (``scenario|task|profile|seed|trial``), unique
    across everything exported (a trajectory's own id, ``scenario#task@seed``, repeats across
    fault profiles, trials and runs)."""
    return f"{run_id}/{key}"


def _metadata(run_id: str, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "key": row["key"],
        "scenario": row["scenario"],
        "task": row["task"],
        "profile": row["profile"],
        "seed": row["seed"],
        "trial": row["trial"],
        "policy": row["policy"],
        "reward": row["reward"],
        "passed": bool(row["passed"]),
        "invalid_reason": row["invalid_reason"],
        "failed": list(row["failed"] or []),
        "steps": row["steps"],
        "sim_time": row["sim_time"],
        "verdicts": [
            {k: v[k] for k in ("name", "category", "passed", "score")} for v in row["verdicts"]
        ],
    }


def iter_rows(
    store: RunStore, run_ids: list[str], *, include_invalid: bool = False
) -> Iterator[tuple[dict[str, Any], Episode, dict[str, Any]]]:
    """``(metadata, trajectory, openai chat)`` for every stored episode that has a trajectory."""
    tools = _Tools()
    for run_id in run_ids:
        tools.add_refs(store.run(run_id)["config"].get("scenarios", []))
        for row, text in store.trajectories(run_id):
            if text is None or (row["reward"] is None and not include_invalid):
                continue
            episode = Episode.model_validate_json(text)
            chat = to_openai(episode)
            chat["tools"] = tools.get(row["scenario"], row["task"])
            yield _metadata(run_id, row), episode, chat


def _jsonl(path: Path, items: Iterator[dict[str, Any]]) -> int:
    n = 0
    with AtomicFile(path) as f:
        for item in items:
            f.write(dumps(item, default=str) + b"\n")
            n += 1
    return n


def _normal_message(m: dict[str, Any]) -> dict[str, Any]:
    """One fixed shape for every message, as an Arrow column needs."""
    return {
        "role": m["role"],
        "content": m.get("content"),
        "tool_calls": [
            {"id": c["id"], "type": c.get("type", "function"),
             "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in m.get("tool_calls") or []
        ],
        "tool_call_id": m.get("tool_call_id"),
    }


def _openai_items(rows: Iterator[tuple[dict[str, Any], Episode, dict[str, Any]]]
                  ) -> Iterator[dict[str, Any]]:
    for meta, _episode, chat in rows:
        yield {"id": episode_id(meta["run_id"], meta["key"]), "messages": chat["messages"],
               "tools": chat["tools"], "metadata": meta}


def _native_items(rows: Iterator[tuple[dict[str, Any], Episode, dict[str, Any]]]
                  ) -> Iterator[dict[str, Any]]:
    for meta, episode, _chat in rows:
        outcome = Outcome(
            reward=meta["reward"], success=meta["passed"],
            labels={k: meta[k] for k in ("run_id", "key", "profile", "trial", "failed")},
        )
        labelled = episode.model_copy(
            update={"id": episode_id(meta["run_id"], meta["key"]), "outcome": outcome}
        )
        yield orjson.loads(to_native(labelled))


def dpo_pairs(
    rows: Iterator[tuple[dict[str, Any], Episode, dict[str, Any]]], *, margin: float = 0.0
) -> Iterator[dict[str, Any]]:
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for meta, _episode, chat in rows:
        if meta["reward"] is not None:
            groups[(meta["scenario"], meta["task"])].append((meta, chat))
    for (scenario, task), items in sorted(groups.items()):
        ranked = sorted(items, key=lambda mc: (-mc[0]["reward"], mc[0]["key"], mc[0]["run_id"]))
        i, j = 0, len(ranked) - 1
        while i < j and ranked[i][0]["reward"] - ranked[j][0]["reward"] > margin:
            (good, chosen), (bad, rejected) = ranked[i], ranked[j]
            cut = _prompt_end(chosen["messages"])
            yield {
                "prompt": chosen["messages"][:cut],
                "chosen": chosen["messages"][cut:],
                "rejected": rejected["messages"][_prompt_end(rejected["messages"]):],
                "tools": chosen["tools"],
                "chosen_reward": good["reward"],
                "rejected_reward": bad["reward"],
                "scenario": scenario,
                "task": task,
                "chosen_key": episode_id(good["run_id"], good["key"]),
                "rejected_key": episode_id(bad["run_id"], bad["key"]),
            }
            i, j = i + 1, j - 1


def _prompt_end(messages: list[dict[str, Any]]) -> int:
    """Everything up to the first assistant turn is the prompt (system and instruction)."""
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            return i
    return len(messages)


def export_runs(
    store: RunStore,
    run_ids: list[str],
    fmt: str,
    out: str | Path,
    *,
    include_invalid: bool = False,
    margin: float = 0.0,
) -> int:
    """Write ``run_ids`` in ``fmt`` to ``out``; how many records (episodes or pairs) were
    written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {list(FORMATS)}")
    path = Path(out)
    rows = iter_rows(store, run_ids, include_invalid=include_invalid)
    if fmt == "openai-jsonl":
        return _jsonl(path, _openai_items(rows))
    if fmt == "native":
        return _jsonl(path, _native_items(rows))
    if fmt == "dpo-pairs":
        return _jsonl(path, dpo_pairs(rows, margin=margin))
    try:
        from datasets import Dataset
    except ImportError:
        raise ValueError("hf-dataset needs the datasets package: pip install datasets") from None

    records = [
        {
            "id": item["id"],
            "messages": [_normal_message(m) for m in item["messages"]],
            "tools": json.dumps(item["tools"]),
            **{k: v for k, v in item["metadata"].items() if k != "verdicts"},
            "verdicts": json.dumps(item["metadata"]["verdicts"]),
        }
        for item in _openai_items(rows)
    ]
    dataset = Dataset.from_list(records)
    with replacing(path) as folder:
        dataset.save_to_disk(str(folder))
    return len(records)
