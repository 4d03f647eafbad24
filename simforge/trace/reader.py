"""Streaming reader: a file becomes a sequence of records, each with its location.

Why two paths for JSON documents: a whole document is parsed about twice as fast as ijson
streams it, so a document up to ``WHOLE_DOCUMENT_LIMIT`` bytes is parsed in one go (the memory
that costs is bounded by the limit), and anything larger is streamed item by item with ijson's C
backend, so memory stays flat however large the file grows. Both whole documents and JSON Lines
are parsed with orjson. (msgspec parses pretty-printed documents 12-35% faster, but it keeps
integers beyond 64 bits exact where orjson rounds them to floats, and code downstream that
serialises with orjson then fails on them; the gain, 3% of ingestion, is not worth two
behaviours.) JSON Lines are always read line by line (and parsed in batches of lines, see
``Document.lines``). Gzip is recognised by its magic bytes, not by the file name.

The layout comes from the content (see ``detect.sniff_layout``); only a ``.jsonl``/``.ndjson``
name overrides it, for files whose content cannot tell. A UTF-8 byte order mark is skipped
(offsets still count it). A document up to the limit that orjson refuses is split into its
records at the byte level (``simforge.trace.scan``): each record is parsed on its own, a broken
one is rejected with its true byte offset, and reading resumes at the next record; ``NaN`` and
``Infinity`` are read as ``null`` and counted (``Document.replaced``). Nothing nested deeper than
``simforge.jsonio.MAX_DEPTH`` is built: orjson stops at 1,024 levels, the splitter steps over a
deeper record without parsing it, and sniffing counts depth on ijson's prefix-free events.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterator
from typing import IO, Any, Final

import ijson
import orjson

from simforge.jsonio import MAX_DEPTH, dumps, exceeds_depth
from simforge.trace.detect import Layout, skeleton, sniff_layout
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.scan import (
    BOM,
    deep_reason,
    document_start,
    find_member,
    object_skeleton,
    parse_json,
    split_array,
    value_end,
)

WHOLE_DOCUMENT_LIMIT = 16 * 1024 * 1024
"""JSON documents up to this many (uncompressed) bytes are parsed whole with orjson."""

READ_BUFFER = 256 * 1024
"""Read buffer of a file on disk. JSONL records of real traces run to tens of kilobytes: with
the default 8 KiB buffer, iterating lines stitches most of them from several reads (2.5 ms for
the 7.5 MB of the benchmark's JSONL, against 0.8 ms with 64 KiB and 0.4 ms with 256 KiB)."""

_READ_ERRORS = (OSError, EOFError, zlib.error, gzip.BadGzipFile, ValueError)


class _Unset:
    __slots__ = ()


_UNSET: Final = _Unset()
_TOO_BIG: Final = _Unset()
_BROKEN: Final = _Unset()


class Record:
    """One record read from a file: its location, and its raw bytes or its parsed value.

    The value of a JSONL line is parsed on first access, so an adapter that validates raw bytes
    itself (the native format) never pays for a second parse. A record that the reader could not
    even delimit carries ``error``; touching its value raises :class:`TraceFormatError`.
    """

    __slots__ = ("_value", "checked", "error", "location", "owner", "raw")

    def __init__(
        self,
        location: Location,
        raw: bytes | None = None,
        value: Any = _UNSET,
        error: str | None = None,
        owner: Document | None = None,
        checked: bool = False,
    ) -> None:
        self.location = location
        self.raw = raw
        self._value = value
        self.error = error
        self.owner = owner
        self.checked = checked
        """Whether the value is known to nest no deeper than ``MAX_DEPTH`` (its document was
        parsed with the limit; see ``Document.loaded``)."""

    @property
    def value(self) -> Any:
        if self.error is not None:
            raise TraceFormatError(self.location, self.error)
        if self._value is _UNSET:
            try:
                self._value = orjson.loads(self.raw or b"")
            except orjson.JSONDecodeError:
                value, error, replaced = parse_json(self.raw or b"")
                if error is not None:
                    raise TraceFormatError(self.location, error) from None
                if replaced and self.owner is not None:
                    self.owner.replaced += replaced
                self._value = value
        return self._value

    def text(self) -> str:
        """The record as text, for the quarantine file: the raw bytes when there are any."""
        if self.raw is not None:
            return self.raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if self._value is _UNSET:
            return ""
        if exceeds_depth(self._value, MAX_DEPTH):
            return f"({deep_reason()}: not written)"
        return dumps(self._value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class Document:
    """One input file: its layout, and iterators over its records.

    Each iterator opens the file afresh, so an adapter may make two passes (tau2 reads the tasks
    before streaming the simulations of a file too large to load).
    """

    def __init__(self, path: str | os.PathLike[str], whole_limit: int | None = None) -> None:
        self.path = os.fspath(path)
        self.size = os.path.getsize(self.path)
        self.whole_limit = WHOLE_DOCUMENT_LIMIT if whole_limit is None else whole_limit
        with open(self.path, "rb") as head:
            self.compressed = head.read(2) == b"\x1f\x8b"
        self._raw: IO[bytes] | None = None
        self._loaded: Any = _UNSET
        self._data: bytes | None = None
        """The bytes of a document that orjson refused, kept for the splitter."""
        self.load_error: str | None = None
        self.bom = 0
        """Bytes of a UTF-8 byte order mark at the start (skipped; offsets count them)."""
        self.replaced = 0
        """``NaN`` / ``Infinity`` values read as ``null`` so far."""
        self.shallow = False
        """Whether the loaded document nests no deeper than ``MAX_DEPTH``."""
        self.sampled: dict[int, tuple[Any, int]] = {}
        """JSON Lines values parsed for sniffing, by line number, with their ``NaN`` count:
        handed to the first pass instead of being parsed twice."""
        try:
            with self.open() as stream:
                self.layout: Layout = sniff_layout(stream)
            if self.layout in ("object", "array", "unknown") and _named_jsonl(self.path):
                self.layout = "jsonl"
        except _READ_ERRORS as exc:
            self.layout = "unknown"
            self.load_error = f"unreadable: {exc}"

    def open(self) -> IO[bytes]:
        """A fresh binary stream of the (decompressed) content, past a byte order mark."""
        raw = open(self.path, "rb", READ_BUFFER)  # noqa: SIM115 - closed through the stream
        self._raw = raw
        stream: IO[bytes] = raw
        if self.compressed:
            stream = io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), 1 << 16)
        try:
            if stream.peek(3)[:3] == BOM:  # type: ignore[attr-defined]
                stream.read(3)
                self.bom = 3
        except BaseException:
            stream.close()
            raise
        return stream

    def bytes_read(self) -> int:
        """How far into the file on disk the current pass has read (for progress bars)."""
        raw = self._raw
        if raw is None or raw.closed:
            return self.size
        try:
            return raw.tell()
        except (OSError, ValueError):
            return self.size

    def lines(self, parse: bool = False) -> Iterator[Record]:
        """Records of a JSON Lines file, one per non-blank line, with line number and offset.

        With ``parse``, lines are parsed in batches of about ``LINE_BATCH`` bytes: each line
        in a one-element array, the batch between ``_PAD`` brackets, so that orjson's limit of
        1,024 levels checks every line against ``MAX_DEPTH`` while it parses (``checked``).
        A batch is trusted only if every line's array holds exactly one value: a damaged line
        cannot pass its brackets on to its neighbours. A batch that does not parse (a bad line,
        a ``NaN``) leaves its lines to be parsed one by one, when their value is asked for."""
        number = 0
        path = self.path
        offset = 0
        sampled = self.sampled
        batch: list[Record] = []
        batch_bytes = 0
        if parse:
            sampled.clear()
        try:
            with self.open() as stream:
                offset = self.bom
                for line in stream:
                    number += 1
                    start = offset
                    offset += len(line)
                    if not line or line.isspace():  # what strip() would empty, uncopied
                        continue
                    if parse:
                        batch.append(Record(Location(path, line=number, offset=start), raw=line,
                                            owner=self))
                        batch_bytes += len(line)
                        if batch_bytes >= LINE_BATCH:
                            _parse_batch(batch)
                            yield from batch
                            batch = []
                            batch_bytes = 0
                        continue
                    if sampled and number in sampled:
                        value, replaced = sampled.pop(number)
                        self.replaced += replaced
                        yield Record(Location(path, line=number, offset=start), raw=line,
                                     value=value, owner=self)
                        continue
                    yield Record(Location(path, line=number, offset=start), raw=line, owner=self)
        except _READ_ERRORS as exc:
            _parse_batch(batch)
            yield from batch
            batch = []
            yield Record(
                Location(path, line=number + 1, offset=offset),
                error=f"unreadable after this point: {exc}",
            )
        _parse_batch(batch)
        yield from batch

    def loaded(self) -> Any:
        """The whole document parsed, or ``None`` when it is too large or broken.

        ``None`` cannot be confused with a document: layouts ``array``/``object`` only.
        """
        expected = self._expected_size() if self._loaded is _UNSET else 0
        if expected > self.whole_limit:
            self._loaded = _TOO_BIG
        if self._loaded is _UNSET:
            try:
                with self.open() as stream:
                    buffer, size = _read_padded(stream, expected, self.whole_limit)
            except _READ_ERRORS as exc:
                self._loaded = _BROKEN
                self.load_error = f"unreadable: {exc}"
                return None
            if size > self.whole_limit:
                self._loaded = _TOO_BIG
            else:
                self._parse(buffer, size)
        if self._loaded is _TOO_BIG or self._loaded is _BROKEN:
            return None
        return self._loaded

    def _parse(self, buffer: bytearray, size: int) -> None:
        """Parse the document read into ``buffer`` between ``_PAD`` brackets on either side.

        Parsed so, orjson's own limit of 1,024 levels refuses a document deeper than
        ``MAX_DEPTH`` while parsing, at no cost: every record of a document that parses is
        known to be shallow enough (``Record.checked``), and only a deeper document (parsed
        again without the padding) has its records measured one by one."""
        view = memoryview(buffer)
        content = view[_PAD:_PAD + size]
        try:
            value = _unwrap(orjson.loads(buffer), _PAD)
            self.shallow = True
        except (orjson.JSONDecodeError, _NotOne):
            try:
                value = orjson.loads(content)
            except orjson.JSONDecodeError as exc:
                self._loaded = _BROKEN
                self._data = (BOM if self.bom else b"") + bytes(content)
                reason = deep_reason() if "depth limit" in str(exc) else f"invalid JSON: {exc}"
                self.load_error = reason
                return
            self.shallow = False
        self._loaded = value

    def _expected_size(self) -> int:
        """The content's size from the size on disk (or gzip's size trailer, modulo 2**32: a
        wrap reads on up to the limit), without reading the content."""
        if not self.compressed:
            return self.size
        try:
            with open(self.path, "rb") as raw:
                raw.seek(-4, os.SEEK_END)
                return int.from_bytes(raw.read(4), "little")
        except OSError:
            return 0

    def release(self) -> None:
        """Drop the parsed document once its records are consumed."""
        if self._loaded is not _TOO_BIG and self._loaded is not _BROKEN:
            self._loaded = _UNSET
        self._data = None
        if self._loaded is _BROKEN:
            self._loaded = _UNSET

    def items(self, prefix: str) -> Iterator[Record]:
        """Records at an ijson ``prefix``: ``item`` for a top-level array, ``spans.item`` for the
        array under the top-level key ``spans``, ``""`` for the whole document as one record."""
        doc = self.loaded()
        if doc is not None:
            yield from self._items_of_value(doc, prefix)
            return
        if self._data is not None:
            yield from self._items_scanned(self._data, prefix)
            return
        yield from self._items_streamed(prefix)

    def _items_scanned(self, data: bytes, prefix: str) -> Iterator[Record]:
        """Records of a document orjson refused, split at the byte level (see ``scan``)."""
        path = self.path
        start = document_start(data)
        if start >= len(data):
            return
        if prefix == "":
            value, error, replaced = parse_json(memoryview(data)[start:])
            if error is not None:
                yield Record(Location(path, offset=start), raw=data[start:], error=error)
            else:
                self.replaced += replaced
                yield Record(Location(path, offset=start), value=value)
            return
        name = prefix[: -len(".item")] if prefix.endswith(".item") else ""
        at = start
        if name:
            member = find_member(data, start, name) if data[start] == 0x7B else None
            if member is None:
                yield Record(Location(path, offset=start, pointer=name), raw=data[start:],
                             error=f"no array `{name}` found in a broken document "
                                   f"({self.load_error})")
                return
            at = member
        if data[at] != 0x5B:  # [
            end, _state = value_end(data, at)
            yield Record(Location(path, offset=at, pointer=name or None), raw=data[at:end],
                         error=f"expected an array at {name or 'the top level'}")
            return
        pieces = split_array(data, at, top=not name)
        index = 0
        explained = False
        while True:
            try:
                piece = next(pieces)
            except StopIteration as stop:
                end = stop.value
                break
            location = Location(path, index=index, offset=piece.start, pointer=f"{name}[{index}]")
            index += 1
            if piece.error is not None:
                explained = True
                yield Record(location, raw=data[piece.start:piece.end], error=piece.error)
            else:
                if piece.replaced:
                    explained = True
                    self.replaced += piece.replaced
                yield Record(location, value=piece.value)
        rest = document_start(memoryview(data)[end:]) + end if not name else len(data)
        if not name and rest < len(data):
            yield Record(Location(path, offset=rest), raw=data[rest:],
                         error="unexpected data after the end of the document")
        elif not explained:
            # orjson refused the document for something outside the records read (a broken
            # member beside the array, a missing comma): nothing was skipped, but say so
            yield Record(Location(path, offset=start), raw=b"",
                         error=f"the document is broken outside its records ({self.load_error})")

    def _items_of_value(self, doc: Any, prefix: str) -> Iterator[Record]:
        path = self.path
        checked = self.shallow
        if prefix == "":
            yield Record(Location(path), value=doc, checked=checked)
            return
        container = doc
        keys = prefix.split(".")[:-1]
        for key in keys:
            if not isinstance(container, dict) or key not in container:
                return
            container = container[key]
        name = ".".join(keys)
        if not isinstance(container, list):
            yield Record(
                Location(path, pointer=name or None),
                value=container,
                error=f"expected an array at {name or 'the top level'}",
            )
            return
        for index, value in enumerate(container):
            yield Record(Location(path, index=index, pointer=f"{name}[{index}]"), value=value,
                         checked=checked)

    def _items_streamed(self, prefix: str, backend: Any = ijson) -> Iterator[Record]:
        """Items streamed with ijson's C backend; from an integer beyond 64 bits on, which
        yajl refuses though JSON allows it, with ijson's Python backend (slower, exact).

        The stream passes through a :class:`_DepthGuard` first: ijson's ``items`` keeps a
        prefix string per open level, so memory and time grow with the square of the depth
        (1 GB for 20,000 levels); nesting past ``STREAM_DEPTH_GUARD`` ends the document there,
        as one rejected record."""
        path = self.path
        name = prefix[: -len(".item")] if prefix.endswith(".item") else ""
        index = -1
        try:
            with self.open() as stream:
                guarded = _DepthGuard(stream, self.bom)
                if prefix == "":
                    value = next(backend.items(guarded, "", use_float=True))
                    yield Record(Location(path), value=value)
                    return
                for index, value in enumerate(backend.items(guarded, prefix, use_float=True)):
                    yield Record(
                        Location(path, index=index, pointer=f"{name}[{index}]"), value=value
                    )
        except _TooDeep as exc:
            where = f"{name}[{index + 1}]" if prefix != "" else None
            yield Record(Location(path, index=index + 1, offset=exc.offset, pointer=where),
                         error=f"nested deeper than {STREAM_DEPTH_GUARD} levels (counting "
                               "brackets); the rest of the document is not read")
        except ijson.JSONError as exc:
            if backend is ijson and "integer overflow" in str(exc):
                done = index + 1
                for record in self._items_streamed(prefix, ijson.get_backend("python")):
                    if record.location.index is None or record.location.index >= done:
                        yield record
                return
            yield self._broken_at(name, prefix, index, exc)
        except (StopIteration, *_READ_ERRORS) as exc:
            yield self._broken_at(name, prefix, index, exc)

    def _broken_at(self, name: str, prefix: str, index: int, exc: BaseException) -> Record:
        offset = self.bytes_read()
        where = f"{name}[{index + 1}]" if prefix != "" else None
        return Record(
            Location(self.path, index=index + 1, offset=offset, pointer=where),
            error=f"invalid JSON after this point: {exc}",
        )

    def top_level(self, key: str) -> Any:
        """The value of one top-level key of an object document (small values only)."""
        doc = self.loaded()
        if doc is not None:
            return doc.get(key) if isinstance(doc, dict) else None
        data = self._data
        if data is not None:
            start = document_start(data)
            at = find_member(data, start, key) if data[start:start + 1] == b"{" else None
            if at is None:
                return None
            end, state = value_end(data, at)
            if state != "ok":
                return None
            value, error, replaced = parse_json(memoryview(data)[at:end])
            self.replaced += replaced
            return None if error is not None else value
        try:
            with self.open() as stream:
                return next(ijson.items(stream, key, use_float=True), None)
        except (ijson.JSONError, *_READ_ERRORS):
            return None

    def first_item_skeleton(self) -> Any:
        """The first array item that could be read (for sniffing), whole when loaded or split,
        a skeleton when streamed."""
        items = self.sample_items(1)
        return items[0] if items else None

    def sample_items(self, count: int, scan: int = 64) -> list[Any]:
        """Up to ``count`` of the first ``scan`` items of an array document that could be read,
        whole when loaded or split, skeletons when streamed: what sniffing looks at."""
        doc = self.loaded()
        if isinstance(doc, list):
            return doc[:count]
        if doc is not None:
            return []
        out: list[Any] = []
        if self._data is not None:
            for seen, record in enumerate(self._items_scanned(self._data, "item")):
                if seen >= scan or len(out) >= count:
                    break
                if record.error is None:
                    out.append(record.value)
            return out
        head = self._skeleton(top_items=count)
        return head[:count] if isinstance(head, list) else []

    def skeleton(self) -> Any:
        """The document with arrays cut to their first element (for sniffing)."""
        doc = self.loaded()
        if doc is not None:
            return doc
        data = self._data
        if data is not None:
            start = document_start(data)
            if data[start:start + 1] == b"{":
                return object_skeleton(data, start)
        return self._skeleton()

    def _skeleton(self, top_items: int = 1) -> Any:
        """From ijson's prefix-free events (``basic_parse``: ``parse`` builds a prefix string
        per level, quadratic in the depth), up to ``MAX_DEPTH`` levels."""
        try:
            with self.open() as stream:
                events = ijson.basic_parse(stream, use_float=True)
                return skeleton(_until_error(events), top_items=top_items)
        except _READ_ERRORS:
            return None


_PAD: Final = 1024 - MAX_DEPTH
"""Brackets around a document parsed whole: orjson refuses more than 1,024 levels."""


class _NotOne(Exception):
    """A padding level that does not hold exactly one value: the content closed it."""


def _unwrap(value: Any, levels: int) -> Any:
    for _ in range(levels):
        if type(value) is not list or len(value) != 1:
            raise _NotOne
        value = value[0]
    return value


def _read_padded(stream: IO[bytes], expected: int, limit: int) -> tuple[bytearray, int]:
    """The content read into a buffer between ``_PAD`` opening and closing brackets, and
    its size. Read into place (no copy of the content), as much as the file announces: a read
    of 16 MiB allocates and faults in 16 MiB however small the file (1.7 ms each)."""
    buffer = bytearray(_PAD + expected + 1 + _PAD)
    view = memoryview(buffer)
    size = 0
    while size < expected + 1:
        got = stream.readinto(view[_PAD + size:_PAD + expected + 1])  # type: ignore[attr-defined]
        if not got:
            break
        size += got
    if size > expected:  # grew since, or a gzip size that wrapped: read on, copying
        content = bytes(view[_PAD:_PAD + size]) + stream.read(limit + 1 - size)
        view.release()
        size = len(content)
        buffer = bytearray(b"[" * _PAD) + content + b"]" * _PAD
        return buffer, size
    view[:_PAD] = b"[" * _PAD
    view[_PAD + size:_PAD + size + _PAD] = b"]" * _PAD
    view[_PAD + size + _PAD:] = b" " * (len(buffer) - 2 * _PAD - size)
    view.release()
    return buffer, size


LINE_BATCH: Final = 256 * 1024
"""Bytes of JSON Lines parsed in one call (see ``Document.lines``)."""
_LINE_PAD: Final = 1024 - 2 - MAX_DEPTH
_LINE_OPEN: Final = b"[" * _LINE_PAD + b"[["
_LINE_CLOSE: Final = b"]]" + b"]" * _LINE_PAD


def _parse_batch(batch: list[Record]) -> None:
    """Give each record of ``batch`` its value, checked against ``MAX_DEPTH``, if the whole
    batch parses so; else leave them to be parsed one by one."""
    if not batch:
        return
    text = b"".join((_LINE_OPEN, b"],[".join([r.raw or b"" for r in batch]), _LINE_CLOSE))
    try:
        wrappers = _unwrap(orjson.loads(text), _LINE_PAD)
    except (orjson.JSONDecodeError, _NotOne):
        return
    if type(wrappers) is not list or len(wrappers) != len(batch):
        return
    for wrapper in wrappers:
        if type(wrapper) is not list or len(wrapper) != 1:
            return
    for record, wrapper in zip(batch, wrappers, strict=True):
        record._value = wrapper[0]
        record.checked = True


STREAM_DEPTH_GUARD: Final = 2048
"""Nesting, counted as brackets (those inside strings too), past which a streamed document is
not read on. Counting is exact for bracket runs and bombs; text whose strings hold unbalanced
brackets shifts the count, which the margin over ``MAX_DEPTH`` absorbs (records deeper than
that are rejected one by one after parsing)."""


class _TooDeep(Exception):
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _DepthGuard:
    """A read-only stream that counts brackets in what it passes on, and refuses to pass on a
    chunk where the count could exceed ``STREAM_DEPTH_GUARD``.

    Per chunk: the count at its start plus its opening brackets bounds its maximum; only when
    that loose bound is over the limit is the exact running maximum computed. Counting costs a
    few percent of streaming; telling strings apart would cost as much as parsing."""

    __slots__ = ("count", "offset", "stream")

    def __init__(self, stream: IO[bytes], offset: int = 0) -> None:
        self.stream = stream
        self.count = 0
        self.offset = offset

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson asks for nothing to learn whether the stream gives bytes
        chunk = self.stream.read(size if size is not None and size > 0 else 1 << 16)
        if chunk:
            opens, closes = _brackets(chunk)
            if self.count + opens > STREAM_DEPTH_GUARD:
                peak, at = _peak(chunk, self.count)
                if peak > STREAM_DEPTH_GUARD:
                    raise _TooDeep(self.offset + at)
            self.count = max(0, self.count + opens - closes)
            self.offset += len(chunk)
        return chunk


def _brackets(chunk: bytes) -> tuple[int, int]:
    """``(opening, closing)`` brackets in ``chunk``."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with gymnasium
        return (chunk.count(b"[") + chunk.count(b"{"), chunk.count(b"]") + chunk.count(b"}"))
    array = np.frombuffer(chunk, dtype=np.uint8) | 0x20  # [ -> {, ] -> }
    return int(np.count_nonzero(array == 0x7B)), int(np.count_nonzero(array == 0x7D))


def _peak(chunk: bytes, start: int) -> tuple[int, int]:
    """The highest running bracket count in ``chunk`` from ``start``, and where it is."""
    depth = peak = start
    at = 0
    for match in re.finditer(rb"[\[\]{}]", chunk):
        depth += 1 if match.group() in (b"[", b"{") else -1
        depth = max(depth, 0)
        if depth > peak:
            peak, at = depth, match.start()
            if peak > STREAM_DEPTH_GUARD:
                break
    return peak, at


def _until_error(events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """Parse events up to the first syntax error: a broken file is still sniffed by its head."""
    try:
        yield from events
    except (ijson.JSONError, *_READ_ERRORS):
        return


def _named_jsonl(path: str) -> bool:
    """A file named ``.jsonl``/``.ndjson`` is JSON Lines even when its content cannot tell
    (one record, or first lines too corrupt to parse)."""
    name = path.lower().removesuffix(".gz")
    return name.endswith((".jsonl", ".ndjson"))

