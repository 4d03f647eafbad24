"""Exports of stored runs for training.

Every exported episode is identified by ``RUN_ID/KEY`` (its run and its cell
``scenario|task|profile|seed|trial``), unique however many profiles, trials and runs are
exported together.

**Tools.** A task's tool list is the largest part of a row (the catalog the agent saw, every
schema), and it is the same for every episode of the task, often of the scenario. Each distinct
list is written once and named by ``tools_id``, a digest of its content (so tasks, scenarios
and runs that offered the same tools share one): rows carry the id, and ``OUT.tools.json`` maps
each id to its list. ``tools="inline"`` puts the list in every row instead (``tools``), as the
OpenAI fine-tuning format requires. The ``hf-dataset`` folder carries both in every row:
``tools`` is the JSON string TRL's trainers read from a ``tools`` column, and Parquet's
dictionary encoding stores each distinct string once per file.

- ``openai-jsonl`` (SFT): one ``{"id", "messages", "tools_id", "metadata"}`` object a line; the
  messages are the trajectory as Chat Completions messages (assistant ``tool_calls`` with JSON
  string arguments, ``tool`` results), ``metadata`` the reward, pass/fail, every verdict and
  where the episode came from.
- ``dpo-pairs``: ``{"prompt", "chosen", "rejected", "tools_id", ...}`` JSONL in the
  conversational format TRL's DPO trainer reads (:func:`dpo_pairs`: only episodes of one cell).
- ``hf-dataset``: a folder that ``datasets.load_dataset(FOLDER)`` reads: config ``sft`` (the
  default; the chat rows) and ``dpo`` (the pairs; left out when there is none), each split
  ``train`` / ``eval`` by the task's ``split`` (a split without rows left out), as Parquet
  with the features declared in ``README.md``, equal to the files' own schema, so nothing is
  cast; every nested value has one shape in every row (arguments and tool schemas as JSON
  strings).
- ``native``: simforge's lossless Episode JSONL with the reward in ``outcome`` (replayable with
  ``--policy replay:FILE`` and re-ingestable).

Invalid episodes (no reward) carry no training signal and are left out unless asked for.

Every output is written under a temporary sibling name and renamed into place when complete
(``simforge.atomic``): an export killed half way leaves the previous one intact, and no file or
folder that looks whole. The tools file is renamed into place before the rows that name it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError

from simforge.atomic import AtomicFile, replacing, write_bytes
from simforge.errors import UserError
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
TOOLS_MODES = ("ref", "inline")
SPLITS = ("train", "eval")
T = TypeVar("T")


class ExportError(UserError, ValueError):
    """Input that cannot be exported; the message names the run (and the episode) at fault."""


def tools_path(out: str | Path) -> Path:
    """Where the tool lists of a JSONL export go: ``X.openai.jsonl`` -> ``X.openai.tools.json``."""
    path = Path(out)
    stem = path.name.removesuffix(".jsonl")
    return path.with_name(f"{stem}.tools.json")


def tools_id(tools: list[dict[str, Any]]) -> str:
    """A tool list's name: a digest of its canonical JSON (equal lists, equal ids)."""
    return hashlib.sha256(orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


class ToolCatalogs:
    """The tools each task of the exported runs offered its agent (what the agent saw, not the
    whole pack), each distinct list kept once under its :func:`tools_id`, and each task's
    split."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}
        self._by_task: dict[tuple[str, str], tuple[str | None, str]] = {}
        self.lists: dict[str, list[dict[str, Any]]] = {}

    def add_refs(self, refs: list[str]) -> None:
        from simforge.scenario.registry import default_registry

        for ref in refs:
            try:
                loaded = default_registry.get(ref)
            except Exception:  # a scenario gone since the run: export without tools
                continue
            self._loaded.setdefault(loaded.scenario.id, loaded)

    def task(self, scenario: str, task: str) -> tuple[str | None, str]:
        """``(tools_id, split)`` of a task; no id when its scenario is gone, and then the
        ``train`` split."""
        key = (scenario, task)
        if key not in self._by_task:
            loaded = self._loaded.get(scenario)
            found: tuple[str | None, str] = (None, "train")
            if loaded is not None and task in loaded.offered:
                tools = loaded.tools(task).to_openai()
                tid = tools_id(tools)
                self.lists.setdefault(tid, tools)
                found = (tid, loaded.scenario.task(task).split)
            self._by_task[key] = found
        return self._by_task[key]

    def tools(self, tid: str | None) -> list[dict[str, Any]] | None:
        return None if tid is None else self.lists[tid]


@dataclass(frozen=True)
class Exported:
    """One stored episode, ready for every format."""

    meta: dict[str, Any]
    episode: Episode
    messages: list[dict[str, Any]]
    tools_id: str | None

    @property
    def id(self) -> str:
        return episode_id(self.meta["run_id"], self.meta["key"])


def episode_id(run_id: str, key: str) -> str:
    """An exported episode's id: its run and cell (``scenario|task|profile|seed|trial``), unique
    across everything exported (a trajectory's own id, ``scenario#task@seed``, repeats across
    fault profiles, trials and runs)."""
    return f"{run_id}/{key}"


def _metadata(run_id: str, row: dict[str, Any], split: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "key": row["key"],
        "scenario": row["scenario"],
        "task": row["task"],
        "split": split,
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


def check_runs(store: RunStore, run_ids: Sequence[str]) -> None:
    """Every run exists and stored episodes, or :class:`ExportError` (``NotFound`` for an
    unknown id) naming the first that does not: before anything is written."""
    if not run_ids:
        raise ExportError("no run to export: name at least one run id")
    for run_id in run_ids:
        store.run(run_id)
        if store.count(run_id) == 0:
            raise ExportError(f"run {run_id!r} in {store.display_url} has no episodes: "
                              "nothing to export")


def iter_episodes(
    store: RunStore, run_ids: Sequence[str], catalogs: ToolCatalogs, *,
    include_invalid: bool = False,
) -> Iterator[Exported]:
    """Every stored episode of ``run_ids`` that has a trajectory (and a reward, unless
    ``include_invalid``), its tools added to ``catalogs``. A run none of whose episodes kept a
    trajectory, or a trajectory that does not parse, is an :class:`ExportError`."""
    check_runs(store, run_ids)
    for run_id in run_ids:
        catalogs.add_refs(store.run(run_id)["config"].get("scenarios", []))
        kept = 0
        for row, text in store.trajectories(run_id):
            if text is None:
                continue
            kept += 1
            if row["reward"] is None and not include_invalid:
                continue
            try:
                episode = Episode.model_validate_json(text)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "the document"
                raise ExportError(
                    f"run {run_id!r}, episode {row['key']!r}: its stored trajectory cannot be "
                    f"read ({where}: {first['msg']})"
                ) from None
            tid, split = catalogs.task(row["scenario"], row["task"])
            yield Exported(_metadata(run_id, row, split), episode,
                           to_openai(episode)["messages"], tid)
        if kept == 0:
            raise ExportError(
                f"run {run_id!r} stored no trajectories (run with --no-trajectories?): "
                "nothing to export; stress it again without that flag"
            )


def _jsonl(path: Path, items: Iterable[dict[str, Any]], *,
           before_commit: Callable[[], None] | None = None) -> int:
    """Stream ``items`` to ``path``; ``before_commit`` runs once every line is written, before
    the file takes its name (and an exception from it leaves the previous file)."""
    n = 0
    with AtomicFile(path) as f:
        for item in items:
            f.write(dumps(item, default=str) + b"\n")
            n += 1
        if before_commit is not None:
            before_commit()
    return n


def _with_tools(row: dict[str, Any], tid: str | None, catalogs: ToolCatalogs, mode: str
                ) -> dict[str, Any]:
    if mode == "inline":
        row["tools"] = catalogs.tools(tid)
    else:
        row["tools_id"] = tid
    return row


def _openai_items(items: Iterable[Exported], catalogs: ToolCatalogs, mode: str
                  ) -> Iterator[dict[str, Any]]:
    for e in items:
        row = {"id": e.id, "messages": e.messages}
        yield {**_with_tools(row, e.tools_id, catalogs, mode), "metadata": e.meta}


def _native_items(items: Iterable[Exported]) -> Iterator[dict[str, Any]]:
    for e in items:
        meta = e.meta
        outcome = Outcome(
            reward=meta["reward"], success=meta["passed"],
            labels={k: meta[k] for k in ("run_id", "key", "profile", "trial", "failed")},
        )
        labelled = e.episode.model_copy(update={"id": e.id, "outcome": outcome})
        yield orjson.loads(to_native(labelled))


def pair_up(items: Sequence[T], reward: Callable[[T], float], margin: float
            ) -> list[tuple[T, T]]:
    """The most ``(chosen, rejected)`` pairs of distinct items whose rewards differ by more
    than ``margin``, each item in at most one pair (equal rewards never pair). Sorted by
    reward, the ``k`` lowest pair with the ``k`` highest in order, for the largest ``k`` whose
    every pair clears the margin: no matching has more pairs."""
    ranked = sorted(items, key=reward)
    n = len(ranked)

    def clears(k: int) -> bool:
        return all(reward(ranked[n - k + i]) - reward(ranked[i]) > margin for i in range(k))

    k = n // 2
    while k and not clears(k):
        k -= 1
    return [(ranked[n - k + i], ranked[i]) for i in range(k)]


def _prompt_end(messages: list[dict[str, Any]]) -> int:
    """Everything up to the first assistant turn is the prompt (system and instruction)."""
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            return i
    return len(messages)


def dpo_pairs(items: Iterable[Exported], *, margin: float = 0.0) -> Iterator[dict[str, Any]]:
    """Preference pairs, only ever between episodes of one cell: the same scenario, task,
    fault profile and seed, and so the same prompt (episodes of a cell whose prompt or tools
    differ, a scenario changed between two runs, are not paired either). A cell holds one
    episode per trial of each run exported: pairs need ``trials > 1`` or several runs. Within
    a cell, :func:`pair_up` ranks by reward; invalid episodes never pair."""
    if margin < 0:
        raise ExportError(f"margin {margin} < 0: a pair's chosen reward must exceed the "
                          "rejected one")
    cells: dict[tuple[Any, ...], list[tuple[Exported, int]]] = defaultdict(list)
    for e in items:
        if e.meta["reward"] is None:
            continue
        m, cut = e.meta, _prompt_end(e.messages)
        prompt = orjson.dumps(e.messages[:cut], option=orjson.OPT_SORT_KEYS)
        cell = (m["scenario"], m["task"], m["profile"], m["seed"], e.tools_id or "", prompt)
        cells[cell].append((e, cut))
    for cell in sorted(cells):
        members = sorted(cells[cell], key=lambda ec: (ec[0].meta["run_id"], ec[0].meta["key"]))
        for (good, cut), (bad, bad_cut) in pair_up(members, lambda ec: ec[0].meta["reward"],
                                                    margin):
            m = good.meta
            yield {
                "prompt": good.messages[:cut],
                "chosen": good.messages[cut:],
                "rejected": bad.messages[bad_cut:],
                "tools_id": good.tools_id,
                "chosen_reward": m["reward"],
                "rejected_reward": bad.meta["reward"],
                "scenario": m["scenario"],
                "task": m["task"],
                "split": m["split"],
                "profile": m["profile"],
                "seed": m["seed"],
                "chosen_key": good.id,
                "rejected_key": bad.id,
            }


def _dpo_items(pairs: Iterable[dict[str, Any]], catalogs: ToolCatalogs, mode: str
               ) -> Iterator[dict[str, Any]]:
    for pair in pairs:
        tid = pair.pop("tools_id")
        yield _with_tools(pair, tid, catalogs, mode)


def _message(m: dict[str, Any]) -> dict[str, Any]:
    """One fixed shape for every message, as an Arrow column needs (no call: an empty list)."""
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


def hf_features() -> dict[str, Any]:
    """The declared features of the ``hf-dataset`` folder's configs (``sft``, ``dpo``)."""
    from datasets import Features, List, Value

    string, integer, real = Value("string"), Value("int64"), Value("float64")
    call = {"id": string, "type": string, "function": {"name": string, "arguments": string}}
    messages = List({"role": string, "content": string, "tool_calls": List(call),
                     "tool_call_id": string})
    tools = {"tools_id": string, "tools": string}
    cell = {"scenario": string, "task": string, "split": string, "profile": string,
            "seed": integer}
    verdict = {"name": string, "category": string, "passed": Value("bool"), "score": real}
    return {
        "sft": Features({
            "id": string, "messages": messages, **tools, "run_id": string, "key": string,
            **cell, "trial": integer, "policy": string, "reward": real, "passed": Value("bool"),
            "invalid_reason": string, "failed": List(string), "steps": integer,
            "sim_time": real, "verdicts": List(verdict),
        }),
        "dpo": Features({
            "prompt": messages, "chosen": messages, "rejected": messages, **tools,
            "chosen_reward": real, "rejected_reward": real, **cell,
            "chosen_key": string, "rejected_key": string,
        }),
    }


def _hf_sft_row(e: Exported, catalogs: ToolCatalogs) -> dict[str, Any]:
    meta = e.meta
    return {
        "id": e.id, "messages": [_message(m) for m in e.messages], "tools_id": e.tools_id,
        "tools": _tools_json(e.tools_id, catalogs), **meta,
        "verdicts": [{**v, "score": float(v["score"])} for v in meta["verdicts"]],
    }


def _tools_json(tid: str | None, catalogs: ToolCatalogs) -> str | None:
    tools = catalogs.tools(tid)
    return None if tools is None else json.dumps(tools)


def _hf_dpo_row(pair: dict[str, Any], catalogs: ToolCatalogs) -> dict[str, Any]:
    return {
        **pair, **{k: [_message(m) for m in pair[k]] for k in ("prompt", "chosen", "rejected")},
        "tools": _tools_json(pair["tools_id"], catalogs),
    }


HF_README = """
# simforge export

Trajectories of simforge runs {runs}, scored by simforge's validators.

- `sft` (default): one row per episode: `messages` (Chat Completions messages; tool-call
  `arguments` are JSON strings), `tools` (the tool schemas the agent was offered, a JSON
  string, as TRL's trainers read it; `tools_id` names the list), the reward, every verdict and
  the cell (`scenario|task|profile|seed|trial`) the episode played.
- `dpo`: `prompt` / `chosen` / `rejected` pairs of episodes of one cell, chosen rewarded more.

Splits are the tasks' own (`train`, `eval`).

```python
from datasets import load_dataset
sft = load_dataset("{folder}", "sft")
```
"""


def write_hf(path: Path, items: list[Exported], catalogs: ToolCatalogs, *, margin: float,
             runs: Sequence[str]) -> int:
    """The ``hf-dataset`` folder (see the module's docstring); how many episodes it holds."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import yaml
        from datasets.info import DatasetInfo
        from datasets.splits import SplitDict, SplitInfo
    except ImportError:
        raise ExportError("hf-dataset needs the datasets package: pip install datasets") from None

    if not items:
        raise ExportError(f"nothing to export: no episode of {list(runs)} has a reward "
                          "(--include-invalid keeps invalid ones)")
    features = hf_features()
    tables = {
        "sft": [_hf_sft_row(e, catalogs) for e in items],
        "dpo": [_hf_dpo_row(p, catalogs) for p in dpo_pairs(items, margin=margin)],
    }
    configs: list[dict[str, Any]] = []
    infos: list[dict[str, Any]] = []
    with replacing(path) as folder:
        folder.mkdir()
        for name, rows in tables.items():
            schema = features[name].arrow_schema
            files, splits = [], SplitDict()
            for split in SPLITS:
                part = [r for r in rows if r["split"] == split]
                if not part:
                    continue
                rel = f"{name}/{split}.parquet"
                (folder / name).mkdir(exist_ok=True)
                # one row group, and a dictionary large enough for every distinct tool list:
                # each is stored once in the file, however many rows name it
                pq.write_table(pa.Table.from_pylist(part, schema=schema), folder / rel,
                               compression="zstd", row_group_size=len(part),
                               dictionary_pagesize_limit=1 << 30)
                files.append({"split": split, "path": rel})
                splits.add(SplitInfo(name=split, num_examples=len(part)))
            if not files:
                continue
            configs.append({"config_name": name, **({"default": True} if name == "sft" else {}),
                            "data_files": files})
            info = DatasetInfo(features=features[name], splits=splits)._to_yaml_dict()
            infos.append({"config_name": name, **info})
        card = yaml.safe_dump({"configs": configs, "dataset_info": infos}, sort_keys=False)
        readme = HF_README.format(runs=", ".join(runs), folder=path.name)
        (folder / "README.md").write_text(f"---\n{card}---\n{readme}", encoding="utf-8")
    return len(items)


def export_runs(
    store: RunStore,
    run_ids: list[str],
    fmt: str,
    out: str | Path,
    *,
    include_invalid: bool = False,
    margin: float = 0.0,
    tools: str = "ref",
) -> int:
    """Write ``run_ids`` in ``fmt`` to ``out``; how many records (episodes, or pairs for
    ``dpo-pairs``) were written. ``tools``: ``ref`` (each distinct tool list once, in
    :func:`tools_path`, rows name it by ``tools_id``) or ``inline`` (in every row); the
    ``hf-dataset`` folder always has both."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; use one of {list(FORMATS)}")
    if tools not in TOOLS_MODES:
        raise ExportError(f"unknown tools mode {tools!r}; use one of {list(TOOLS_MODES)}")
    path = Path(out)
    catalogs = ToolCatalogs()
    items = iter_episodes(store, run_ids, catalogs, include_invalid=include_invalid)
    if fmt == "native":
        return _jsonl(path, _native_items(items))
    if fmt == "hf-dataset":
        return write_hf(path, list(items), catalogs, margin=margin, runs=run_ids)
    rows = (_openai_items(items, catalogs, tools) if fmt == "openai-jsonl"
            else _dpo_items(dpo_pairs(items, margin=margin), catalogs, tools))
    if tools == "inline":
        return _jsonl(path, rows)
    used: set[str] = set()

    def noting(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            if row["tools_id"] is not None:
                used.add(row["tools_id"])
            yield row

    def write_tools() -> None:  # in place before the rows that name its lists
        lists = {tid: listed for tid, listed in catalogs.lists.items() if tid in used}
        write_bytes(tools_path(path), orjson.dumps(lists) + b"\n")

    return _jsonl(path, noting(rows), before_commit=write_tools)


__all__ = ["FORMATS", "TOOLS_MODES", "ExportError", "Exported", "ToolCatalogs", "dpo_pairs",
           "episode_id", "export_runs", "iter_episodes", "pair_up", "tools_id", "tools_path"]
