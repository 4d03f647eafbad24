"""Where a record sits in its file, and the errors of the trace layer.

One small exception tree, so callers can catch the layer's failures without catching bugs::

    TraceError
    ├── TraceFormatError     one record is malformed (carries its Location); ingest quarantines it
    │   └── StrictModeAbort  raised by ingest in strict mode at the first bad record
    └── FormatPluginError    a format plugin (entry point ``simforge.formats``) failed to load

Adapters raise only :class:`TraceFormatError`; ingest turns everything else an adapter lets slip
into one as well, so bad data never surfaces as a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from simforge.errors import PluginError, UserError


@dataclass(frozen=True, slots=True)
class Location:
    """The address of one record: the file plus whatever the reader knows (line, byte offset,
    array index, a JSON pointer such as ``simulations[3]``)."""

    path: str
    line: int | None = None
    offset: int | None = None
    index: int | None = None
    pointer: str | None = None

    def __str__(self) -> str:
        parts = [self.path]
        if self.line is not None:
            parts[0] = f"{self.path}:{self.line}"
        if self.pointer:
            parts.append(self.pointer)
        elif self.index is not None:
            parts.append(f"[{self.index}]")
        if self.offset is not None and self.line is None:
            parts.append(f"@byte {self.offset}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, object]:
        """The non-empty address fields, for quarantine entries and JSON reports."""
        out: dict[str, object] = {"file": self.path}
        for key in ("line", "offset", "index", "pointer"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def child(self, pointer: str) -> Location:
        """The location of a part of this record (a span inside a resource, a message...)."""
        joined = f"{self.pointer}{pointer}" if self.pointer else pointer
        return Location(self.path, self.line, self.offset, self.index, joined)


class TraceError(UserError):
    """Base of every error the trace layer raises on purpose."""


class TraceFormatError(TraceError):
    """A record that cannot be turned into an Episode: says where and why."""

    def __init__(self, location: Location | None, reason: str) -> None:
        self.location = location
        self.reason = reason
        where = f"{location}: " if location is not None else ""
        super().__init__(f"{where}{reason}")


class StrictModeAbort(TraceFormatError):
    """Strict ingestion stopped at the first malformed record."""


class FormatPluginError(TraceError, PluginError):
    """A third-party format adapter could not be loaded or is not a valid adapter."""

    def __init__(self, plugin: str, reason: str) -> None:
        self.plugin = plugin
        self.reason = reason
        super().__init__(f"format plugin {plugin!r}: {reason}")
