"""Trace ingestion: the Episode model, one adapter per format, a streaming reader, quarantine."""

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

__all__ = [
    "EntityChange",
    "Episode",
    "FieldChange",
    "InjectedFault",
    "Message",
    "Outcome",
    "SimulationRecord",
    "Source",
    "TaskSpec",
    "ToolCall",
    "Trajectory",
]
