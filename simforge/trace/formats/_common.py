"""Helpers every adapter shares: raw-and-parsed arguments and results, times, unique call ids,
and the OpenAI-style conversation walk that tau-bench, Langfuse and LangSmith reuse.

Adapters build plain dicts and validate each episode once with ``Episode.model_validate``
(``validate_episode``), which checks the types at the border. The messages and calls of the
conversation adapters are the exception: ``Conversation.built`` makes them models directly,
as every value in them was already checked or made by that class (``trusted`` in
``simforge.trace.episode``; ``model_construct`` is 50x slower than validating in pydantic 2.14).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from pydantic import ValidationError

from simforge import jsonio
from simforge.jsonio import MAX_DEPTH, DepthError, exceeds_depth
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError

Json = dict[str, Any]
_EPOCH_NAIVE = datetime(1970, 1, 1)
_fromisoformat = datetime.fromisoformat


def dumps(value: Any) -> str:
    """Compact JSON text of a value from a trace (integers beyond 64 bits included)."""
    return jsonio.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def loads_text(text: str) -> Any:
    """A JSON string found inside a record, parsed: ``orjson.loads`` with the depth limit.

    What it holds nests no deeper than ``MAX_DEPTH`` or raises :class:`DepthError` (the record
    is then rejected). Measuring costs nothing for the usual short or flat texts: a text with
    no more than ``MAX_DEPTH`` opening brackets cannot nest deeper."""
    value = orjson.loads(text)
    if len(text) > MAX_DEPTH:
        _check_text(text, value)
    return value


def _check_text(text: str, value: Any) -> None:
    if ((type(value) is dict or type(value) is list)
            and text.count("[") + text.count("{") > MAX_DEPTH
            and exceeds_depth(value, MAX_DEPTH)):
        raise DepthError(MAX_DEPTH)


def parse_args(value: Any) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``(args, raw_args, problem)``: arguments may be an object, a JSON string, or junk.

    ``args`` is ``None`` when the text is not a JSON object; ``raw_args`` keeps the source's
    string form; ``problem`` says what was wrong, for the call's metadata.
    """
    if isinstance(value, dict):
        return value, None, None
    if value is None:
        return None, None, None
    if isinstance(value, str):
        if not value.strip():
            return {}, value, None
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None, value, "arguments are not valid JSON"
        if len(value) > MAX_DEPTH:
            _check_text(value, parsed)
        if isinstance(parsed, dict):
            return parsed, value, None
        return None, value, "arguments are not a JSON object"
    return None, dumps(value), "arguments are not a JSON object"


def parse_result(value: Any) -> tuple[Any, str | None]:
    """``(result, raw_result)``: a string holding a JSON object or array is parsed, the string
    kept. Scalars stay strings on purpose: an id like ``"0042"`` must not become ``42``."""
    if isinstance(value, str):
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                parsed = orjson.loads(value)
            except orjson.JSONDecodeError:
                return value, value
            if len(value) > MAX_DEPTH:
                _check_text(value, parsed)
            return parsed, value
        return value, value
    return value, None


def text_of(content: Any) -> str | None:
    """Message content as text: strings as they are, lists of text parts joined, else JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text") if isinstance(part, dict) else part
            for part in content
            if not isinstance(part, dict) or part.get("type") in (None, "text", "input_text")
        ]
        if all(isinstance(t, str) for t in texts):
            return "\n".join(texts)  # type: ignore[arg-type]
    return dumps(content)


def to_epoch(value: Any) -> float | None:
    """Seconds since the epoch from an ISO string, a number, or a numeric string.

    Numbers are read by magnitude (s, ms, us, ns) because exporters disagree. Naive ISO times
    are taken as UTC: none of the supported formats records local time on purpose.
    """
    if type(value) is str and value[4:5] == "-":
        # The common case, an extended ISO date-time: parsed as it is, without the checks below
        # (a dash after four characters rules out the numeric strings they look for).
        try:
            stamp = _fromisoformat(value)
        except ValueError:
            pass
        else:
            if stamp.tzinfo is None:
                return (stamp - _EPOCH_NAIVE).total_seconds()
            return stamp.timestamp()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.lstrip("-").isdigit():
            value = int(text)
        else:
            try:
                stamp = datetime.fromisoformat(text)
            except ValueError:
                return None
            if stamp.tzinfo is None:
                return (stamp - _EPOCH_NAIVE).total_seconds()
            return stamp.timestamp()
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        magnitude = abs(value)
        if magnitude > 1e17:
            return value / 1e9
        if magnitude > 1e14:
            return value / 1e6
        if magnitude > 1e11:
            return value / 1e3
        return float(value)
    return None


class CallIds:
    """Makes call ids unique inside one episode; a reused id becomes ``id#2``, ``id#3``..."""

    __slots__ = ("_counter", "_seen")

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._counter = 0

    def claim(self, source_id: Any) -> tuple[str, str | None]:
        """``(call_id, source_call_id)``; the second is set only when the id was changed."""
        self._counter += 1
        seen = self._seen
        if type(source_id) is str and source_id and source_id not in seen:  # the common case
            seen.add(source_id)
            return source_id, None
        if source_id is None or source_id == "":
            candidate = f"call_{self._counter}"
            while candidate in self._seen:
                candidate += "_"
            self._seen.add(candidate)
            return candidate, None
        sid = str(source_id)
        if sid not in self._seen:
            self._seen.add(sid)
            return sid, None
        n = 2
        while f"{sid}#{n}" in self._seen:
            n += 1
        new = f"{sid}#{n}"
        self._seen.add(new)
        return new, sid


def record_label(location: Location) -> str:
    """The ``Source.record`` string: where inside the file the episode came from."""
    if location.pointer:
        return location.pointer
    if location.line is not None:
        return f"line {location.line}"
    if location.index is not None:
        return f"[{location.index}]"
    return ""


def validate_episode(data: Json, location: Location) -> Episode:
    """Validate an adapter-built dict into an Episode; a type problem names the field."""
    try:
        return Episode.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise TraceFormatError(
            location, f"invalid episode field {field}: {first['msg']} ({exc.error_count()} errors)"
        ) from None


def as_dict(value: Any) -> Json:
    """``value`` when it is an object, else an empty one: for optional nested fields."""
    return value if isinstance(value, dict) else {}


def expect_dict(value: Any, location: Location, what: str) -> Json:
    if not isinstance(value, dict):
        raise TraceFormatError(location, f"expected {what} to be an object, found {_kind(value)}")
    return value


def expect_list(value: Any, location: Location, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TraceFormatError(location, f"expected {what} to be an array, found {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", type(None): "null"}.get(
        type(value), type(value).__name__
    )
