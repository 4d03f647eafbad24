"""Message shapes inside GenAI telemetry, turned into OpenAI-style message dicts.

Three generations of the conventions coexist in the wild: ``parts`` messages (the current
``gen_ai.input.messages`` / ``gen_ai.output.messages``), the legacy per-message span events,
and OpenInference's flattened ``llm.*_messages.N.message.*`` attributes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from simforge.trace.formats._common import Json, dumps


def parts_messages(messages: Any) -> list[Json]:
    """``[{role, parts:[text | tool_call | tool_call_response ...]}]`` to OpenAI dicts; a
    message with tool responses becomes one ``tool`` message per response."""
    out: list[Json] = []
    if not isinstance(messages, list):
        return out
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role") or "assistant"
        texts: list[str] = []
        calls: list[Json] = []
        other: list[Any] = []
        for part in message.get("parts") or []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "tool_call":
                calls.append({"id": part.get("id"), "type": "function",
                              "function": {"name": part.get("name"),
                                           "arguments": part.get("arguments")}})
            elif kind == "tool_call_response":
                response = part.get("response", part.get("result"))
                out.append({"role": "tool", "tool_call_id": part.get("id"),
                            "content": response})
            else:
                other.append(part)
        if texts or calls or (role != "tool" and not other):
            entry: Json = {"role": "assistant" if role == "model" else role,
                           "content": "\n".join(texts) if texts else None}
            if calls:
                entry["tool_calls"] = calls
            if other:
                entry["parts"] = other
            if message.get("finish_reason"):
                entry["finish_reason"] = message["finish_reason"]
            out.append(entry)
    return out


_LEGACY_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


def legacy_event_message(name: Any, at: float | None, attrs: Json) -> Json | None:
    """A legacy ``gen_ai.*`` event as a message. Its body may be a structured ``body``
    attribute, a JSON string in ``gen_ai.event.content``, or flat attributes."""
    role = _LEGACY_ROLES.get(name) if isinstance(name, str) else None
    if role is None:
        return None
    body: Any = attrs.get("body", attrs.get("gen_ai.event.content", attrs))
    if isinstance(body, str):
        import orjson

        from simforge.trace.formats._common import loads_text

        try:
            body = loads_text(body)
        except orjson.JSONDecodeError:
            body = {"content": body}
    if not isinstance(body, dict):
        body = {"content": body}
    if name == "gen_ai.choice" and isinstance(body.get("message"), dict):
        body = {**body["message"], "finish_reason": body.get("finish_reason")}
    message: Json = {"role": body.get("role") or role, "content": _text(body.get("content"))}
    if role == "tool":
        message["role"] = "tool"
        message["tool_call_id"] = body.get("id")
    if body.get("tool_calls") is not None:
        message["tool_calls"] = body["tool_calls"]  # a non-array is the record's error
    if at is not None:
        message["timestamp"] = at
    return message


def _text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return dumps(value)


def openinference_messages(attrs: Json) -> list[Json]:
    """Rebuild ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``."""
    out: list[Json] = []
    for prefix in ("llm.input_messages.", "llm.output_messages."):
        messages: dict[int, Json] = defaultdict(dict)
        calls: dict[int, dict[int, Json]] = defaultdict(lambda: defaultdict(dict))
        for key, value in attrs.items():
            if not key.startswith(prefix):
                continue
            index, _, rest = key[len(prefix):].partition(".")
            if not index.isdigit():
                continue
            i = int(index)
            if rest.startswith("message.tool_calls."):
                j_text, _, field = rest[len("message.tool_calls."):].partition(".")
                if j_text.isdigit():
                    calls[i][int(j_text)][field] = value
            elif rest.startswith("message."):
                messages[i][rest[len("message."):]] = value
        for i in sorted(set(messages) | set(calls)):
            fields = messages.get(i, {})
            message: Json = {"role": fields.get("role", "assistant"),
                             "content": fields.get("content")}
            if fields.get("tool_call_id") is not None:
                message["tool_call_id"] = fields["tool_call_id"]
            if calls.get(i):
                message["tool_calls"] = [
                    {"id": c.get("tool_call.id"),
                     "function": {"name": c.get("tool_call.function.name"),
                                  "arguments": c.get("tool_call.function.arguments")}}
                    for _, c in sorted(calls[i].items())
                ]
            out.append(message)
    return out
