"""Efficiency: steps, calls and simulated time against the budgets. It only shapes the reward:
an agent that takes twice the steps it needs is worse, not wrong.

Budgets come from the params, else from the scenario (``ScoringContext.scenario_budgets``).
Using up to ``target`` of a budget costs nothing; beyond it the score falls linearly to 0 at the
budget itself, so a direct solution keeps the full reward and only waste is shaped away.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simforge.scoring.context import ScoringContext
from simforge.scoring.registry import validator
from simforge.scoring.verdict import Verdict


class EfficiencyParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: int | None = Field(None, ge=1)
    max_calls: int | None = Field(None, ge=1)
    max_sim_seconds: float | None = Field(None, gt=0)
    target: float = Field(0.5, gt=0, le=1)


@validator("efficiency", "efficiency", params=EfficiencyParams)
def efficiency(
    ctx: ScoringContext,
    max_steps: int | None = None,
    max_calls: int | None = None,
    max_sim_seconds: float | None = None,
    target: float = 0.5,
) -> Verdict:
    """Within every budget (not truncated by one); scored by how much of each was used.
    Evidence: per budget, what was ``used``, the ``budget`` and the ``score``."""
    sim = ctx.trajectory.simulation
    scenario = ctx.scenario_budgets()
    budgets = {
        "steps": max_steps or scenario.get("max_steps"),
        "calls": max_calls or scenario.get("max_calls"),
        "sim_seconds": max_sim_seconds or scenario.get("max_sim_seconds"),
    }
    used = {
        "steps": sim.steps if sim else len(ctx.trajectory.messages),
        "calls": len(ctx.trajectory.tool_calls),
        "sim_seconds": sim.sim_time if sim else 0.0,
    }
    parts: dict[str, dict[str, Any]] = {}
    for name, budget in budgets.items():
        if not budget:
            continue
        ratio = used[name] / float(budget)
        part = 1.0 if ratio <= target else max(0.0, (1.0 - ratio) / (1.0 - target))
        if target >= 1.0:
            part = 1.0 if ratio <= 1.0 else 0.0
        parts[name] = {"used": used[name], "budget": budget, "score": round(part, 6)}
    truncated = bool(sim and sim.truncated)
    score = (
        0.0
        if truncated
        else (sum(p["score"] for p in parts.values()) / len(parts) if parts else 1.0)
    )
    return Verdict(
        name="efficiency",
        category="efficiency",
        passed=not truncated and all(p["used"] <= p["budget"] for p in parts.values()),
        score=round(score, 6),
        evidence={"truncated": truncated, "budgets": parts},
    )
