"""OpenAI Chat Completions message lists: ``tool_calls`` answered by ``role: "tool"`` messages,
and the legacy ``function_call`` answered by ``role: "function"``.

Accepted shapes: a JSON array of messages (one conversation), JSONL or an array of
conversations, where a conversation is a list of messages or an object with ``messages`` (a
request log: ``choices`` or ``response.choices`` is appended as the assistant's reply). A request
log's declared ``tools`` (or legacy ``functions``) are also kept, normalised, as
``metadata["tool_definitions"]`` (see :func:`tool_definitions`), called or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from simforge.trace.detect import SAMPLE_SCAN, Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import Json, to_epoch, validate_episode
from simforge.trace.formats._conversation import Conversation, conversation_episode, is_message
from simforge.trace.reader import Document, Record
from simforge.trace.registry import FormatAdapter, register_format

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def message_list(value: Any) -> list[Any] | None:
    """The messages of a sampled conversation, whatever its shape."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return value["messages"]
        if "role" in value:
            return [value]
    return None


def block_types(messages: list[Any]) -> set[str]:
    types: set[str] = set()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            types.update(str(b.get("type")) for b in content if isinstance(b, dict))
    return types


def is_message_array(doc: Document) -> bool:
    """Whether an array document is one conversation: most of its first readable items are
    chat messages (one stray message-like item among conversations does not make it one)."""
    if doc.layout != "array":
        return False
    items = doc.sample_items(SAMPLE_SCAN)
    return 2 * sum(is_message(item) for item in items) > len(items)


def conversation_records(doc: Document) -> Iterator[Record]:
    """Records of a conversation file: an array of messages is one conversation."""
    if is_message_array(doc):
        whole = doc.loaded()
        if whole is not None:
            yield Record(Location(doc.path), value=whole, checked=doc.shallow)
            return
        messages: list[Any] = []
        for record in doc.items("item"):
            if record.error is not None:
                yield record
                return
            messages.append(record.value)
        yield Record(Location(doc.path), value=messages)
        return
    if doc.layout == "jsonl":
        yield from doc.lines(parse=True)
    elif doc.layout == "array":
        yield from doc.items("item")
    else:
        yield from doc.items("")


@register_format
class OpenAIFormat(FormatAdapter):
    name = "openai"
    description = "OpenAI Chat Completions messages (tool_calls / function_call)"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        messages = message_list(sample.value)
        if not messages or not all(isinstance(m, dict) and "role" in m for m in messages[:5]):
            return 0.0
        if block_types(messages) & _ANTHROPIC_BLOCKS:
            return 0.0
        for m in messages:
            if m.get("tool_calls") or m.get("function_call") or m.get("role") in ("tool",
                                                                                 "function"):
                return 0.9
        return 0.5

    def records(self, doc: Document) -> Iterator[Record]:
        return conversation_records(doc)

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        meta: Json = {}
        episode_id = None
        if isinstance(record, dict) and "messages" in record:
            messages = record["messages"]
            meta = {k: v for k, v in record.items()
                    if k not in ("messages", "choices", "response", "id")}
            episode_id = record.get("id")
            reply = _reply(record)
            if reply is not None and isinstance(messages, list):
                messages = [*messages, reply]
        elif isinstance(record, list):
            messages = record
        else:
            raise TraceFormatError(location, "expected a list of messages or an object with "
                                             "`messages`")
        if not isinstance(messages, list):
            raise TraceFormatError(location, "`messages` is not an array")
        conv = Conversation()
        for i, message in enumerate(messages):
            stamp = to_epoch(message.get("timestamp")) if isinstance(message, dict) else None
            try:
                conv.add_openai(message, location, stamp)
            except TraceFormatError as exc:
                raise TraceFormatError(location.child(f".messages[{i}]"), exc.reason) from None
        declared = tool_definitions(meta.get("tools", meta.get("functions")))
        if declared:
            meta["tool_definitions"] = declared
        data = conversation_episode(conv, self.name, location, episode_id=episode_id,
                                    metadata=meta, built=True)
        return (validate_episode(data, location),)


def tool_definitions(value: Any) -> list[Json] | None:
    """Declared tools as ``[{"name", "description", "parameters"}]`` (``parameters``: a JSON
    schema), from the shapes traces carry them in: OpenAI ``tools``
    (``{"type": "function", "function": {...}}``) and legacy ``functions``, flat
    ``{"name", "description", "parameters"}`` (OTLP ``gen_ai.tool.definitions``), Anthropic's
    ``input_schema``, or a dict keyed by tool name. ``None`` when nothing is declared."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if isinstance(value, dict):
        value = [
            {"name": name, **spec} if isinstance(spec, dict) and "name" not in spec else spec
            for name, spec in value.items()
        ]
    if not isinstance(value, list):
        return None
    out: list[Json] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        inner = item.get("function")
        spec: Json = inner if isinstance(inner, dict) else item
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            continue
        entry: Json = {"name": name}
        description = spec.get("description")
        if isinstance(description, str):
            entry["description"] = description
        parameters = spec.get("parameters", spec.get("input_schema", spec.get("inputSchema")))
        if isinstance(parameters, dict):
            entry["parameters"] = parameters
        out.append(entry)
    return out or None


def _reply(record: Json) -> Any:
    response = record.get("response")
    holder = response if isinstance(response, dict) else record
    choices = holder.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("message")
    return None
