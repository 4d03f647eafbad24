"""Ingestion: files of any supported format in, a stream of validated Episodes out.

``iter_episodes`` is the streaming core: it never holds more than one record's episodes (plus
what a grouping format must buffer), so memory stays flat however large the input. ``ingest``
drives it to the end, keeps per-tool statistics, optionally writes native JSONL, and returns an
:class:`IngestResult`. Every failure of a record (unparsable bytes, a missing field, an adapter
that trips over odd data) is counted and quarantined; nothing escapes as a traceback unless the
caller asked for ``strict`` mode, where the first one raises :class:`StrictModeAbort`.

Counting rule, relied on by tests: ``records_kept + rejected == records_read``. A file that
cannot be opened or recognised counts as one record read and rejected; so does every stretch of
a broken document that could not be read as a record.

Besides what its adapter checks, a record is refused when it carries no conversation (no
message and no tool call: ``[]`` or ``{"messages": []}`` is not an episode) or when it nests
deeper than ``simforge.jsonio.MAX_DEPTH`` levels, which no exporter could write: the record's
value (known shallow when its whole document parsed within the limit), the JSON strings in it
that adapters parse (``loads_text``), or, for native episodes and plugins, every free-form value
of the episode. Both are checked before the record counts as kept.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simforge.jsonio import MAX_DEPTH, DepthError, exceeds_depth
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, StrictModeAbort, TraceFormatError
from simforge.trace.quarantine import Quarantine
from simforge.trace.reader import Document, Record
from simforge.trace.registry import (
    Deferred,
    FormatAdapter,
    detect_document_format,
    formats,
    get_format,
)
from simforge.trace.stats import ToolStats

PathLike = str | os.PathLike[str]
ProgressCallback = Callable[[int, int, int], None]
"""Called as ``progress(bytes_done, bytes_total, episodes)`` while files are read."""

_INPUT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz")
_MAX_REJECTIONS_KEPT = 100
_PROGRESS_EVERY = 64


@dataclass(frozen=True, slots=True)
class Rejection:
    location: Location | None
    reason: str
    format: str | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}" if self.location else self.reason


@dataclass
class FileReport:
    path: str
    format: str | None = None
    records: int = 0
    rejected: int = 0
    episodes: int = 0


@dataclass
class IngestResult:
    """What an ingestion read, kept and rejected; ``to_json`` is the CLI's ``--json`` shape."""

    episodes: int = 0
    tool_calls: int = 0
    records_read: int = 0
    records_kept: int = 0
    rejected: int = 0
    nonfinite: int = 0
    """``NaN`` / ``Infinity`` values read as ``null`` (JSON has no such numbers; Python's
    ``json.dump`` writes them by default)."""
    formats: dict[str, int] = field(default_factory=dict)
    files: list[FileReport] = field(default_factory=list)
    stats: ToolStats = field(default_factory=ToolStats)
    rejections: list[Rejection] = field(default_factory=list)
    collected: list[Episode] = field(default_factory=list)
    quarantine_path: Path | None = None

    @property
    def tools(self) -> int:
        return len(self.stats.tools)

    @property
    def ok(self) -> bool:
        """Whether anything could be read: the CLI exits non-zero otherwise."""
        return self.records_kept > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "tool_calls": self.tool_calls,
            "tools": self.tools,
            "rejected": self.rejected,
            "formats": dict(self.formats),
            "by_tool": self.stats.by_tool(),
        }


def expand_paths(paths: PathLike | Iterable[PathLike]) -> list[str]:
    """Files named directly, plus the trace files found under any directory named."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            out.extend(
                str(p) for p in sorted(path.rglob("*"))
                if p.is_file() and p.name.endswith(_INPUT_SUFFIXES)
            )
        else:
            out.append(str(path))
    return out


class _Run:
    def __init__(
        self,
        paths: list[str],
        fmt: str | None,
        quarantine: Quarantine,
        strict: bool,
        progress: ProgressCallback | None,
        result: IngestResult,
    ) -> None:
        self.paths = paths
        self.fmt = fmt
        self.quarantine = quarantine
        self.strict = strict
        self.progress = progress
        self.result = result
        self.total = sum(_size(p) for p in paths)
        self.done = 0
        if fmt is not None:
            get_format(fmt)
        else:
            formats()

    def reject(
        self,
        location: Location | None,
        reason: str,
        raw: str,
        fmt: str | None,
        records: int = 1,
    ) -> None:
        result = self.result
        result.rejected += records
        if result.files:
            result.files[-1].rejected += records
        if len(result.rejections) < _MAX_REJECTIONS_KEPT:
            result.rejections.append(Rejection(location, reason, fmt))
        self.quarantine.write(location, reason, raw, fmt, records)
        if self.strict:
            raise StrictModeAbort(location, reason)

    def episodes(self) -> Iterator[Episode]:
        for path in self.paths:
            yield from self._file(path)
            self.done += _size(path)
            self._tick(None)

    def _tick(self, doc: Document | None) -> None:
        if self.progress is not None:
            current = doc.bytes_read() if doc is not None else 0
            self.progress(min(self.done + current, self.total), self.total, self.result.episodes)

    def _file(self, path: str) -> Iterator[Episode]:
        result = self.result
        report = FileReport(path)
        result.files.append(report)
        try:
            doc = Document(path)
        except OSError as exc:
            result.records_read += 1
            report.records += 1
            self.reject(Location(path), f"cannot open file: {exc.strerror or exc}", "", None)
            return
        if doc.layout == "empty":
            return
        if doc.layout == "unknown":
            result.records_read += 1
            report.records += 1
            reason = doc.load_error or "not JSON or JSON Lines"
            self.reject(Location(path), reason, "", None)
            return
        name = self.fmt or detect_document_format(doc)
        if name is None:
            result.records_read += 1
            report.records += 1
            known = ", ".join(formats())
            self.reject(Location(path), f"unrecognised trace format (use --format; known: "
                        f"{known})", "", None)
            return
        report.format = name
        doc.replaced = 0  # what sniffing read is read again
        adapter = get_format(name)()
        measure = adapter.values_from_record
        records = enumerate(adapter.records(doc))
        pause = _CollectorPause()
        while True:
            # The collector is paused while a record is read and parsed, and running again
            # whenever an episode is handed to the caller (whose code may make cycles).
            with pause:
                step = next(records, None)
                if step is None:
                    break
                count, record = step
                result.records_read += 1
                report.records += 1
                try:
                    decoded = adapter.decode(record)
                    if (measure and not record.checked and type(decoded) is not bytes
                            and exceeds_depth(decoded, MAX_DEPTH)):
                        raise DepthError(MAX_DEPTH)
                    produced = list(adapter.parse(decoded, record.location))
                    problem = _refusal(produced, adapter)
                except DepthError as exc:
                    self.reject(record.location, str(exc), record.text(), name)
                    continue
                except TraceFormatError as exc:
                    self.reject(exc.location or record.location, exc.reason, record.text(), name)
                    continue
                except Exception as exc:  # an adapter tripping over odd data is still bad data
                    self.reject(record.location,
                                f"malformed record ({type(exc).__name__}: {exc})",
                                record.text(), name)
                    continue
                if problem is not None:
                    self.reject(record.location, problem, record.text(), name)
                    continue
                result.records_kept += 1
            for episode in produced:
                self._account(episode, name, report)
                yield episode
            yield from self._assemble(adapter.ready(), name, report, adapter)
            if count % _PROGRESS_EVERY == 0:
                self._tick(doc)
        yield from self._assemble(adapter.finish(), name, report, adapter)
        result.nonfinite += doc.replaced
        doc.release()

    def _assemble(
        self, deferred: Iterable[Deferred], name: str, report: FileReport, adapter: FormatAdapter
    ) -> Iterator[Episode]:
        """Build multi-record episodes; a failure rejects every record of the group, which
        were counted as kept when they were read."""
        for item in deferred:
            try:
                episode = item.build()
                problem = _refusal((episode,), adapter)
                if problem is not None:
                    raise TraceFormatError(item.location, problem)
            except Exception as exc:
                reason = exc.reason if isinstance(exc, TraceFormatError) else (
                    f"could not assemble episode ({type(exc).__name__}: {exc})")
                where = exc.location if isinstance(exc, TraceFormatError) else None
                self.result.records_kept -= item.records
                self.reject(where or item.location, reason, "", name, item.records)
                continue
            self._account(episode, name, report)
            yield episode

    def _account(self, episode: Episode, name: str, report: FileReport) -> None:
        result = self.result
        result.episodes += 1
        result.tool_calls += len(episode.tool_calls)
        result.formats[name] = result.formats.get(name, 0) + 1
        report.episodes += 1


def _refusal(episodes: Iterable[Episode], adapter: FormatAdapter) -> str | None:
    """Why episodes an adapter produced cannot be kept, or ``None``."""
    for episode in episodes:
        if not episode.messages and not episode.tool_calls and not adapter.empty_episodes:
            return "no conversation: the record has no message and no tool call"
        if not adapter.values_from_record and too_deep(episode):
            return f"nested deeper than {MAX_DEPTH} levels"
    return None


def too_deep(episode: Episode, limit: int = MAX_DEPTH) -> bool:
    """Whether a free-form value of the episode nests deeper than ``limit``: its metadata,
    labels, the calls' arguments, results and metadata, the messages' metadata, and what a
    simulation recorded. One measurement over all of them (see ``jsonio.exceeds_depth``).

    Scalars are left out, above all the long strings (a tau2 domain policy in every episode's
    metadata is half the bytes of the real traces): a dict's scalars are dropped and its
    containers measured in a list standing at the dict's level."""
    values: list[Any] = []
    append = values.append
    for fields in (episode.metadata, episode.task.metadata, episode.outcome.labels):
        nested = [v for v in fields.values() if type(v) is dict or type(v) is list]
        if nested:
            append(nested)
    for message in episode.messages:
        if message.metadata:
            append(message.metadata)
    for call in episode.tool_calls:
        if call.args:
            append(call.args)
        result = call.result
        if type(result) is dict or type(result) is list:
            append(result)
        if call.metadata:
            append(call.metadata)
    sim = episode.simulation
    if sim is not None:
        for fault in sim.faults:
            append(fault.params)
            append(fault.observed)
        for change in sim.world_diff:
            append(change.before)
            append(change.after)
            for value in change.fields.values():
                append(value.old)
                append(value.new)
    if not values:
        return False
    return exceeds_depth(tuple(values), limit + 1)


class _CollectorPause:
    """Pauses the cyclic garbage collector for a block, unless the caller had it off already.

    Parsing a record allocates tens of thousands of dicts, lists and models that form no
    cycles (reference counting frees all of them), yet every 700 allocations would start a
    collection that traverses the young objects, and every so often the whole heap. On the real
    traces one full collection over a parsed document cost 20 ms of a 78 ms run.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def iter_episodes(
    paths: PathLike | Iterable[PathLike],
    format: str | None = None,
    quarantine: PathLike | Quarantine | None = None,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    result: IngestResult | None = None,
) -> Iterator[Episode]:
    """Stream the episodes of every file; rejected records go to ``quarantine``.

    ``format`` forces an adapter instead of detecting one per file. Pass an
    :class:`IngestResult` as ``result`` to get the counts once the generator is exhausted.
    Raises ``KeyError`` for an unknown ``format`` and :class:`StrictModeAbort` in strict mode.
    """
    own = not isinstance(quarantine, Quarantine)
    sink = quarantine if isinstance(quarantine, Quarantine) else Quarantine(quarantine)
    run = _Run(expand_paths(paths), format, sink, strict, progress, result or IngestResult())
    try:
        yield from run.episodes()
    except StrictModeAbort:
        if own:
            sink.close()  # a deliberate stop: the record that stopped it is worth seeing
        raise
    except BaseException:
        if own:
            sink.discard()  # an incomplete run (or one abandoned by its consumer)
        raise
    if own:
        sink.close()


def ingest(
    paths: PathLike | Iterable[PathLike],
    format: str | None = None,
    quarantine: PathLike | None = None,
    strict: bool = False,
    progress: ProgressCallback | None = None,
    out: PathLike | None = None,
    keep: bool = False,
    on_episode: Callable[[Episode], None] | None = None,
) -> IngestResult:
    """Read everything, gather per-tool statistics, and report.

    ``out`` writes the episodes as native JSONL as they stream past, under a temporary name that
    replaces ``out`` once the run completes (a run that fails leaves ``out`` as it was); ``keep``
    collects them in
    ``result.collected`` (memory then grows with the input); ``on_episode`` sees each one.
    """
    from simforge.trace.export import EpisodeWriter

    result = IngestResult(quarantine_path=Path(quarantine) if quarantine is not None else None)
    stats = result.stats
    writer = EpisodeWriter(out, "native") if out is not None else None
    # Paused for the whole run, not only per record: the parsed document of a file stays alive
    # while its records are read, and a full collection over it (which the growing heap would
    # otherwise trigger once per file) costs a third of the run on the real traces. Whatever
    # cyclic garbage ``on_episode`` or ``progress`` make is collected once ingestion ends.
    try:
        with _CollectorPause():
            for episode in iter_episodes(paths, format, quarantine, strict, progress, result):
                stats.add(episode)
                if writer is not None:
                    writer.write(episode)
                if keep:
                    result.collected.append(episode)
                if on_episode is not None:
                    on_episode(episode)
    except BaseException:
        if writer is not None:
            writer.discard()  # the previous output stays; no partial file looks whole
        raise
    if writer is not None:
        writer.close()
    return result


__all__ = [
    "FileReport",
    "IngestResult",
    "Record",
    "Rejection",
    "expand_paths",
    "ingest",
    "iter_episodes",
]
