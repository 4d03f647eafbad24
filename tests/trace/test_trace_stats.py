"""Per-tool statistics: quantiles, errors, and what counts as parallel."""

from __future__ import annotations

import pytest

from simforge.trace.episode import Episode, Source, ToolCall
from simforge.trace.stats import ToolStats, quantile


def _call(cid: str, tool: str = "t", **kw: object) -> ToolCall:
    return ToolCall(call_id=cid, tool=tool, **kw)  # type: ignore[arg-type]


def test_quantiles_interpolate_linearly() -> None:
    assert quantile([], 0.5) is None
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile(list(map(float, range(101))), 0.99) == pytest.approx(99.0)


def test_calls_in_one_message_or_overlapping_in_time_are_parallel() -> None:
    episode = Episode(id="e", source=Source(format="x"), tool_calls=[
        _call("a", message_index=1), _call("b", message_index=1), _call("c", message_index=3),
        _call("d", "u", started_at=0.0, ended_at=1.0, error="boom"),
        _call("e", "u", started_at=0.5, ended_at=2.0),
        _call("f", "u", started_at=2.0, ended_at=3.0),
    ])
    stats = ToolStats()
    stats.add(episode)
    assert stats.tools["t"].parallel == 2
    assert stats.tools["u"].parallel == 2
    assert stats.tools["u"].errors == 1
    assert stats.max_parallel == 2
    assert stats.by_tool()["u"] == {"calls": 3, "errors": 1, "p50_ms": 1000.0,
                                    "p95_ms": 1450.0, "p99_ms": 1490.0}
    assert stats.by_tool()["t"]["p50_ms"] is None
