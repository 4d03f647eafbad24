"""OTLP JSON traces: OpenTelemetry GenAI semantic conventions, and OpenInference.

Input is the OTLP/JSON encoding of ``ExportTraceServiceRequest`` (``resourceSpans[]
.scopeSpans[].spans[]``), as one document, as JSONL (one request a line, what the collector's
file exporter writes), or an array of requests or of bare spans. Every span is one record;
spans are grouped by ``traceId`` into episodes. What is read:

* tool executions: ``gen_ai.operation.name = execute_tool`` with ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``,
  ``error.type`` and the span status; OpenInference ``openinference.span.kind = TOOL`` with
  ``tool.name``, ``input.value``, ``output.value``. Durations come from ``startTimeUnixNano`` /
  ``endTimeUnixNano``: unlike the other formats, these are real tool latencies.
* the dialogue: inference spans' ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (parts
  ``text``, ``tool_call``, ``tool_call_response`` with ``response`` or ``result``), the legacy
  span events ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``, and
  OpenInference ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``.
* the declared tools: ``gen_ai.tool.definitions`` on an inference span, as
  ``metadata["tool_definitions"]``;
* the outcome: a ``gen_ai.evaluation.result`` span event (``gen_ai.evaluation.score.value`` as
  the reward, ``gen_ai.evaluation.score.label`` ``pass``/``fail`` as success), else an error
  status on the root span as a failed run.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import orjson

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import (
    Json,
    as_dict,
    loads_text,
    record_label,
    validate_episode,
)
from simforge.trace.formats._grouped import (
    GroupingAdapter,
    ObservedCall,
    build_conversation,
    longest_history,
)
from simforge.trace.formats.openai import tool_definitions
from simforge.trace.formats.otlp_values import (
    legacy_event_message,
    openinference_messages,
    parts_messages,
)
from simforge.trace.reader import Document, Record
from simforge.trace.registry import register_format

_TOOL_KEYS = frozenset({
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "error.type",
    "openinference.span.kind", "tool.name", "input.value", "output.value", "tool_call.id",
})
_INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})


def any_value(value: Any) -> Any:
    """Decode an OTLP ``AnyValue`` (``intValue`` arrives as a string in OTLP/JSON)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"]).hex()
    return None


def attributes(items: Any) -> Json:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise ValueError("attributes is not an array")
    return {item["key"]: any_value(item.get("value")) for item in items}


def _nanos(value: Any) -> float | None:
    if value in (None, "", 0, "0"):
        return None
    return int(value) / 1e9


def _spans_of(value: Any, location: Location) -> Iterator[Record]:
    """Flatten one request (or one resourceSpans entry, or a bare span) into span records."""
    if isinstance(value, dict) and "resourceSpans" in value:
        groups = value["resourceSpans"]
        if not isinstance(groups, list):
            yield Record(location, value=value, error="resourceSpans is not an array")
            return
        for i, group in enumerate(groups):
            yield from _spans_of_resource(group, location.child(f"resourceSpans[{i}]"))
    elif isinstance(value, dict) and "scopeSpans" in value:
        yield from _spans_of_resource(value, location)
    else:
        yield Record(location, value=(value, {}))


def _spans_of_resource(group: Any, location: Location) -> Iterator[Record]:
    try:
        resource = attributes((group.get("resource") or {}).get("attributes"))
        scopes = group.get("scopeSpans") or group.get("instrumentationLibrarySpans") or []
        if not isinstance(scopes, list):
            raise ValueError("scopeSpans is not an array")
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        yield Record(location, value=group, error=f"malformed resourceSpans entry: {exc}")
        return
    for j, scope in enumerate(scopes):
        spans = scope.get("spans") if isinstance(scope, dict) else None
        if not isinstance(spans, list):
            yield Record(location.child(f".scopeSpans[{j}]"), value=scope,
                         error="scopeSpans entry without a spans array")
            continue
        for k, span in enumerate(spans):
            yield Record(location.child(f".scopeSpans[{j}].spans[{k}]"), value=(span, resource))


@register_format
class OTLPFormat(GroupingAdapter):
    name = "otlp"
    description = "OTLP JSON traces (OpenTelemetry GenAI conventions, OpenInference)"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        if isinstance(value, dict):
            if "resourceSpans" in value or "scopeSpans" in value:
                return 1.0
            if "traceId" in value and "spanId" in value and "startTimeUnixNano" in value:
                return 0.9
        return 0.0

    def records(self, doc: Document) -> Iterator[Record]:
        source = doc.lines(parse=True) if doc.layout == "jsonl" else (
            doc.items("item") if doc.layout == "array" else doc.items("resourceSpans.item"))
        for record in source:
            if record.error is not None:
                yield record
                continue
            try:
                value = record.value
            except TraceFormatError:
                yield record
                continue
            spans = (_spans_of_resource(value, record.location) if doc.layout == "object"
                     else _spans_of(value, record.location))
            for span in spans:
                span.checked = record.checked
                yield span

    def decode(self, record: Record) -> Any:
        return record.value

    def accept(self, record: Any, location: Location) -> tuple[str, Any]:
        span, resource = record if isinstance(record, tuple) else (record, {})
        if not isinstance(span, dict):
            raise TraceFormatError(location, "a span is not an object")
        trace_id = span.get("traceId")
        if not isinstance(trace_id, str) or not trace_id:
            raise TraceFormatError(location, "span without a traceId")
        try:
            attrs = attributes(span.get("attributes"))
            start = _nanos(span.get("startTimeUnixNano"))
            end = _nanos(span.get("endTimeUnixNano"))
            events = [
                (e.get("name"), _nanos(e.get("timeUnixNano")), attributes(e.get("attributes")))
                for e in span.get("events") or []
            ]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise TraceFormatError(location, f"malformed span: {exc}") from None
        status = as_dict(span.get("status"))
        compact = {
            "span_id": span.get("spanId"),
            "parent": span.get("parentSpanId") or None,
            "name": span.get("name"),
            "start": start,
            "end": end,
            "attrs": attrs,
            "events": events,
            "status_error": status.get("code") in (2, "2", "STATUS_CODE_ERROR"),
            "status_message": status.get("message"),
            "resource": resource,
        }
        return trace_id, compact

    def build(self, key: str, items: list[Any], location: Location) -> Episode:
        spans = sorted(items, key=lambda s: s["start"] or 0.0)
        observed: list[ObservedCall] = []
        histories: list[list[Json]] = []
        for span in spans:
            attrs = span["attrs"]
            op = attrs.get("gen_ai.operation.name")
            kind = str(attrs.get("openinference.span.kind", "")).upper()
            if op == "execute_tool" or kind == "TOOL":
                observed.append(_tool_call(span))
                continue
            messages = self._dialogue(span, op, kind)
            if messages:
                histories.append(messages)
        conv = build_conversation(longest_history(histories), observed, location)
        root = next((s for s in spans if s["parent"] is None), spans[0])
        resource = root["resource"]
        turns = conv.user_turns()
        starts = [s["start"] for s in spans if s["start"] is not None]
        ends = [s["end"] for s in spans if s["end"] is not None]
        metadata: Json = {
            "root_span": root["name"],
            "spans": len(spans),
            "resource": resource,
            "started_at": min(starts) if starts else None,
            "ended_at": max(ends) if ends else None,
        }
        for attr in ("gen_ai.agent.name", "gen_ai.conversation.id", "gen_ai.provider.name",
                     "gen_ai.system", "gen_ai.request.model"):
            value = next((s["attrs"][attr] for s in spans if attr in s["attrs"]), None)
            if value is not None:
                metadata[attr] = value
        declared = next((found for s in spans if "gen_ai.tool.definitions" in s["attrs"]
                         if (found := tool_definitions(s["attrs"]["gen_ai.tool.definitions"]))),
                        None)
        if declared:
            metadata["tool_definitions"] = declared
        data = {
            "id": key,
            "source": {"format": self.name, "path": location.path,
                       "record": record_label(location)},
            "task": {"instruction": turns[0] if turns else None, "user_turns": turns},
            "messages": conv.messages,
            "tool_calls": conv.calls,
            "outcome": _outcome(spans, root),
            "metadata": metadata,
        }
        return validate_episode(data, location)

    def _dialogue(self, span: Json, op: Any, kind: str) -> list[Json]:
        attrs = span["attrs"]
        if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            inputs = parts_messages(_json(attrs.get("gen_ai.input.messages")))
            system = _json(attrs.get("gen_ai.system_instructions"))
            if system:
                inputs = [*parts_messages([{"role": "system", "parts": system}]), *inputs]
            outputs = parts_messages(_json(attrs.get("gen_ai.output.messages")))
            for message in outputs:
                message["timestamp"] = span["end"]
            return inputs + outputs
        if kind == "LLM":
            return openinference_messages(attrs)
        legacy = [m for name, at, ev in span["events"]
                  if (m := legacy_event_message(name, at, ev)) is not None]
        if legacy or op in _INFERENCE_OPS:
            return legacy
        return []


def _outcome(spans: list[Json], root: Json) -> Json:
    """The run's label: a ``gen_ai.evaluation.result`` event (GenAI semantic conventions:
    ``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label`` such as ``pass`` or
    ``fail``) on any span, else an error status on the root span means a failed run."""
    for span in spans:
        for name, _at, attrs in span["events"]:
            if name != "gen_ai.evaluation.result":
                continue
            out: Json = {}
            score = attrs.get("gen_ai.evaluation.score.value")
            if isinstance(score, int | float) and not isinstance(score, bool):
                out["reward"] = float(score)
            label = str(attrs.get("gen_ai.evaluation.score.label", "")).lower()
            if label in ("pass", "passed", "success", "correct", "fail", "failed", "incorrect"):
                out["success"] = label in ("pass", "passed", "success", "correct")
            if attrs.get("gen_ai.evaluation.name"):
                out["labels"] = {"evaluation": attrs["gen_ai.evaluation.name"]}
            if out:
                return out
    return {"success": False} if root["status_error"] else {}


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return loads_text(value)
        except orjson.JSONDecodeError:
            return None
    return value


def _tool_call(span: Json) -> ObservedCall:
    attrs = span["attrs"]
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    if not name:
        span_name = str(span.get("name") or "tool")
        name = span_name.removeprefix("execute_tool ").strip() or span_name
    has_result = "gen_ai.tool.call.result" in attrs or "output.value" in attrs
    result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
    error = None
    if span["status_error"] or "error.type" in attrs:
        error = span["status_message"] or attrs.get("error.type") or "error"
        for event_name, _at, event_attrs in span["events"]:
            if event_name == "exception" and event_attrs.get("exception.message"):
                error = error if span["status_message"] else event_attrs["exception.message"]
    extra = {k: v for k, v in attrs.items() if k not in _TOOL_KEYS}
    metadata: Json = {"span_id": span["span_id"], "span_name": span["name"]}
    if extra:
        metadata["attributes"] = extra
    return ObservedCall(
        tool=str(name),
        source_id=attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id"),
        arguments=attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value")),
        result=result,
        has_result=has_result,
        error=error,
        started_at=span["start"],
        ended_at=span["end"],
        metadata=metadata,
        fallback_id=span["span_id"],
    )

