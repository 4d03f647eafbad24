"""The agent's move: tool calls, a message to the user, or a final answer.

An action may be written the way agents already write them: our own shape, an OpenAI assistant
message (``tool_calls`` with ``function.arguments`` as a JSON string), a bare list of calls, or a
string. A text without calls (a string, an assistant message with content and no calls, or
``{"message": ...}``) is a message to the user: the user answers, or, when the user has nothing
more to say, the conversation is over and the text is the agent's final answer. So a
single-turn task ends at the first text, as it always did, and one explicit way to end at once
stays: ``{"final_answer": ...}``. Text beside calls is said along with them (it is recorded,
and counts as the agent's last text), not sent to the user as a message of its own.
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from simforge.errors import UserError
from simforge.sim.session import CallRequest


class ActionError(UserError, ValueError):
    """An action the environment cannot interpret; names the part that is wrong."""


class ActionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = Field(default_factory=dict)
    id: str | None = None


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_calls: list[ActionCall] = Field(default_factory=list)
    message: str | None = None
    final_answer: str | None = None
    think: float | None = Field(None, ge=0)
    metadata: dict[str, Any] | None = Field(
        None, description="Recorded with the agent's turn (an LLM's token usage and latency)."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Action:
        kinds = sum([bool(self.tool_calls), self.final_answer is not None])
        if kinds == 0 and self.message is None:
            raise ValueError("an action needs tool_calls, a message or a final_answer")
        if kinds > 1:
            raise ValueError("an action has tool_calls or a final_answer, not both")
        if self.final_answer is not None and self.message is not None:
            raise ValueError("an action has a message or a final_answer, not both")
        return self


def parse_action(raw: Any) -> Action:
    if isinstance(raw, Action):
        return raw
    if isinstance(raw, str):
        return Action(message=raw)
    if isinstance(raw, list):
        raw = {"tool_calls": raw}
    if not isinstance(raw, dict):
        raise ActionError(
            f"action: expected an object, a list of calls or a string, got {type(raw).__name__}"
        )
    data = dict(raw)
    if data.get("role") == "assistant":  # an OpenAI assistant message
        data.pop("role")
        content = data.pop("content", None)
        if isinstance(content, list):  # content parts: the text ones, joined
            content = "".join(
                p.get("text") or "" for p in content if isinstance(p, dict)
            )
        refusal = data.pop("refusal", None)
        if not data.get("tool_calls") and content is None and isinstance(refusal, str):
            content = refusal
        if data.get("tool_calls"):
            data["message"] = content or None
        elif content is not None:
            data["message"] = content
        for key in ("name", "audio", "annotations", "function_call", "reasoning_content"):
            data.pop(key, None)
    if "tool_calls" in data:
        data["tool_calls"] = [_call(c, i) for i, c in enumerate(data["tool_calls"] or [])]
    try:
        return Action.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "action"
        raise ActionError(f"action.{where}: {first['msg']}") from None


_CALL_KEYS = frozenset({"name", "arguments", "id"})


def fast_calls(raw: Any) -> list[CallRequest] | None:
    """The common shape checked by hand, straight to kernel requests:
    ``{"tool_calls": [{"name": str, "arguments": dict, "id"?: str}]}``. ``None`` for anything
    else, which takes the validating path of :func:`parse_action` (both accept the same calls)."""
    if type(raw) is not dict or len(raw) != 1 or "tool_calls" not in raw:
        return None
    calls = raw["tool_calls"]
    if type(calls) is not list or not calls:
        return None
    out = []
    for call in calls:
        if type(call) is not dict or not (call.keys() <= _CALL_KEYS):
            return None
        name, args, id = call.get("name"), call.get("arguments", {}), call.get("id")
        if type(name) is not str or type(args) is not dict or not (id is None or type(id) is str):
            return None
        out.append(_request((name, args, id)))
    return out


_request = functools.partial(tuple.__new__, CallRequest)
"""``CallRequest(name, args, id)`` without the named tuple's ``__new__`` in Python around it."""


def _call(raw: Any, index: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ActionError(
            f"action.tool_calls.{index}: expected an object, got {type(raw).__name__}"
        )
    call = dict(raw)
    if "function" in call:  # OpenAI: {"id", "type": "function", "function": {"name", "arguments"}}
        fn = call.pop("function") or {}
        call.pop("type", None)
        call["name"] = fn.get("name")
        call["arguments"] = fn.get("arguments", {})
    if "tool" in call and "name" not in call:
        call["name"] = call.pop("tool")
    if "args" in call and "arguments" not in call:
        call["arguments"] = call.pop("args")
    args = call.get("arguments")
    if isinstance(args, str):
        # Invalid JSON stays a string: the tool answers 422 naming it, as a real API would.
        with contextlib.suppress(json.JSONDecodeError):
            call["arguments"] = json.loads(args) if args.strip() else {}
    if not isinstance(call.get("name"), str):
        raise ActionError(f"action.tool_calls.{index}.name: a tool name (string) is required")
    return call
