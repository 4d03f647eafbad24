"""Trace ingestion: the Episode model, one adapter per format, a streaming reader, quarantine.

Entry points for other layers: :func:`iter_episodes` (streaming) and :func:`ingest` (with
statistics and an :class:`IngestResult`); :func:`write_episodes` / :class:`EpisodeWriter` to
export; :class:`FormatAdapter` and :func:`register_format` to add a format.
"""

from __future__ import annotations

from simforge.trace.detect import Sample
from simforge.trace.episode import (
    EntityChange,
    Episode,
    FieldChange,
    InjectedFault,
    Message,
    Outcome,
    SimulationRecord,
    Source,
    TaskSpec,
    ToolCall,
    Trajectory,
)
from simforge.trace.errors import (
    FormatPluginError,
    Location,
    StrictModeAbort,
    TraceError,
    TraceFormatError,
)
from simforge.trace.export import EpisodeWriter, to_native, to_openai, write_episodes
from simforge.trace.ingest import IngestResult, Rejection, ingest, iter_episodes
from simforge.trace.registry import (
    Deferred,
    FormatAdapter,
    detect_format,
    formats,
    get_format,
    register_format,
)
from simforge.trace.stats import ToolStats

__all__ = [
    "Deferred",
    "EntityChange",
    "Episode",
    "EpisodeWriter",
    "FieldChange",
    "FormatAdapter",
    "FormatPluginError",
    "IngestResult",
    "InjectedFault",
    "Location",
    "Message",
    "Outcome",
    "Rejection",
    "Sample",
    "SimulationRecord",
    "Source",
    "StrictModeAbort",
    "TaskSpec",
    "ToolCall",
    "ToolStats",
    "TraceError",
    "TraceFormatError",
    "Trajectory",
    "detect_format",
    "formats",
    "get_format",
    "ingest",
    "iter_episodes",
    "register_format",
    "to_native",
    "to_openai",
    "write_episodes",
]
