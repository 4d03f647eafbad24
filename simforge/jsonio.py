"""JSON for values that came from outside: orjson's speed, the standard library for the one
thing orjson refuses that JSON allows (integers beyond 64 bits), and one nesting-depth limit.

A trace may carry such integers (native episodes keep them exact, as pydantic parses them), and
the code that writes what was read (quarantine files, exports, synthesized packs) must not lose a
file to one. The fallback writes the same layout: compact, or two-space indented, keys sorted
when asked.

**Depth.** :data:`MAX_DEPTH` is the deepest nesting of arrays and objects that simforge accepts
from outside. Every layer that serialises a value has a limit of its own (``orjson.dumps``
raises ``TypeError: Recursion limit reached`` past 254 levels, pydantic's ``model_dump_json``
past about 255 counting the models around the value, ``orjson.loads`` refuses more than 1,024,
``json.loads`` hits Python's recursion limit), and a value accepted at the border must survive
all of them with the wrapping that exports add; 128 leaves that room and is deeper than any
real trace. :func:`check_depth` takes a parsed value or raw JSON bytes; :func:`loads` parses and
checks in one call. Both cost linear time and no memory beyond the value.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any, Final

import orjson

from simforge.errors import UsageError, UserError

MAX_DEPTH: Final = 128
"""The deepest nesting of arrays and objects accepted from outside (a scalar is depth 0,
``[]`` depth 1, ``{"a": [1]}`` depth 2)."""

_ORJSON_DUMPS_DEPTH: Final = 254
"""The deepest value ``orjson.dumps`` writes (255 levels raise ``Recursion limit reached``)."""


class DepthError(UserError, ValueError):
    """A JSON value nested deeper than the limit."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        self.limit = limit
        super().__init__(f"nested deeper than {limit} levels")


class _Padding(threading.local):
    """Nested lists reused by :func:`exceeds_depth` (one set a thread): building 126 lists for
    every measurement cost a third of it."""

    def __init__(self) -> None:
        self.chains: dict[int, tuple[list[Any], list[Any]]] = {}

    def chain(self, levels: int) -> tuple[list[Any], list[Any]]:
        """``(outer, inner)``: ``levels`` nested lists; the value goes in ``inner``."""
        if levels not in self.chains:
            outer: list[Any] = [None]
            inner = outer
            for _ in range(levels - 1):
                nested: list[Any] = [None]
                inner[0] = nested
                inner = nested
            self.chains[levels] = (outer, inner)
        return self.chains[levels]


_padding = _Padding()


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed value nests deeper than ``limit`` (at most 253).

    orjson's serialiser, in C, is the measuring stick: the value is put inside enough lists
    that anything deeper than ``limit`` reaches orjson's own recursion limit, and the bytes
    written are thrown away. That costs about what writing the value costs (a Python walk of
    the same value, five times as much). A value orjson cannot write for another reason (an
    integer beyond 64 bits) is measured by a walk instead.
    """
    if not isinstance(value, dict | list | tuple):
        return False
    if limit >= _ORJSON_DUMPS_DEPTH:
        raise UsageError(f"limit {limit} is beyond what orjson can measure")
    outer, inner = _padding.chain(_ORJSON_DUMPS_DEPTH - limit)
    inner[0] = value
    try:
        orjson.dumps(outer, default=_opaque, option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        if "Recursion limit" in str(exc):
            return True
        return _walk_exceeds(value, limit)
    finally:
        inner[0] = None
    return False


def _opaque(value: Any) -> None:
    """What ``default=`` makes of a value orjson does not know: nothing to descend into."""
    return None


def _walk_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list | tuple))
    return False


_TOKENS: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]+|[\]}]+', re.DOTALL)
"""A string (closed or running to the end), or a run of opening or of closing brackets."""


def depth_of_bytes(data: bytes | bytearray | memoryview, stop: int | None = None) -> int:
    """The deepest nesting in raw JSON text, strings skipped, syntax otherwise not checked;
    counting ends once ``stop`` is passed (the result is then more than ``stop``)."""
    depth = deepest = 0
    for match in _TOKENS.finditer(data):
        begin, end = match.span()
        char = data[begin]
        if char == 0x5B or char == 0x7B:  # [ {
            depth += end - begin
            if depth > deepest:
                deepest = depth
                if stop is not None and deepest > stop:
                    return deepest
        elif char == 0x5D or char == 0x7D:  # ] }
            depth = max(0, depth - (end - begin))
    return deepest


def check_depth(data: Any, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`DepthError` if ``data`` nests deeper than ``limit``.

    ``data`` is raw JSON (``bytes``, ``bytearray``, ``memoryview`` or ``str``, which are counted
    without being parsed, so a 100 KB run of ``[`` costs a scan, not a parse) or a parsed value.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if isinstance(data, bytes | bytearray | memoryview):
        if depth_of_bytes(data, stop=limit) > limit:
            raise DepthError(limit)
    elif exceeds_depth(data, limit):
        raise DepthError(limit)


def loads(data: bytes | bytearray | memoryview | str, limit: int = MAX_DEPTH) -> Any:
    """``orjson.loads`` with the depth limit: raises :class:`DepthError` for a value nested
    deeper than ``limit``, ``orjson.JSONDecodeError`` (a ``ValueError``) for invalid JSON.

    orjson itself stops at 1,024 levels while parsing, so no input builds more than that
    before it is refused; the exact limit is then checked on the value, unless the text holds
    no more than ``limit`` opening brackets in all (counted in C; brackets inside strings are
    counted too, which can only send a value to the check), or no more than ``limit``
    characters (most tool calls' arguments): it cannot nest deeper than that.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            raise DepthError(limit) from None
        raise
    if len(data) > limit and _brackets(data) > limit and exceeds_depth(value, limit):
        raise DepthError(limit)
    return value


def _brackets(data: bytes | bytearray | memoryview | str) -> int:
    """How many ``[`` and ``{`` a JSON text holds (more than any nesting it can have)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    if isinstance(data, memoryview):
        data = data.tobytes()
    return data.count(b"[") + data.count(b"{")


def dumps(value: Any, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """``orjson.dumps(value, option=option, default=default)``, falling back to :mod:`json`
    when orjson refuses an integer beyond 64 bits (``OPT_SORT_KEYS``, ``OPT_INDENT_2`` and
    ``OPT_NON_STR_KEYS`` are honoured; any other refusal is raised as orjson raised it)."""
    try:
        return orjson.dumps(value, default=default, option=option)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
    indent = 2 if option & orjson.OPT_INDENT_2 else None
    return json.dumps(
        value,
        default=default,
        ensure_ascii=False,
        sort_keys=bool(option & orjson.OPT_SORT_KEYS),
        indent=indent,
        separators=(",", ": ") if indent else (",", ":"),
    ).encode()
