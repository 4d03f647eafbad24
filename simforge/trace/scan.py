"""Reading what a strict parser refused: JSON text split into records at the byte level.

A document that orjson cannot parse whole (a syntax error, a ``NaN``, a record nested too deep)
still holds records that can be read. :func:`split_array` cuts the target array of such a
document into its elements without parsing them: strings are skipped with a regular
expression, brackets are counted, and an element deeper than the limit is stepped over without
building anything. Each element is then parsed on its own, so one bad element costs only
itself, and every piece knows its true byte offset.

Cutting at the right place after a *structurally* broken element (a truncation, a missing
bracket, a string left open) is the hard part: the bracket count is then off for the rest of
the file. The cut is found again from the layout of the elements before it:

* pretty-printed documents start every element on a line of its own, at one indentation (a raw
  newline cannot occur inside a JSON string, so such a line is never text): the next line that
  starts an element at that column is where the next element begins;
* compact documents have no lines to go by: the next ``,`` followed by what every element
  began with (the opening bracket and the first key, e.g. ``{"task_id"``) is taken instead.

Whatever lies between the last good element and the next one is one rejected piece, with its
offset and reason: nothing is skipped without being counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from simforge.jsonio import MAX_DEPTH, depth_of_bytes

BOM: Final = b"\xef\xbb\xbf"

_STRING: Final = re.compile(rb'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"')
"""A JSON string. Raw newlines cannot occur in one, so a string is never looked for past the
end of its line: a quote left open by a truncation does not swallow the records after it."""
_TOKEN: Final = re.compile(rb'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"|"|[\[{]+|[\]}]+')
"""A string, a lone quote (a string left open), or a run of opening or of closing brackets (a
run is one match: a bracket bomb costs one step, not one per byte)."""
_SCALAR: Final = re.compile(rb'[^,\]\}\s]*')
_WS: Final = re.compile(rb'[ \t\r\n]*')
_HEAD: Final = re.compile(rb'[\[{][\[{ \t\r\n]{0,16}"[^"\\\n]{0,64}"[ \t\r\n]*:')
_MAX_HEADS: Final = 16
_NONFINITE: Final = re.compile(rb'NaN|Infinity')
_OPEN: Final = frozenset(b"[{")


class Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()


def deep_reason(limit: int = MAX_DEPTH) -> str:
    return f"nested deeper than {limit} levels"


def parse_json(raw: bytes | memoryview) -> tuple[Any, str | None, int]:
    """``(value, error, replaced)``: orjson's parse, and for what orjson refuses because of
    ``NaN``, ``Infinity`` or ``-Infinity`` (which Python's ``json.dump`` writes by default) the
    standard library's, with each of those read as ``null`` and counted in ``replaced``.
    ``value`` is :data:`UNSET` when ``error`` says why nothing could be read."""
    try:
        return orjson.loads(raw), None, 0
    except orjson.JSONDecodeError as exc:
        message = str(exc)
    if "depth limit" in message:
        return UNSET, deep_reason(), 0
    if _NONFINITE.search(raw) is not None:
        if depth_of_bytes(raw, stop=MAX_DEPTH) > MAX_DEPTH:
            return UNSET, deep_reason(), 0
        replaced = 0

        def constant(_name: str) -> None:
            nonlocal replaced
            replaced += 1
            return None

        try:
            value = json.loads(bytes(raw), parse_constant=constant)
            orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)  # lone surrogates and the like
        except (ValueError, RecursionError):
            pass
        except TypeError as exc:
            if "64-bit" in str(exc):
                return value, None, replaced
        else:
            return value, None, replaced
    return UNSET, f"invalid JSON: {message}", 0


def skip_ws(data: bytes | memoryview, pos: int) -> int:
    match = _WS.match(data, pos)
    return match.end() if match is not None else pos


def value_end(data: bytes | memoryview, pos: int, limit: int = MAX_DEPTH) -> tuple[int, str]:
    """Where the value starting at ``pos`` ends, and how it ended: ``"ok"`` (brackets
    balanced, syntax not checked), ``"deep"`` (balanced, but deeper than ``limit``) or ``"eof"``
    (the data ended first, or a string was left open)."""
    first = data[pos]
    if first == 0x22:  # "
        match = _STRING.match(data, pos)
        return (match.end(), "ok") if match is not None else (len(data), "eof")
    if first not in _OPEN:
        match = _SCALAR.match(data, pos)
        end = match.end() if match is not None else pos
        return max(end, pos + 1), "ok"
    depth = 0
    deep = False
    search = _TOKEN.search
    at = pos
    while True:
        match = search(data, at)
        if match is None:
            return len(data), "eof"
        begin = match.start()
        at = match.end()
        char = data[begin]
        if char == 0x22:
            if at - begin == 1:  # an opening quote that never closes
                return len(data), "eof"
        elif char in _OPEN:
            depth += at - begin
            if depth > limit:
                deep = True
        else:
            if at - begin >= depth:
                return begin + depth, "deep" if deep else "ok"
            depth -= at - begin


@dataclass(frozen=True, slots=True)
class Piece:
    """One element of an array, or a rejected stretch of bytes: ``[start, end)`` in the data,
    the parsed value (:data:`UNSET` when rejected), why it was rejected, and how many ``NaN`` /
    ``Infinity`` were read as ``null``."""

    start: int
    end: int
    value: Any = UNSET
    error: str | None = None
    replaced: int = 0


@dataclass(slots=True)
class _Layout:
    """What the elements before the cut looked like: the indentation their lines began with
    (``None`` when they do not start lines), their first byte, and, for compact documents,
    their heads up to the first key (``{"task_id":``), counted.

    Heads are learnt from the good elements before the first break (after one, a good-looking
    element may be a part of the broken one); a head is trusted once a quarter of them began
    with it (one stray element must not make every inner message look like a record start).
    Broken elements add their heads too (a record cut in its middle still begins as the others
    do). The next start is the first ``,`` followed by any of these heads. With no head at all
    (a headless bracket bomb first), the first ``,`` followed by a value that parses is taken,
    once; its head is the guess from then on."""

    indent: bytes | None
    opener: int
    close_indent: bytes | None
    counts: dict[bytes, int] = field(default_factory=dict)
    tentative: list[bytes] = field(default_factory=list)
    broken: bool = False
    guessed: bool = False
    top: bool = False

    def learn(self, data: bytes | memoryview, start: int, good: bool) -> None:
        """Note the head of an element that starts at ``start``: a good one while nothing has
        broken yet (after a break, a good-looking element may be a part of the broken one),
        a broken one as a guess."""
        if self.indent is not None:
            return
        match = _HEAD.match(data, start)
        if good and self.broken:
            return
        if not good:
            self.broken = True
        if match is None:
            return
        head = bytes(match.group())
        if good:
            if head in self.counts or len(self.counts) < _MAX_HEADS:
                self.counts[head] = self.counts.get(head, 0) + 1
        elif head not in self.tentative and len(self.tentative) < _MAX_HEADS:
            self.tentative.append(head)

    @property
    def trusted(self) -> tuple[bytes, ...]:
        total = sum(self.counts.values())
        return tuple(h for h, n in self.counts.items() if 4 * n >= total)

    @property
    def heads(self) -> tuple[bytes, ...]:
        return self.trusted + tuple(h for h in self.tentative if h not in self.counts)

    def next_start(self, data: bytes | memoryview, pos: int) -> int | None:
        """The first element start at or after ``pos``, or ``None`` (then the array's end is
        where the caller stops)."""
        if self.indent is not None:
            pattern = _line_start(self.indent, self.opener)
            match = pattern.search(data, max(pos - 1, 0))
            return match.end() - 1 if match is not None else None
        heads = self.heads
        if heads:
            match = _compact_start(heads).search(data, pos)
            if match is not None:
                return match.start(1)
        if not self.top and (self.counts or self.guessed):
            return None  # good elements are known, and none like them follows
        # a top-level array ends with the document, which lets a record whose head nobody
        # foresaw be told from a part of a broken one (see _next_whole)
        found = _next_whole(data, pos, self.top)
        if found is not None:
            self.guessed = True
            self.learn(data, found, good=False)
        return found

    def array_end(self, data: bytes | memoryview, pos: int) -> int | None:
        """Where the array closes, in a pretty-printed document (its ``]`` at the indentation
        of the line that opened it)."""
        if self.close_indent is None or self.indent is None:
            return None
        match = _line_close(self.close_indent).search(data, max(pos - 1, 0))
        return match.end() - 1 if match is not None else None


_patterns: dict[tuple[object, ...], re.Pattern[bytes]] = {}


def _line_start(indent: bytes, opener: int) -> re.Pattern[bytes]:
    """A line whose content starts at exactly ``indent``: any value may start there (an
    array can mix objects and arrays), but not the ``}`` or ``]`` that closes an element."""
    key = ("start", indent)
    if key not in _patterns:
        _patterns[key] = re.compile(b"\n" + re.escape(indent) + rb"[^\s\]\},:]")
    return _patterns[key]


def _line_close(indent: bytes) -> re.Pattern[bytes]:
    key = ("close", indent)
    if key not in _patterns:
        _patterns[key] = re.compile(b"\n" + re.escape(indent) + b"]")
    return _patterns[key]


def _compact_start(heads: tuple[bytes, ...]) -> re.Pattern[bytes]:
    key = ("compact", heads)
    if key not in _patterns:
        alternatives = b"|".join(re.escape(head) for head in heads)
        _patterns[key] = re.compile(rb",[ \t\r\n]*(" + alternatives + rb")")
    return _patterns[key]


def _indent_before(data: bytes | memoryview, pos: int) -> bytes | None:
    """The whitespace between the line start and ``pos`` if ``pos`` starts a line's content,
    else ``None`` (an element on the line of the ``[``, or after another on the same line)."""
    window = bytes(data[max(0, pos - 256):pos])
    newline = window.rfind(b"\n")
    if newline < 0:
        return None
    indent = window[newline + 1:]
    return indent if not indent.strip() else None


def _layout(data: bytes | memoryview, start: int, array: int, top: bool) -> _Layout:
    indent = _indent_before(data, start)
    opener = data[start]
    close_indent = None
    if indent is not None:
        line = bytes(data[max(0, array - 256):array])
        newline = line.rfind(b"\n")
        before = line[newline + 1:] if newline >= 0 else line
        close_indent = bytes(re.match(rb"[ \t]*", before).group())  # type: ignore[union-attr]
    return _Layout(indent, opener, close_indent, top=top)


def _trim(data: bytes | memoryview, start: int, end: int) -> int:
    """``end`` moved back over the whitespace and separator before the next element."""
    while end > start and data[end - 1] in b" \t\r\n,":
        end -= 1
    return max(end, start + 1)


def split_array(data: bytes | memoryview, array: int, limit: int = MAX_DEPTH,
                top: bool = False) -> Generator[Piece, None, int]:
    """The elements of the array whose ``[`` is at ``array``, each parsed, and the stretches
    that could not be, each once; ends at the array's ``]`` or at the end of the data, and
    returns where it stopped (just after the ``]``, or the data's size).

    ``top`` says the array is the whole document: a ``]`` with more than whitespace after it
    is then not its end (a broken element's inner list closing) but bytes to step over."""
    size = len(data)
    pos = array + 1
    layout: _Layout | None = None
    while True:
        pos = skip_ws(data, pos)
        if pos >= size:
            return size
        char = data[pos]
        if char == 0x5D and not (top and skip_ws(data, pos + 1) < size):
            return pos + 1
        if char == 0x2C or char == 0x5D or char == 0x7D:  # junk up to the next element
            nxt = layout.next_start(data, pos + 1) if layout is not None else None
            if nxt is None:
                nxt = _next_value(data, pos + 1) if layout is None else None
            stop = nxt if nxt is not None else size
            yield Piece(pos, _trim(data, pos, stop),
                        error=f"unexpected {_show(data, pos)} in an array")
            if nxt is None:
                return size
            pos = nxt
            continue
        if layout is None:
            layout = _layout(data, pos, array, top)
        end, state = value_end(data, pos, limit)
        value: Any = UNSET
        error: str | None = None
        replaced = 0
        if state == "ok":
            value, error, replaced = parse_json(data[pos:end])
            if error is None and top and skip_ws(data, end) >= size:
                # the array never closes: this element took the elements after it and the
                # array's ``]`` for its own (a record cut before its last brackets)
                layout.learn(data, pos, good=False)
                nxt = layout.next_start(data, pos + 1)
                if nxt is not None and nxt < end:
                    error = "the element runs into the elements after it"
            if error is None:
                layout.learn(data, pos, good=True)
                yield Piece(pos, end, value, None, replaced)
        if state != "ok" or error is not None:
            layout.learn(data, pos, good=False)
            nxt = layout.next_start(data, pos + 1)
            if nxt is not None and (state == "eof" or nxt < end):
                # the element does not end where the next one begins: cut there
                yield Piece(pos, _trim(data, pos, nxt), error=_broken(data, pos, nxt))
                pos = nxt
                continue
            if state == "eof":
                close = layout.array_end(data, pos + 1)
                stop = close if close is not None else size
                yield Piece(pos, _trim(data, pos, stop), error=_broken(data, pos, stop))
                if close is None:
                    return size
                pos = close
                continue
            # the element ends where its brackets balance; if that is short of the next
            # element (a bracket too many), what lies between goes with it
            nxt = layout.next_start(data, end) if layout.heads or layout.indent is not None \
                else None
            stop = nxt if nxt is not None else end
            yield Piece(pos, _trim(data, pos, stop) if nxt is not None else end,
                        error=deep_reason(limit) if state == "deep" else error)
            if nxt is not None:
                pos = nxt
                continue
        pos = skip_ws(data, end)
        if pos >= size:
            return size
        char = data[pos]
        if char == 0x2C:
            pos += 1
        elif char == 0x5D:
            continue  # the end, or (top-level) junk: decided at the loop's head
        elif char in _OPEN and (layout.indent is None
                                or _indent_before(data, pos) == layout.indent):
            continue  # a missing comma: the next element is whole all the same
        else:
            nxt = layout.next_start(data, pos)
            close = layout.array_end(data, pos)
            stop = min(x for x in (nxt, close, size) if x is not None)
            yield Piece(pos, _trim(data, pos, stop),
                        error=f"unexpected {_show(data, pos)} after an element")
            if nxt is None or stop != nxt:
                if close is None:
                    return size
                pos = close
                continue
            pos = nxt


_ANY_START: Final = re.compile(rb",[ \t\r\n]*([\[{])")
_MAX_CANDIDATES: Final = 1000


def _next_whole(data: bytes | memoryview, pos: int, top: bool,
                stop: int | None = None) -> int | None:
    """The first ``,`` followed by a value that parses and begins a run of elements that ends
    as the array does (at the end of the document, for a top-level array): a run of inner
    values of a broken record ends at a ``]`` followed by more of that record instead."""
    for tried, match in enumerate(_ANY_START.finditer(data, pos)):
        if tried >= _MAX_CANDIDATES:
            return None
        start = match.start(1)
        if stop is not None and start >= stop:
            return None
        end, state = value_end(data, start)
        if state != "ok" or parse_json(data[start:end])[1] is not None:
            continue
        if _ends_as_array(data, end, top):
            return start
    return None


def _ends_as_array(data: bytes | memoryview, end: int, top: bool) -> bool:
    """Whether the elements after one ending at ``end`` run to where the array ends."""
    size = len(data)
    while True:
        at = skip_ws(data, end)
        if at >= size:
            return True
        char = data[at]
        if char == 0x5D:  # ]
            return not top or skip_ws(data, at + 1) >= size
        if char != 0x2C:
            return False
        at = skip_ws(data, at + 1)
        if at >= size:
            return True
        end, state = value_end(data, at)
        if state != "ok":
            return True  # broken further on: nothing to judge by


def _next_value(data: bytes | memoryview, pos: int) -> int | None:
    """The next non-separator byte after a stray comma (compact arrays without a layout)."""
    at = skip_ws(data, pos)
    while at < len(data) and data[at] == 0x2C:
        at = skip_ws(data, at + 1)
    return at if at < len(data) else None


def _show(data: bytes | memoryview, pos: int) -> str:
    return repr(bytes(data[pos:pos + 12]).decode("utf-8", "replace"))


def _broken(data: bytes | memoryview, start: int, stop: int) -> str:
    """Why a stretch whose brackets do not balance could not be read, in orjson's words."""
    _value, error, _ = parse_json(data[start:_trim(data, start, stop)])
    return error or "broken JSON: the element does not end where the next one begins"


def members(data: bytes | memoryview, start: int) -> Iterator[tuple[Any, int, int, str]]:
    """``(key, value start, value end, state)`` of each member of the object whose ``{`` is at
    ``start`` (``state`` as :func:`value_end` says). After a member whose value does not end
    well, a pretty-printed object goes on at the next line that starts a key at the column of
    the first key; a compact one ends there."""
    size = len(data)
    pos = skip_ws(data, start + 1)
    indent = _indent_before(data, pos)
    while True:
        pos = skip_ws(data, pos)
        if pos >= size or data[pos] != 0x22:
            return
        match = _STRING.match(data, pos)
        ok = match is not None
        key: Any = None
        if match is not None:
            try:
                key = orjson.loads(match.group())
            except orjson.JSONDecodeError:
                ok = False
            pos = skip_ws(data, match.end())
        ok = ok and pos < size and data[pos] == 0x3A  # :
        state = "eof"
        end = pos
        if ok:
            value = skip_ws(data, pos + 1)
            if value >= size:
                return
            end, state = value_end(data, value, limit=1 << 30)
            if state == "ok":
                yield key, value, end, state
                pos = skip_ws(data, end)
                if pos < size and data[pos] == 0x2C:
                    pos += 1
                    continue
                if pos < size and data[pos] == 0x7D:
                    return
            else:
                yield key, value, end, state
        if indent is None:
            return
        found = re.compile(b"\n" + re.escape(indent) + b'"').search(data, max(end, pos) - 1)
        if found is None:
            return
        pos = found.end() - 1


def find_member(data: bytes | memoryview, start: int, key: str) -> int | None:
    """Where the value of ``key`` in the object whose ``{`` is at ``start`` begins, or
    ``None``. The members before it are stepped over by their brackets; when they cannot be,
    the first ``"key":`` after the last one read is taken."""
    last = start
    for name, value, end, _state in members(data, start):
        if name == key:
            return value
        last = end
    pattern = re.compile(re.escape(orjson.dumps(key)) + rb"[ \t\r\n]*:[ \t\r\n]*")
    found = pattern.search(data, last)
    return found.end() if found is not None else None


def object_skeleton(data: bytes | memoryview, start: int) -> dict[str, Any]:
    """A broken object document for sniffing: each member that can be read, an array cut to
    its first element that can."""
    out: dict[str, Any] = {}
    for key, value, end, state in members(data, start):
        if not isinstance(key, str):
            continue
        if data[value] == 0x5B:  # [
            first = next((p.value for p in split_array(data, value) if p.error is None), UNSET)
            out[key] = [] if first is UNSET else [first]
        elif state == "ok":
            parsed, error, _ = parse_json(data[value:end])
            if error is None:
                out[key] = parsed
    return out


def document_start(data: bytes | memoryview) -> int:
    """The first byte of the value: after a UTF-8 byte order mark and whitespace."""
    return skip_ws(data, len(BOM) if bytes(data[:3]) == BOM else 0)


__all__ = [
    "BOM",
    "UNSET",
    "Piece",
    "deep_reason",
    "document_start",
    "find_member",
    "members",
    "object_skeleton",
    "parse_json",
    "split_array",
    "value_end",
]
