"""Chat messages as LangChain, LangSmith and Langfuse serialise them, to OpenAI-style dicts.

LangChain objects come as ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
"kwargs": {...}}`` or as ``{"type": "ai", "content", "tool_calls": [{"name", "args", "id"}]}``;
OpenAI-style dicts pass through.
"""

from __future__ import annotations

from typing import Any

from simforge.trace.formats._common import Json

_CLASS_ROLES = {
    "HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system",
    "ToolMessage": "tool", "FunctionMessage": "function", "ChatMessage": "user",
    "HumanMessageChunk": "user", "AIMessageChunk": "assistant",
}
_TYPE_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
               "function": "function", "user": "user", "assistant": "assistant"}


def to_openai_message(value: Any) -> Json | None:
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        class_name = value.get("id", [""])[-1] if isinstance(value.get("id"), list) else ""
        kwargs: Json = value["kwargs"]
        role = kwargs.get("role") or _CLASS_ROLES.get(class_name, "user")
        return _from_fields(role, kwargs)
    if "role" in value:
        return value
    if isinstance(value.get("type"), str) and value["type"] in _TYPE_ROLES:
        data: Json = value["data"] if isinstance(value.get("data"), dict) else value
        return _from_fields(_TYPE_ROLES[value["type"]], data)
    return None


def _from_fields(role: str, fields: Json) -> Json:
    message: Json = {"role": role, "content": fields.get("content")}
    calls = fields.get("tool_calls")
    if not calls and isinstance(fields.get("additional_kwargs"), dict):
        calls = fields["additional_kwargs"].get("tool_calls") or calls
    if calls is not None and not isinstance(calls, list):
        message["tool_calls"] = calls  # not an array: the conversation rejects the record
    elif calls:
        message["tool_calls"] = [
            c if "function" in c else
            {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args")}}
            for c in calls if isinstance(c, dict)
        ]
    if fields.get("tool_call_id") is not None:
        message["tool_call_id"] = fields["tool_call_id"]
    if fields.get("name") is not None and role in ("tool", "function"):
        message["name"] = fields["name"]
    return message


def messages_in(value: Any) -> list[Json]:
    """The chat messages of an LLM call's input or output, whatever the wrapper."""
    if isinstance(value, dict):
        for key in ("messages", "input", "prompts"):
            if key in value and isinstance(value[key], list):
                return messages_in(value[key])
        if isinstance(value.get("choices"), list) and value["choices"]:
            return messages_in([c.get("message") for c in value["choices"]
                                if isinstance(c, dict)][:1])
        if isinstance(value.get("generations"), list):
            flat = value["generations"]
            while flat and isinstance(flat[0], list):
                flat = flat[0]
            return messages_in([g.get("message", {"role": "assistant", "content": g.get("text")})
                                for g in flat[:1] if isinstance(g, dict)])
        single = to_openai_message(value)
        return [single] if single else []
    if isinstance(value, list):
        if value and isinstance(value[0], list):
            value = value[0]
        return [m for m in (to_openai_message(v) for v in value) if m is not None]
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    return []


def tool_output(value: Any) -> tuple[Any, str | None]:
    """A tool's output and, when it is a serialised ToolMessage, the call id it answers."""
    if isinstance(value, dict) and set(value) == {"output"}:
        value = value["output"]
    if isinstance(value, dict) and value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        kwargs = value["kwargs"]
        return kwargs.get("content"), kwargs.get("tool_call_id")
    if isinstance(value, dict) and value.get("type") == "tool" and "content" in value:
        return value.get("content"), value.get("tool_call_id")
    return value, None


def tool_input(value: Any) -> Any:
    """A tool's arguments: LangChain wraps a single string argument as ``{"input": "..."}``."""
    if isinstance(value, dict) and set(value) == {"input"} and isinstance(value["input"], str):
        return value["input"]
    return value
