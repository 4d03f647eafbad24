"""Format auto-detection: the layout of a file from its first lines, the format from its first
good records.

Detection happens in two steps because the two questions need different evidence. The *layout*
(JSON Lines, one JSON array, one JSON object) is visible in the first few lines. The *format*
(tau2, OTLP, LangSmith...) needs keys of real records, so each adapter's ``sniff`` is shown
:class:`Sample` s: the first records of a JSONL file or items of an array that can be read (up to
``SAMPLE_RECORDS`` that some format recognises, among the first ``SAMPLE_SCAN``), each on its own,
and the format most of them are recognised as wins; for an object document, the document itself
with every array cut to its first element (a skeleton, so that a 1 GB file is not parsed to find
out what it is). One damaged or foreign record at the head of a file therefore no longer decides
what the whole file is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson

from simforge.jsonio import MAX_DEPTH

if TYPE_CHECKING:
    from simforge.trace.reader import Document

Layout = Literal["jsonl", "array", "object", "empty", "unknown"]

_BOM = b"\xef\xbb\xbf"
_MAX_SNIFF_LINE = 16 * 1024 * 1024
_MAX_PARSED_LINE = 1024 * 1024
_SKELETON_EVENTS = 50_000
_LAYOUT_LINES = 8
SAMPLE_RECORDS = 5
"""Records that some format recognises, looked for to decide a file's format."""
SAMPLE_SCAN = 64
"""Records looked at, at most, to find them."""


@dataclass(frozen=True, slots=True)
class Sample:
    """What a format's ``sniff`` looks at: the file's layout and a representative value."""

    layout: Layout
    value: Any
    path: str


def _parses(line: bytes) -> bool:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict | list)


def sniff_layout(stream: IO[bytes]) -> Layout:
    """Tell JSON Lines from a single JSON document by its first lines.

    A file whose first line is a complete object or array and that has more content after it is
    JSONL. A first line longer than 1 MiB is not parsed (a one-line document would cost its
    whole size in objects): it is JSONL when another record follows it. When the first line does
    not parse, the next lines decide: the file is JSONL when at least half of the first
    ``_LAYOUT_LINES`` lines are complete objects or arrays (a corrupt first record must not
    turn a JSONL file into one broken document, and the one line of a pretty-printed array that
    happens to parse, its last element, must not turn the document into JSONL); otherwise it
    is one document, pretty-printed.
    """
    first = stream.readline(_MAX_PARSED_LINE)
    if first.startswith(_BOM):
        first = first[len(_BOM) :]
    while first and not first.strip():
        first = stream.readline(_MAX_PARSED_LINE)
    stripped = first.lstrip()
    if not stripped:
        return "empty"
    opener = stripped[:1]
    doc_layout: Layout = {b"{": "object", b"[": "array"}.get(opener, "unknown")  # type: ignore[assignment]
    if not first.endswith(b"\n") and len(first) >= _MAX_PARSED_LINE:
        # Parsing a huge first line only to classify the file would cost as much memory as
        # the line's objects: a long line followed by another record means JSONL.
        if not _skip_line(stream):
            return doc_layout
        rest = [stream.readline(_MAX_PARSED_LINE) for _ in range(2)]
        follows = next((line.lstrip()[:1] for line in rest if line.strip()), b"")
        return "jsonl" if follows in (b"{", b"[") else doc_layout
    if doc_layout != "unknown" and _parses(first):
        rest = [stream.readline(_MAX_PARSED_LINE) for _ in range(2)]
        has_more = any(line.strip() for line in rest) or bool(stream.read(1).strip())
        return "jsonl" if has_more else doc_layout
    lines = 1
    parsed = 0
    for _ in range(_LAYOUT_LINES - 1):
        line = stream.readline(_MAX_PARSED_LINE)
        if not line:
            break
        if not line.strip():
            continue
        lines += 1
        if line[:1] in (b"{", b"[") and line.endswith(b"\n") and _parses(line):
            parsed += 1
        elif not line.endswith(b"\n"):
            _skip_line(stream)
    if parsed and 2 * parsed >= lines:
        return "jsonl"
    return doc_layout


def _skip_line(stream: IO[bytes]) -> bool:
    """Read past the end of the current line without keeping it; False if none is found."""
    remaining = _MAX_SNIFF_LINE
    while remaining > 0:
        chunk = stream.readline(min(remaining, 1 << 16))
        if not chunk:
            return False
        if chunk.endswith(b"\n"):
            return True
        remaining -= len(chunk)
    return False


def skeleton(
    events: Iterable[tuple[str, Any]],
    budget: int = _SKELETON_EVENTS,
    top_items: int = 1,
    limit: int = MAX_DEPTH,
) -> Any:
    """Build a document from ijson's ``basic_parse`` events keeping only the first element of
    every array (the first ``top_items`` of a top-level array), and nothing below ``limit``
    levels.

    Enough to recognise a format by its keys at every depth, at a bounded cost whatever the size
    or depth of the file.
    """
    stack: list[Any] = []
    keys: list[str | None] = []
    skip_depth = 0
    root: Any = None
    for count, (event, value) in enumerate(events):
        if count >= budget:
            break
        if skip_depth:
            if event in ("start_map", "start_array"):
                skip_depth += 1
            elif event in ("end_map", "end_array"):
                skip_depth -= 1
            continue
        if event == "map_key":
            keys[-1] = value
            continue
        if event in ("end_map", "end_array"):
            stack.pop()
            keys.pop()
            if not stack:
                break
            continue
        parent = stack[-1] if stack else None
        opens = event in ("start_map", "start_array")
        if isinstance(parent, list) and len(parent) >= (top_items if len(stack) == 1 else 1):
            if opens:
                skip_depth = 1
            continue
        if opens and len(stack) >= limit:
            break
        node: Any
        if event == "start_map":
            node = {}
        elif event == "start_array":
            node = []
        else:
            node = value
        if parent is None:
            root = node
        elif isinstance(parent, list):
            parent.append(node)
        else:
            parent[keys[-1]] = node
        if opens:
            stack.append(node)
            keys.append(None)
        elif parent is None:
            break
    return root


def first_value(records: Iterator[Any]) -> Any:
    """The first record whose value parses (sniffing skips a corrupt first line)."""
    values = record_values(records, 1)
    return values[0] if values else None


def record_values(records: Iterator[Any], count: int, scan: int = SAMPLE_SCAN) -> list[Any]:
    """The values of up to ``count`` of the first ``scan`` records that parse."""
    from simforge.trace.errors import TraceFormatError

    out: list[Any] = []
    for index, record in enumerate(records):
        if index >= scan or len(out) >= count:
            break
        try:
            out.append(record.value)
        except TraceFormatError:
            continue
    return out


def samples_of(doc: Document) -> Iterator[Sample]:
    """The samples shown to every adapter's ``sniff``, best first: each of the first records
    that can be read (JSONL lines, array items), or the document's skeleton. An array whose
    first readable item is a chat message is one conversation: its sample is the list of its
    first messages (when most of its first readable items are messages)."""
    if doc.layout == "jsonl":
        from simforge.trace.errors import TraceFormatError

        lines = doc.lines()
        try:
            for index, record in enumerate(lines):
                if index >= SAMPLE_SCAN:
                    break
                before = doc.replaced
                try:
                    value = record.value
                except TraceFormatError:
                    continue
                if record.location.line is not None:
                    doc.sampled[record.location.line] = (value, doc.replaced - before)
                yield Sample(doc.layout, value, doc.path)
        finally:
            lines.close()  # type: ignore[attr-defined]
    elif doc.layout == "array":
        items = doc.sample_items(SAMPLE_SCAN)
        if items and 2 * sum(_is_message(i) for i in items) > len(items):
            yield Sample(doc.layout, [i for i in items[:SAMPLE_RECORDS] if _is_message(i)],
                         doc.path)
            return
        for value in items:
            yield Sample(doc.layout, value, doc.path)
    elif doc.layout == "object":
        yield Sample(doc.layout, doc.skeleton(), doc.path)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "messages" not in value


def sample_of(doc: Document) -> Sample:
    """The first sample shown to every adapter's ``sniff`` for this document."""
    return next(samples_of(doc), Sample(doc.layout, None, doc.path))
