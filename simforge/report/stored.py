"""A stored run as the reports read it."""

from __future__ import annotations

from typing import Any


def load_run(store: Any, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]],
                                              dict[str, str], dict[str, Any]]:
    """``(run, episodes, trajectories, summary)`` of a stored run; the trajectories are those of
    episodes with a failed verdict (the evidence's calls and the HTML's trajectory views)."""
    from simforge.report.metrics import summarize

    run = store.run(run_id)
    episodes = store.episodes(run_id)
    failing = [e["key"] for e in episodes if any(not v["passed"] for v in e["verdicts"])]
    trajectories = store.trajectories_of(run_id, failing) if failing else {}
    return run, episodes, trajectories, summarize(episodes, run_id=run_id,
                                                  trajectories=trajectories)
