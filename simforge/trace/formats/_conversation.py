"""A conversation under construction: messages and tool calls as dicts, with call pairing.

OpenAI-style logs (plain OpenAI, tau-bench, LangSmith and Langfuse generations) all pair a tool
result to its call by id, but ids are not reliable: tau-bench reuses them inside a trajectory
and legacy ``function_call`` has none. Pending calls are therefore kept per id in issue order
and a result answers the oldest unanswered call with its id, which is "the call that precedes
it" for every log seen so far.
"""

from __future__ import annotations

from typing import Any

from simforge.trace.episode import Message, ToolCall, trusted
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import (
    CallIds,
    Json,
    parse_args,
    parse_result,
    text_of,
)

_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}
_OPENAI_KEYS = frozenset(
    {"role", "content", "tool_calls", "tool_call_id", "function_call", "timestamp"}
)
_RENAMED_ROLES = frozenset({"developer", "function", "human", "ai"})
"""Source roles that map to another role: the original is kept as ``source_role``."""


_message = trusted(Message)
_call = trusted(ToolCall)
REQUESTORS = ("assistant", "user", "environment")
"""The values of ``ToolCall.requestor``: an adapter that passes a source's own checks it."""


def role_of(value: Any, location: Location) -> str:
    try:
        return _ROLES[value]
    except (KeyError, TypeError):  # TypeError: an unhashable value
        raise TraceFormatError(location, f"unknown message role {value!r}") from None


class Conversation:
    """Accumulates messages and calls; ``error_prefix`` marks results that are errors by text
    (tau-bench's ``Error: ...``)."""

    def __init__(self, error_prefix: str | None = None) -> None:
        self.messages: list[Json] = []
        self.calls: list[Json] = []
        self.ids = CallIds()
        self.error_prefix = error_prefix
        self._pending: dict[str, list[Json]] = {}
        self._pending_functions: list[Json] = []

    def add_message(self, message: Json) -> int:
        self.messages.append(message)
        return len(self.messages) - 1

    def add_call(
        self,
        source_id: Any,
        tool: Any,
        arguments: Any,
        location: Location,
        *,
        message_index: int | None,
        requestor: str = "assistant",
        started_at: float | None = None,
    ) -> Json:
        if not isinstance(tool, str) or not tool:
            raise TraceFormatError(location, f"tool call without a tool name: {tool!r}")
        call_id, original = self.ids.claim(source_id)
        # Keys equal to a field's default are left out: validation then skips them.
        call: Json = {"call_id": call_id, "tool": tool}
        if type(arguments) is dict:  # already an object: nothing to parse or keep raw
            call["args"] = arguments
        elif arguments is not None:
            args, raw_args, problem = parse_args(arguments)
            if args is not None:
                call["args"] = args
            if raw_args is not None:
                call["raw_args"] = raw_args
            if problem:
                call["metadata"] = {"args_error": problem}
        if requestor != "assistant":
            call["requestor"] = requestor
        if message_index is not None:
            call["message_index"] = message_index
        if original is not None:
            call["source_call_id"] = original
        if started_at is not None:
            call["started_at"] = started_at
        self.calls.append(call)
        if original is None and call_id == source_id:  # a new id, as the source gave it
            self._pending[call_id] = [call]
        elif source_id is None or source_id == "":
            self._pending_functions.append(call)
        else:
            key = str(source_id)
            queue = self._pending.get(key)
            if queue is None:
                self._pending[key] = [call]
            else:
                queue.append(call)
        return call

    def answer(
        self,
        source_id: Any,
        content: Any,
        *,
        name: str | None = None,
        error: Any = None,
        ended_at: float | None = None,
    ) -> Json | None:
        """Attach a result to the oldest pending call with this id (or, without an id, to the
        oldest pending id-less call of that name). Returns the call, or ``None`` if orphaned."""
        call = None
        if source_id is not None and source_id != "":
            queue = self._pending.get(source_id if type(source_id) is str else str(source_id))
            if queue:
                call = queue.pop(0)
        else:
            for i, pending in enumerate(self._pending_functions):
                if name is None or pending["tool"] == name:
                    call = self._pending_functions.pop(i)
                    break
        if call is None:
            return None
        if content is not None:
            result, raw = parse_result(content)
            call["result"] = result
            if raw is not None:
                call["raw_result"] = raw
        if ended_at is not None:
            call["ended_at"] = ended_at
        if error is True:
            call["error"] = text_of(content) if content not in (None, "") else "error"
        elif isinstance(error, str) and error:
            call["error"] = error
        elif (
            self.error_prefix is not None
            and isinstance(content, str)
            and content.startswith(self.error_prefix)
        ):
            call["error"] = content
        return call

    def add_openai(self, raw: Any, location: Location, timestamp: float | None = None) -> None:
        """One OpenAI Chat Completions message (tool_calls, tool results, legacy functions)."""
        if not isinstance(raw, dict):
            raise TraceFormatError(location, "a message is not an object")
        get = raw.get
        source_role = get("role")
        role = _ROLES.get(source_role) if type(source_role) is str else None
        if role is None:
            role = role_of(source_role, location)  # raises, naming the role
        content = get("content")
        message: Json = {"role": role}
        if content is not None:
            message["content"] = content if type(content) is str else text_of(content)
        if timestamp is not None:
            message["timestamp"] = timestamp
        renamed = source_role in _RENAMED_ROLES
        # Most messages carry only the keys read here: no metadata dict to build for them.
        if renamed or not raw.keys() <= _OPENAI_KEYS:
            meta = {k: v for k, v in raw.items() if k not in _OPENAI_KEYS}
            if renamed:
                meta["source_role"] = source_role
            if meta:
                message["metadata"] = meta
        if role == "tool":
            tool_call_id = get("tool_call_id")
            if source_role == "function":
                call = self.answer(None, content, name=get("name"), ended_at=timestamp)
            else:
                call = self.answer(tool_call_id, content,
                                   error=get("error") or get("is_error"), ended_at=timestamp)
            if call is not None:
                message["call_id"] = call["call_id"]
            elif tool_call_id is not None:
                message.setdefault("metadata", {})["tool_call_id"] = tool_call_id
            self.messages.append(message)
            return
        tool_calls = get("tool_calls")
        legacy = get("function_call")
        if tool_calls is not None and type(tool_calls) is not list:
            # a falsy non-array ("", 0, false, {}) once read as "no calls", leaving the
            # results that answer them orphaned
            raise TraceFormatError(location, f"tool_calls is not an array: {tool_calls!r:.40}")
        if legacy is not None and not isinstance(legacy, dict):
            raise TraceFormatError(location, f"function_call is not an object: {legacy!r:.40}")
        if tool_calls or legacy is not None:
            index = len(self.messages)
            ids: list[str] = []
            if tool_calls:
                for tc in tool_calls:
                    if not isinstance(tc, dict):
                        raise TraceFormatError(location, "a tool call is not an object")
                    fn = tc.get("function")
                    if not isinstance(fn, dict):
                        fn = tc
                    call = self.add_call(tc.get("id"), fn.get("name"), fn.get("arguments"),
                                         location, message_index=index, started_at=timestamp)
                    ids.append(call["call_id"])
            if isinstance(legacy, dict):
                call = self.add_call(None, legacy.get("name"), legacy.get("arguments"),
                                     location, message_index=index, started_at=timestamp)
                ids.append(call["call_id"])
            if ids:
                message["tool_call_ids"] = ids
        self.messages.append(message)

    def built(self) -> tuple[list[Message], list[ToolCall]]:
        """The messages and calls as models, built without validating them a second time.

        Every value in them was checked or made by this class: roles come from the role table,
        texts from ``text_of``, arguments from ``parse_args``, results from ``parse_result``,
        ids from :class:`CallIds`, message indexes from ``len``, and times are what the adapter
        passed, which ``to_epoch`` made. An adapter may use this only if what it adds to the
        dicts itself keeps to that (tau2 and tau-bench check the requestor they pass; OpenAI
        adds nothing); the others hand the dicts to ``validate_episode``.
        """
        return [_message(m) for m in self.messages], [_call(c) for c in self.calls]

    def user_turns(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "user" and m.get("content")]


def conversation_episode(
    conv: Conversation,
    fmt: str,
    location: Location,
    *,
    episode_id: Any = None,
    metadata: Json | None = None,
    built: bool = False,
) -> Json:
    """The episode dict of a plain conversation log (no task, no outcome of its own).

    Without an id in the record, the file name plus the record's position names the episode,
    which is unique within a run and stable across runs. ``built`` hands over the messages and
    calls as models (see :meth:`Conversation.built`), for adapters that add nothing of their own.
    """
    from pathlib import PurePath

    from simforge.trace.formats._common import record_label

    label = record_label(location)
    if episode_id is None:
        episode_id = f"{PurePath(location.path).stem}:{label or 'doc'}"
    system = next((m.get("content") for m in conv.messages if m["role"] == "system"), None)
    turns = conv.user_turns()
    messages, calls = conv.built() if built else (conv.messages, conv.calls)
    return {
        "id": str(episode_id),
        "source": {"format": fmt, "path": location.path, "record": label},
        "task": {
            "instruction": turns[0] if turns else None,
            "user_turns": turns,
            "metadata": {"system": system} if system else {},
        },
        "messages": messages,
        "tool_calls": calls,
        "metadata": metadata or {},
    }


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "messages" not in value
