"""Langfuse observations: ``TOOL`` observations are calls, ``GENERATION``s give the dialogue.

Accepted shapes: observations in an array, JSONL, or the API's ``{"data": [...]}`` page, grouped
into episodes by ``traceId``; or whole traces ``{id, input, output, observations: [...]}``.
``level: "ERROR"`` marks a failed call (its ``statusMessage`` is the error); ``startTime`` /
``endTime`` are ISO strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import Json, record_label, text_of, to_epoch, validate_episode
from simforge.trace.formats._grouped import (
    GroupingAdapter,
    ObservedCall,
    build_conversation,
    longest_history,
)
from simforge.trace.formats._messages import messages_in, tool_output
from simforge.trace.reader import Document, Record
from simforge.trace.registry import register_format

_TYPES = frozenset({"GENERATION", "TOOL", "SPAN", "EVENT", "AGENT", "CHAIN", "RETRIEVER",
                    "EMBEDDING", "EVALUATOR", "GUARDRAIL"})


def _is_observation(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _TYPES and (
        "traceId" in value or "startTime" in value)


@register_format
class LangfuseFormat(GroupingAdapter):
    name = "langfuse"
    description = "Langfuse observations (TOOL / GENERATION, level ERROR)"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        if isinstance(value, dict) and isinstance(value.get("data"), list) and value["data"]:
            value = value["data"][0]
        if _is_observation(value):
            return 0.95
        if isinstance(value, dict) and isinstance(value.get("observations"), list):
            first = value["observations"][0] if value["observations"] else None
            return 0.95 if first is None or _is_observation(first) else 0.0
        return 0.0

    def records(self, doc: Document) -> Iterator[Record]:
        if doc.layout == "object":
            return doc.items("data.item") if doc.top_level("data") is not None else \
                doc.items("")
        return super().records(doc)

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        if isinstance(record, dict) and isinstance(record.get("observations"), list):
            items = [self.accept(o, location.child(f".observations[{i}]"))[1]
                     for i, o in enumerate(record["observations"])]
            return (self.build(str(record.get("id") or record_label(location)), items, location,
                               trace=record),)
        return super().parse(record, location)

    def accept(self, record: Any, location: Location) -> tuple[str, Any]:
        if not isinstance(record, dict) or record.get("type") not in _TYPES:
            raise TraceFormatError(location, "not a Langfuse observation (no known `type`)")
        trace_id = record.get("traceId")
        if not trace_id:
            raise TraceFormatError(location, "observation without a traceId")
        obs = {
            "id": record.get("id"),
            "type": record["type"],
            "name": record.get("name"),
            "input": record.get("input"),
            "output": record.get("output"),
            "start": to_epoch(record.get("startTime")),
            "end": to_epoch(record.get("endTime")),
            "error": record.get("level") == "ERROR",
            "status": record.get("statusMessage"),
            "metadata": record.get("metadata"),
        }
        return str(trace_id), obs

    def build(self, key: str, items: list[Any], location: Location,
              trace: Json | None = None) -> Episode:
        observations = sorted(items, key=lambda o: o["start"] or 0.0)
        observed: list[ObservedCall] = []
        histories: list[list[Json]] = []
        for obs in observations:
            if obs["type"] == "TOOL":
                result, call_id = tool_output(obs["output"])
                meta = obs["metadata"] if isinstance(obs["metadata"], dict) else {}
                observed.append(ObservedCall(
                    tool=str(obs["name"] or "tool"),
                    source_id=call_id or meta.get("tool_call_id"),
                    arguments=obs["input"], result=result,
                    has_result=obs["output"] is not None,
                    error=(obs["status"] or text_of(obs["output"]) or "error")
                    if obs["error"] else None,
                    started_at=obs["start"], ended_at=obs["end"],
                    metadata={"observation_id": obs["id"]}, fallback_id=obs["id"]))
            elif obs["type"] == "GENERATION":
                histories.append(messages_in(obs["input"]) + messages_in(obs["output"]))
        conv = build_conversation(longest_history(histories), observed, location)
        turns = conv.user_turns()
        trace = trace or {}
        instruction = trace.get("input") if isinstance(trace.get("input"), str) else (
            turns[0] if turns else None)
        starts = [o["start"] for o in observations if o["start"] is not None]
        data = {
            "id": key,
            "source": {"format": self.name, "path": location.path,
                       "record": record_label(location)},
            "task": {"instruction": instruction, "user_turns": turns},
            "messages": conv.messages,
            "tool_calls": conv.calls,
            "outcome": {"labels": {"scores": trace["scores"]} if trace.get("scores") else {}},
            "metadata": {"observations": len(observations),
                         "started_at": min(starts) if starts else None,
                         **({"name": trace["name"]} if trace.get("name") else {})},
        }
        return validate_episode(data, location)
