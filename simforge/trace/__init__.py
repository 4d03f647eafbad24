"""Trace ingestion: the Episode model, one adapter per format, a streaming reader, quarantine.

Entry points for other layers: :func:`iter_episodes` (streaming) and :func:`ingest` (with
statistics and an :class:`IngestResult`); :func:`write_episodes` / :class:`EpisodeWriter` to
export; :class:`FormatAdapter` and :func:`register_format` to add a format.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from simforge.trace.detect import Sample
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

# The episode model is what the simulation and the env need; ingestion (the reader, ijson, the
# format adapters, the statistics) is imported on first use of one of its names (PEP 562), so
# that ``import simforge`` on the env's path does not pay for it.
_LAZY = {
    "Sample": "detect",
    "EpisodeWriter": "export", "to_native": "export", "to_openai": "export",
    "write_episodes": "export",
    "IngestResult": "ingest", "Rejection": "ingest", "ingest": "ingest",
    "iter_episodes": "ingest",
    "Deferred": "registry", "FormatAdapter": "registry", "detect_format": "registry",
    "formats": "registry", "get_format": "registry", "register_format": "registry",
    "ToolStats": "stats",
}  # fmt: skip


class _Package(ModuleType):
    """Two lazy names are also submodules' names (``ingest`` the function and the module,
    ``formats`` the function and the adapters' package). Importing a submodule binds it on its
    package; here that binding is skipped, so the name stays the function it always was."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
