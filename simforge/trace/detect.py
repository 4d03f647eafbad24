"""Format auto-detection: the layout of a file from its first bytes, the format from its first
record.

Detection happens in two steps because the two questions need different evidence. The *layout*
(JSON Lines, one JSON array, one JSON object) is visible in the first line or two. The *format*
(tau2, OTLP, LangSmith...) needs keys of a real record, so each adapter's ``sniff`` is shown a
:class:`Sample`: the first record (JSONL), the first array item, or, for an object document, the
document itself with every array cut to its first element (a skeleton, so that a 1 GB file is not
parsed to find out what it is).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson

if TYPE_CHECKING:
    from simforge.trace.reader import Document

Layout = Literal["jsonl", "array", "object", "empty", "unknown"]

_BOM = b"\xef\xbb\xbf"
_MAX_SNIFF_LINE = 16 * 1024 * 1024
_MAX_PARSED_LINE = 1024 * 1024
_SKELETON_EVENTS = 50_000


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
    whole size in objects): it is JSONL when another record follows it. A first line that does
    not parse is still JSONL when one of the next two lines starts
    at column 0 and parses (a corrupt first record must not turn a JSONL file into one broken
    document); otherwise the file is one document, pretty-printed.
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
    rest = [stream.readline(_MAX_PARSED_LINE) for _ in range(2)]
    has_more = any(line.strip() for line in rest) or bool(stream.read(1).strip())
    if doc_layout != "unknown" and _parses(first):
        return "jsonl" if has_more else doc_layout
    for line in rest:
        if line[:1] in (b"{", b"[") and _parses(line):
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


def skeleton(events: Iterable[tuple[str, str, Any]], budget: int = _SKELETON_EVENTS) -> Any:
    """Build a document from ijson events keeping only the first element of every array.

    Enough to recognise a format by its keys at every depth, at a bounded cost whatever the size
    of the file.
    """
    stack: list[Any] = []
    keys: list[str | None] = []
    skip_depth = 0
    root: Any = None
    for count, (_prefix, event, value) in enumerate(events):
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
        if isinstance(parent, list) and parent:
            if event in ("start_map", "start_array"):
                skip_depth = 1
            continue
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
        if event in ("start_map", "start_array"):
            stack.append(node)
            keys.append(None)
    return root


def first_value(records: Iterator[Any]) -> Any:
    """The first record whose value parses (sniffing skips a corrupt first line)."""
    from simforge.trace.errors import TraceFormatError

    for index, record in enumerate(records):
        if index >= 5:
            break
        try:
            return record.value
        except TraceFormatError:
            continue
    return None


def sample_of(doc: Document) -> Sample:
    """The sample shown to every adapter's ``sniff`` for this document."""
    if doc.layout == "jsonl":
        value = first_value(doc.lines())
    elif doc.layout == "array":
        value = doc.first_item_skeleton()
    elif doc.layout == "object":
        value = doc.skeleton()
    else:
        value = None
    return Sample(doc.layout, value, doc.path)
