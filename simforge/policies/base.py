"""Policies: whatever acts in an episode. ``reset`` sees the first observation; ``act`` maps an
observation to an action. Scripted baselines that need ground truth (the oracle) say so with
``privileged = True`` and are handed the task by the runner; nothing else ever sees it."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from simforge.scenario.model import Task


@runtime_checkable
class Policy(Protocol):
    name: ClassVar[str]
    privileged: ClassVar[bool]

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None: ...

    def act(self, observation: dict[str, Any]) -> Any: ...
