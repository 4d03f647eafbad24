"""LangSmith run exports: one run per record (a JSON array, JSONL, or ``{"runs": [...]}``).

Runs are grouped into episodes by ``trace_id`` (else the root run id at the head of
``dotted_order``, else the parent). ``tool`` runs are the calls, with ``start_time`` /
``end_time`` and ``error``; the ``llm`` run with the longest input gives the dialogue; the root
run gives the task (its input) and the outcome (its error, any feedback). Tools an ``llm`` run
declares (``extra.invocation_params.tools`` or ``functions``, or ``inputs.tools``) are kept as
``metadata["tool_definitions"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import (
    Json,
    as_dict,
    record_label,
    text_of,
    to_epoch,
    validate_episode,
)
from simforge.trace.formats._grouped import (
    GroupingAdapter,
    ObservedCall,
    build_conversation,
    longest_history,
)
from simforge.trace.formats._messages import messages_in, tool_input, tool_output
from simforge.trace.formats.openai import tool_definitions
from simforge.trace.reader import Document, Record
from simforge.trace.registry import register_format

_RUN_TYPES = frozenset({"tool", "llm", "chain", "retriever", "prompt", "parser", "embedding"})


def _trace_key(run: Json) -> str:
    if run.get("trace_id"):
        return str(run["trace_id"])
    dotted = run.get("dotted_order")
    if isinstance(dotted, str) and "Z" in dotted:
        return dotted.split(".", 1)[0].split("Z", 1)[1]
    return str(run.get("parent_run_id") or run["id"])


@register_format
class LangSmithFormat(GroupingAdapter):
    name = "langsmith"
    description = "LangSmith run exports (run_type, inputs, outputs, dotted_order)"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        if isinstance(value, dict) and isinstance(value.get("runs"), list) and value["runs"]:
            value = value["runs"][0]
        is_run = isinstance(value, dict) and value.get("run_type") in _RUN_TYPES
        return 0.95 if is_run and ("inputs" in value or "outputs" in value) else 0.0

    def records(self, doc: Document) -> Iterator[Record]:
        head = doc.skeleton() if doc.layout == "object" else None
        if isinstance(head, dict) and "runs" in head:
            return doc.items("runs.item")
        return super().records(doc)

    def accept(self, record: Any, location: Location) -> tuple[str, Any]:
        if not isinstance(record, dict):
            raise TraceFormatError(location, "a run is not an object")
        if not record.get("id") or not isinstance(record.get("run_type"), str):
            raise TraceFormatError(location, "a run needs `id` and `run_type`")
        run = {
            "id": str(record["id"]),
            "name": record.get("name"),
            "run_type": record["run_type"],
            "inputs": record.get("inputs"),
            "outputs": record.get("outputs"),
            "error": record.get("error"),
            "start": to_epoch(record.get("start_time")),
            "end": to_epoch(record.get("end_time")),
            "parent": record.get("parent_run_id"),
            "order": record.get("dotted_order") or "",
            "extra": {k: record[k] for k in ("tags", "session_id", "feedback_stats", "extra")
                      if record.get(k)},
        }
        return _trace_key(record), run

    def build(self, key: str, items: list[Any], location: Location) -> Episode:
        runs = sorted(items, key=lambda r: (r["order"], r["start"] or 0.0))
        observed: list[ObservedCall] = []
        histories: list[list[Json]] = []
        declared: list[Json] | None = None
        for run in runs:
            if run["run_type"] == "tool":
                result, call_id = tool_output(run["outputs"])
                observed.append(ObservedCall(
                    tool=str(run["name"] or "tool"), source_id=call_id,
                    arguments=tool_input(run["inputs"]), result=result,
                    has_result=run["outputs"] is not None,
                    error=text_of(run["error"]) if run["error"] else None,
                    started_at=run["start"], ended_at=run["end"],
                    metadata={"run_id": run["id"]}, fallback_id=run["id"]))
            elif run["run_type"] == "llm":
                history = messages_in(run["inputs"]) + messages_in(run["outputs"])
                histories.append(history)
                declared = declared or _declared(run)
        conv = build_conversation(longest_history(histories), observed, location)
        root = next((r for r in runs if not r["parent"]), runs[0])
        turns = conv.user_turns()
        instruction = _root_input(root["inputs"]) or (turns[0] if turns else None)
        feedback = root["extra"].get("feedback_stats")
        labels: Json = {"feedback_stats": feedback} if feedback else {}
        metadata: Json = {"root_run": root["name"], "runs": len(runs),
                          "started_at": root["start"], "ended_at": root["end"],
                          **{k: v for k, v in root["extra"].items() if k != "feedback_stats"}}
        if declared:
            metadata["tool_definitions"] = declared
        if root["error"]:
            labels["error"] = root["error"]
        data = {
            "id": key,
            "source": {"format": self.name, "path": location.path,
                       "record": record_label(location)},
            "task": {"instruction": instruction, "user_turns": turns},
            "messages": conv.messages,
            "tool_calls": conv.calls,
            "outcome": {"success": False if root["error"] else None, "labels": labels},
            "metadata": metadata,
        }
        return validate_episode(data, location)


def _declared(run: Json) -> list[Json] | None:
    """The tools an llm run was offered: LangChain's ``extra.invocation_params`` (``tools``,
    ``functions``) or the run's ``inputs.tools``."""
    extra = as_dict(as_dict(run["extra"]).get("extra"))
    params = as_dict(extra.get("invocation_params"))
    inputs = as_dict(run["inputs"])
    for value in (params.get("tools"), params.get("functions"), inputs.get("tools")):
        found = tool_definitions(value)
        if found:
            return found
    return None


def _root_input(inputs: Any) -> str | None:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, dict):
        for key in ("input", "question", "query", "task", "instruction"):
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
    return None
