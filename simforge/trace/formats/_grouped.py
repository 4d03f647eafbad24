"""Shared machinery of the span/run/observation formats (OTLP, LangSmith, Langfuse).

These formats record one episode as many records (spans of a trace, runs of a LangSmith trace,
observations of a Langfuse trace), possibly spread over a file. A :class:`GroupingAdapter`
checks and compacts each record as it is read (so a bad one is rejected on its own), buffers the
compact form per trace, and assembles the episodes at the end of the file. To keep memory
bounded, once more than ``max_open_groups`` traces are open the oldest is assembled early.

Assembly is common too: the model's view of the dialogue (the longest message history among the
trace's LLM calls, plus their outputs) gives the messages and the calls in dialogue order; the
tool spans or runs, which carry real timings and errors, are then matched to those calls by call
id, else by tool name in order, and the unmatched ones are appended.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from simforge.trace.episode import Episode
from simforge.trace.errors import Location
from simforge.trace.formats._common import Json, dumps, parse_result
from simforge.trace.formats._conversation import Conversation
from simforge.trace.registry import Deferred, FormatAdapter


@dataclass(slots=True)
class ObservedCall:
    """A tool execution as a trace recorded it (span, run or observation)."""

    tool: str
    source_id: str | None
    arguments: Any
    result: Any = None
    has_result: bool = False
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    metadata: Json = field(default_factory=dict)
    fallback_id: str | None = None
    """The id to give the call when no message names it (a span or observation id)."""


def build_conversation(history: list[Json], observed: list[ObservedCall],
                       location: Location) -> Conversation:
    """Messages from ``history`` (OpenAI-style dicts), then the observed calls merged in."""
    conv = Conversation()
    for i, message in enumerate(history):
        conv.add_openai(message, location.child(f" message {i}"), message.get("timestamp"))
    by_id: dict[str, deque[Json]] = defaultdict(deque)
    by_name: dict[str, deque[Json]] = defaultdict(deque)
    for call in conv.calls:
        by_id[call.get("source_call_id") or call["call_id"]].append(call)
        by_name[call["tool"]].append(call)
    used: set[int] = set()

    def take(queue: deque[Json]) -> Json | None:
        while queue:
            call = queue.popleft()
            if id(call) not in used:
                used.add(id(call))
                return call
        return None

    for ob in sorted(observed, key=lambda o: o.started_at if o.started_at is not None else 0.0):
        found = take(by_id[ob.source_id]) if ob.source_id is not None else None
        if found is None:
            found = take(by_name[ob.tool])
        if found is None:
            found = conv.add_call(ob.source_id or ob.fallback_id, ob.tool, ob.arguments,
                                  location, message_index=None)
        _apply(found, ob)
    return conv


def _apply(call: Json, ob: ObservedCall) -> None:
    if ob.started_at is not None:
        call["started_at"] = ob.started_at
    if ob.ended_at is not None:
        call["ended_at"] = ob.ended_at
    if ob.has_result and "result" not in call:
        call["result"], call["raw_result"] = parse_result(ob.result)
    if ob.error is not None:
        call["error"] = ob.error
    if call.get("raw_args") is None and isinstance(ob.arguments, str):
        call["raw_args"] = ob.arguments
    if ob.metadata:
        call["metadata"] = {**call.get("metadata", {}), **ob.metadata}


def _message_key(message: Json) -> str:
    calls = message.get("tool_calls")
    ids = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return dumps([message.get("role"), message.get("content"), ids,
                  message.get("tool_call_id")])


def longest_history(histories: Iterable[list[Json]]) -> list[Json]:
    """The dialogue across a trace's LLM calls, each message once.

    Each call's input usually repeats the dialogue so far, but not always exactly (system
    instructions sent once, a window that drops old turns), so messages are matched by content
    rather than by position: a message is new when the history holds fewer copies of it than
    this call's input has met so far.
    """
    history: list[Json] = []
    seen: Counter[str] = Counter()
    for messages in histories:
        used: Counter[str] = Counter()
        for message in messages:
            key = _message_key(message)
            if used[key] < seen[key]:
                used[key] += 1
                continue
            history.append(message)
            seen[key] += 1
            used[key] += 1
    return history


class GroupingAdapter(FormatAdapter):
    """Buffers compact records per group key; subclasses implement ``accept`` and ``build``."""

    max_open_groups: ClassVar[int] = 10_000

    def __init__(self) -> None:
        self._groups: dict[str, list[Any]] = {}
        self._where: dict[str, Location] = {}
        self._evicted: list[Deferred] = []

    def accept(self, record: Any, location: Location) -> tuple[str, Any]:
        """Check one record and return ``(group key, compact form)``; raise on bad data."""
        raise NotImplementedError

    def build(self, key: str, items: list[Any], location: Location) -> Episode:
        raise NotImplementedError

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        key, item = self.accept(record, location)
        group = self._groups.get(key)
        if group is None:
            self._groups[key] = [item]
            self._where[key] = location
        else:
            group.append(item)
        if len(self._groups) > self.max_open_groups:
            oldest = next(iter(self._groups))
            self._evicted.append(self._deferred(oldest, self._groups.pop(oldest)))
        return ()

    def _deferred(self, key: str, items: list[Any]) -> Deferred:
        where = self._where.pop(key)
        return Deferred(where, functools.partial(self.build, key, items, where), len(items))

    def ready(self) -> Iterable[Deferred]:
        if not self._evicted:
            return ()
        evicted, self._evicted = self._evicted, []
        return evicted

    def finish(self) -> Iterable[Deferred]:
        groups, self._groups = self._groups, {}
        return [self._deferred(key, items) for key, items in groups.items()]
