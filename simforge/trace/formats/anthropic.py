"""Anthropic Messages: ``tool_use`` blocks in assistant turns, ``tool_result`` blocks (with
``is_error``) in user turns.

Accepted shapes as for OpenAI: an array of messages, JSONL or an array of conversations, a
conversation being a message list or ``{system?, messages, response?}`` where ``response`` is
the Message the API returned. A user turn that carries tool results becomes one ``tool``
message per result, then a ``user`` message for any text beside them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import Json, text_of, validate_episode
from simforge.trace.formats._conversation import Conversation, conversation_episode, role_of
from simforge.trace.formats.openai import block_types, conversation_records, message_list
from simforge.trace.reader import Document, Record
from simforge.trace.registry import FormatAdapter, register_format

_MESSAGE_KEYS = frozenset({"role", "content"})


@register_format
class AnthropicFormat(FormatAdapter):
    name = "anthropic"
    description = "Anthropic Messages (tool_use / tool_result blocks)"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        messages = message_list(sample.value)
        if not messages:
            return 0.0
        types = block_types(messages)
        if types & {"tool_use", "tool_result", "thinking"}:
            return 0.95
        if isinstance(sample.value, dict) and "system" in sample.value and types:
            return 0.6
        return 0.0

    def records(self, doc: Document) -> Iterator[Record]:
        return conversation_records(doc)

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        conv = Conversation()
        meta: Json = {}
        episode_id = None
        if isinstance(record, dict) and "messages" in record:
            messages = record["messages"]
            episode_id = record.get("id")
            meta = {k: v for k, v in record.items()
                    if k not in ("messages", "system", "response", "id")}
            system = record.get("system")
            if system:
                conv.add_message({"role": "system", "content": text_of(system)})
            response = record.get("response")
            if isinstance(response, dict) and isinstance(messages, list):
                messages = [*messages, response]
        elif isinstance(record, list):
            messages = record
        else:
            raise TraceFormatError(location, "expected a list of messages or an object with "
                                             "`messages`")
        if not isinstance(messages, list):
            raise TraceFormatError(location, "`messages` is not an array")
        for i, message in enumerate(messages):
            try:
                self._add(conv, message, location)
            except TraceFormatError as exc:
                raise TraceFormatError(location.child(f".messages[{i}]"), exc.reason) from None
        data = conversation_episode(conv, self.name, location, episode_id=episode_id,
                                    metadata=meta)
        return (validate_episode(data, location),)

    def _add(self, conv: Conversation, raw: Any, location: Location) -> None:
        if not isinstance(raw, dict):
            raise TraceFormatError(location, "a message is not an object")
        role = role_of(raw.get("role"), location)
        meta = {k: v for k, v in raw.items() if k not in _MESSAGE_KEYS}
        content = raw.get("content")
        if not isinstance(content, list):
            conv.add_message({"role": role, "content": text_of(content), "metadata": meta})
            return
        texts: list[str] = []
        extra: list[Any] = []
        index = len(conv.messages)
        ids: list[str] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                call = conv.add_call(block.get("id"), block.get("name"), block.get("input"),
                                     location, message_index=index)
                ids.append(call["call_id"])
            elif kind == "tool_result":
                result_text = block.get("content")
                answered = conv.answer(block.get("tool_use_id"), _result_content(result_text),
                                       error=bool(block.get("is_error")))
                tool_msg: Json = {"role": "tool", "content": text_of(result_text)}
                if answered is not None:
                    tool_msg["call_id"] = answered["call_id"]
                else:
                    tool_msg["metadata"] = {"tool_use_id": block.get("tool_use_id")}
                conv.add_message(tool_msg)
                index = len(conv.messages)
            else:
                extra.append(block)
        if extra:
            meta["blocks"] = extra
        if texts or ids or extra or not conv.messages or conv.messages[-1]["role"] != "tool":
            message: Json = {"role": role, "content": "\n".join(texts) if texts else None,
                             "metadata": meta}
            if ids:
                message["tool_call_ids"] = ids
            conv.add_message(message)


def _result_content(content: Any) -> Any:
    """A tool_result's content as the call's raw result: text blocks joined into one string."""
    if isinstance(content, list):
        return text_of(content)
    return content
