"""The format adapter registry: name -> adapter class, built-ins plus entry-point plugins.

An adapter is a class, instantiated once per input file, so that formats which group records
across a file (OTLP spans by trace, LangSmith runs by trace) keep their state on ``self`` and
hand the groups back from :meth:`FormatAdapter.finish`. Third parties register through the entry
point group ``simforge.formats`` (each entry point names a :class:`FormatAdapter` subclass); all
plugins are loaded eagerly on first use of the registry, and a broken one raises a single
:class:`FormatPluginError` naming it, as pluggy does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from simforge.config import NotFound
from simforge.plugins import PLUGINS, entry_points
from simforge.trace.detect import SAMPLE_RECORDS, Sample, samples_of
from simforge.trace.episode import Episode
from simforge.trace.errors import FormatPluginError, Location
from simforge.trace.reader import Document, Record

ENTRY_POINT_GROUP = "simforge.formats"

@dataclass(frozen=True, slots=True)
class Deferred:
    """An episode assembled from several records: where they began, how many there were
    (all of them are rejected together if assembly fails), and how to build it."""

    location: Location
    build: Callable[[], Episode]
    records: int = 1


class FormatAdapter:
    """Turns the records of one trace format into Episodes.

    Subclasses set ``name`` and implement :meth:`sniff` and :meth:`parse`; they override
    :meth:`records` when the records sit inside a container document (``simulations`` of a
    tau2 results file), and :meth:`finish` when an episode is assembled from many records.
    ``parse`` raises :class:`~simforge.trace.errors.TraceFormatError` for a malformed record.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    values_from_record: ClassVar[bool] = False
    """Whether every free-form value of this adapter's episodes comes from its record's parsed
    value, or from JSON strings in it parsed with ``formats._common.loads_text``: ingestion
    then measures the record's depth (often known from its document already) instead of every
    episode's values (twice the cost). The built-in trace formats say so; native validates raw
    bytes, and a plugin is measured episode by episode."""
    empty_episodes: ClassVar[bool] = True
    """Whether an episode with no message and no tool call is a record worth keeping. The
    built-in trace formats say no (``[]`` or ``{"messages": []}`` is garbage, not an episode);
    native episodes round-trip as they are, and a plugin decides for its own format."""

    def sniff(self, sample: Sample) -> float:
        """Confidence in ``[0, 1]`` that the sampled file is in this format."""
        raise NotImplementedError

    def records(self, doc: Document) -> Iterator[Record]:
        """The records of a file: lines of JSONL, items of an array, or the whole object."""
        if doc.layout == "jsonl":
            return doc.lines(parse=self.values_from_record)
        if doc.layout == "array":
            return doc.items("item")
        return doc.items("")

    def decode(self, record: Record) -> Any:
        """What :meth:`parse` receives for a record; the parsed JSON value by default."""
        return record.value

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        raise NotImplementedError

    def ready(self) -> Iterable[Deferred]:
        """Multi-record episodes complete before the end of the file (asked after each
        record, so that buffers can be emptied early)."""
        return ()

    def finish(self) -> Iterable[Deferred]:
        """Episodes assembled from several records, once the whole file has been read."""
        return ()


_builtin: dict[str, type[FormatAdapter]] = {}
_registry: dict[str, type[FormatAdapter]] = PLUGINS.trace_formats
"""The default registry's table of trace formats (:data:`simforge.plugins.PLUGINS`)."""
_plugins_loaded = False

_BUILTIN_MODULES = (
    "native",
    "tau2",
    "tau_bench",
    "otlp",
    "langsmith",
    "langfuse",
    "anthropic",
    "openai",
)


def register_format(adapter: type[FormatAdapter], *, replace: bool = False) -> type[FormatAdapter]:
    """Add an adapter class to the registry (usable as a class decorator)."""
    _check_adapter(adapter, adapter.__qualname__)
    if adapter.name in _registry and not replace and _registry[adapter.name] is not adapter:
        raise FormatPluginError(adapter.name, "a format with this name is already registered")
    _registry[adapter.name] = adapter
    return adapter


def _check_adapter(adapter: object, plugin: str) -> None:
    if not (isinstance(adapter, type) and issubclass(adapter, FormatAdapter)):
        raise FormatPluginError(plugin, "is not a subclass of simforge.trace.FormatAdapter")
    if not adapter.name or not isinstance(adapter.name, str):
        raise FormatPluginError(plugin, "has no `name`")
    for method in ("sniff", "parse"):
        if getattr(adapter, method) is getattr(FormatAdapter, method):
            raise FormatPluginError(plugin, f"does not implement `{method}`")


def _load_builtins() -> None:
    if _builtin:
        return
    for module in _BUILTIN_MODULES:
        importlib.import_module(f"simforge.trace.formats.{module}")
    _builtin.update(_registry)


def load_plugins() -> None:
    """Import every adapter of the ``simforge.formats`` entry point group, now."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _load_builtins()
    _plugins_loaded = True
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        label = f"{entry.name} ({entry.value})"
        try:
            adapter = entry.load()
        except Exception as exc:  # a plugin's import can fail in any way
            reason = f"failed to import: {type(exc).__name__}: {exc}"
            raise FormatPluginError(label, reason) from exc
        _check_adapter(adapter, label)
        if adapter.name in _builtin and _builtin[adapter.name] is not adapter:
            raise FormatPluginError(label, f"reuses the built-in format name {adapter.name!r}")
        _registry[adapter.name] = adapter


def formats() -> dict[str, type[FormatAdapter]]:
    """All registered adapters by name, in detection-priority order."""
    load_plugins()
    return dict(_registry)


def get_format(name: str) -> type[FormatAdapter]:
    """The adapter registered under ``name``; :class:`~simforge.config.NotFound` (a
    ``KeyError``) lists the known names."""
    known = formats()
    if name not in known:
        raise NotFound(f"unknown trace format {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def _best(sample: Sample) -> tuple[float, str] | None:
    best: tuple[float, str] | None = None
    for name, adapter in formats().items():
        try:
            score = float(adapter().sniff(sample))
        except Exception:  # a sniffer must never break detection of the other formats
            score = 0.0
        if score > 0 and (best is None or score > best[0]):
            best = (score, name)
    return best


def detect_format(sample: Sample) -> str | None:
    """The name of the adapter most confident about this sample, or ``None``."""
    best = _best(sample)
    return best[1] if best else None


def detect_document_format(doc: Document) -> str | None:
    """The format of a file: the one its first recognisable records (up to ``SAMPLE_RECORDS``
    of them) are recognised as with the most confidence in all (a bare chat message counts 0.5
    for OpenAI, a whole record 0.9-1.0; a tie goes to more records, then to the first seen), or
    ``None`` when no record is recognised."""
    votes: dict[str, int] = {}
    confidence: dict[str, float] = {}
    for sample in samples_of(doc):
        best = _best(sample)
        if best is None:
            continue
        score, name = best
        votes[name] = votes.get(name, 0) + 1
        confidence[name] = confidence.get(name, 0.0) + score
        cast = sum(votes.values())
        if cast >= SAMPLE_RECORDS or (len(votes) == 1 and 2 * cast > SAMPLE_RECORDS):
            break  # all of a majority agree: the records left could not change the outcome
    if not votes:
        return None
    return max(votes, key=lambda name: (confidence[name], votes[name]))
