"""Reading the inputs of ``simforge synth``: trace paths in, episodes and an account of what
was rejected out.

Each trace path is read by :func:`simforge.trace.iter_episodes` like ``simforge ingest`` reads it,
with its own :class:`~simforge.trace.IngestResult`, so rejected records are counted and kept
with their file and line rather than dropped. A path that holds no trace at all (no file of it
was recognised as a trace format) but loads as a data snapshot is taken as data, as if it had
been given with ``--data``: ``--data A B C`` leaves ``B`` and ``C`` among the positional trace
paths (an option takes one value), and this is how they reach the snapshot anyway.

:class:`NothingToLearn` is raised by :func:`simforge.synth.pipeline.synthesize` when no episode with
tool calls is left to learn from; it says why in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from simforge.errors import UserError
from simforge.synth.read.snapshot import SnapshotError, load_snapshots
from simforge.trace import IngestResult, Location, Rejection, iter_episodes
from simforge.trace.episode import Episode

_KEPT = 100
"""Rejections kept (as ``simforge ingest`` keeps them); the count covers all."""


@dataclass
class Inputs:
    episodes: list[Episode] = field(default_factory=list)
    as_data: list[Path] = field(default_factory=list)
    """Trace paths that turned out to be data snapshots."""
    result: IngestResult = field(default_factory=IngestResult)
    """Counts and rejections of the trace paths (those read as data left out)."""


class NothingToLearn(UserError, ValueError):
    """No episode with tool calls to learn from; the message says why (the CLI exits 1), and
    ``inputs`` holds what was read and rejected."""

    def __init__(self, message: str, inputs: Inputs) -> None:
        super().__init__(message)
        self.inputs = inputs

    def to_json(self) -> dict[str, object]:
        result = self.inputs.result
        return {
            "error": str(self),
            "episodes": result.episodes,
            "rejected": result.rejected,
            "rejections": [str(r) for r in result.rejections[:20]],
            "read_as_data": [str(p) for p in self.inputs.as_data],
        }


def read_traces(
    paths: Iterable[Path | str], tick: Callable[[str, int, int], None] | None = None
) -> Inputs:
    inputs = Inputs()
    total = inputs.result
    for raw in paths:
        path = Path(raw)
        part = IngestResult()
        episodes = []
        for episode in iter_episodes([path], result=part):
            episodes.append(episode)
            if tick is not None and (len(inputs.episodes) + len(episodes)) % 500 == 0:
                tick("read", len(inputs.episodes) + len(episodes), 0)
        if not part.records_kept and _is_snapshot(path, part):
            inputs.as_data.append(path)
            continue
        if not part.records_read:
            what = (
                "no trace files (.json, .jsonl, .ndjson, .gz) in this folder"
                if path.is_dir()
                else "empty file"
            )
            part.records_read = part.rejected = 1
            part.rejections.append(Rejection(Location(str(path)), what))
        _merge(total, part)
        inputs.episodes.extend(episodes)
    return inputs


def _is_snapshot(path: Path, part: IngestResult) -> bool:
    """No file of ``path`` is in a trace format, and ``path`` loads as a non-empty snapshot."""
    if any(report.format is not None for report in part.files):
        return False
    try:
        tables = load_snapshots([path])
    except (SnapshotError, OSError, UnicodeDecodeError):
        return False
    return any(tables.values())


def _merge(total: IngestResult, part: IngestResult) -> None:
    total.episodes += part.episodes
    total.tool_calls += part.tool_calls
    total.records_read += part.records_read
    total.records_kept += part.records_kept
    total.rejected += part.rejected
    for name, count in part.formats.items():
        total.formats[name] = total.formats.get(name, 0) + count
    total.files.extend(part.files)
    total.rejections.extend(part.rejections[: max(0, _KEPT - len(total.rejections))])


def why_nothing(inputs: Inputs) -> str:
    """One line: why the trace paths gave nothing to learn from."""
    result = inputs.result
    parts = []
    if result.rejected:
        first = result.rejections[0] if result.rejections else "?"
        more = f" (and {result.rejected - 1} more)" if result.rejected > 1 else ""
        parts.append(f"{result.rejected} rejected: {first}{more}")
    if inputs.as_data:
        names = ", ".join(str(p) for p in inputs.as_data)
        parts.append(f"{names}: data snapshot, not traces")
    return "; ".join(parts) or "no trace paths given"
