"""What a validator may look at: the trajectory, the final world and the task's ground truth.

Validators see an Episode and a World, never the kernel, so a production trace replayed into a
world is scored exactly like a simulated run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simforge.scenario.model import Task
from simforge.trace.episode import Episode
from simforge.world.store import World


@dataclass(frozen=True)
class ScoringContext:
    trajectory: Episode
    world: World
    task: Task
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def final_answer(self) -> str:
        sim = self.trajectory.simulation
        return (sim.final_answer if sim else None) or ""
