"""Per-tool statistics over a stream of episodes: calls, errors, latency quantiles, parallelism.

Latencies are kept as compact ``array('d')`` buffers (8 bytes a call) so that exact quantiles
stay affordable for millions of calls; the episodes themselves are not kept.

A call counts as *parallel* when another call was issued in the same message (same
``message_index``) or, for traces without messages (OTLP, LangSmith), when its time interval
overlaps another call's.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from simforge.quantiles import quantile, quantiles
from simforge.trace.episode import Episode, ToolCall

__all__ = ["QUANTILES", "ToolStat", "ToolStats", "quantile"]

QUANTILES = (0.5, 0.95, 0.99)
"""The latency quantiles ``simforge ingest`` prints per tool (:mod:`simforge.quantiles`)."""


@dataclass
class ToolStat:
    calls: int = 0
    errors: int = 0
    parallel: int = 0
    latencies_ms: array[float] = field(default_factory=lambda: array("d"))

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    def quantiles(self) -> dict[str, float | None]:
        values = quantiles(self.latencies_ms, QUANTILES)
        return {
            f"p{round(q * 100)}_ms": None if values is None else round(values[i], 3)
            for i, q in enumerate(QUANTILES)
        }


@dataclass
class ToolStats:
    """Accumulates statistics episode by episode."""

    tools: dict[str, ToolStat] = field(default_factory=lambda: defaultdict(ToolStat))
    episodes: int = 0
    calls: int = 0
    max_parallel: int = 1

    def add(self, episode: Episode) -> None:
        self.episodes += 1
        calls = episode.tool_calls
        self.calls += len(calls)
        parallel = self._parallel_ids(calls)
        tools = self.tools
        for call in calls:
            stat = tools[call.tool]
            stat.calls += 1
            if call.error is not None:
                stat.errors += 1
            if call.call_id in parallel:
                stat.parallel += 1
            if call.started_at is not None and call.ended_at is not None:
                duration = call.ended_at - call.started_at
                if duration >= 0:
                    stat.latencies_ms.append(duration * 1000.0)

    def add_all(self, episodes: Iterable[Episode]) -> ToolStats:
        for episode in episodes:
            self.add(episode)
        return self

    def _parallel_ids(self, calls: list[ToolCall]) -> set[str]:
        if len(calls) < 2:
            return set()
        batch_sizes: dict[int, int] = {}
        timed: list[ToolCall] = []
        indexed = 0
        for call in calls:
            index = call.message_index
            if index is not None:
                batch_sizes[index] = batch_sizes.get(index, 0) + 1
                indexed += 1
            elif call.started_at is not None and call.ended_at is not None:
                timed.append(call)
        out: set[str] = set()
        if len(batch_sizes) < indexed:  # some message issued more than one call
            out.update(c.call_id for c in calls
                       if c.message_index is not None and batch_sizes[c.message_index] > 1)
            self.max_parallel = max(self.max_parallel, max(batch_sizes.values()))
        if not timed:
            return out
        timed.sort(key=lambda c: c.started_at or 0.0)
        active: list[ToolCall] = []
        for call in timed:
            active = [a for a in active if (a.ended_at or 0.0) > (call.started_at or 0.0)]
            if active:
                out.add(call.call_id)
                out.update(a.call_id for a in active)
                self.max_parallel = max(self.max_parallel, len(active) + 1)
            active.append(call)
        return out

    def by_tool(self) -> dict[str, dict[str, float | int | None]]:
        """The ``by_tool`` object of ``simforge ingest --json``, tools by descending calls."""
        ordered = sorted(self.tools.items(), key=lambda kv: (-kv[1].calls, kv[0]))
        return {
            name: {"calls": stat.calls, "errors": stat.errors, **stat.quantiles()}
            for name, stat in ordered
        }
