"""What a validator may look at: the trajectory, the final world and the task's ground truth.

Validators see an Episode and a World, never the kernel, so a production trace replayed into a
world is scored exactly like a simulated run. Two things a few validators need are optional:
``tools`` (the pack's catalog, to replay reference actions and to tell reads from writes) and
``budgets`` (the scenario's steps and simulated seconds, for ``efficiency``). When a caller does
not hand them over, :meth:`ScoringContext.catalog` and :meth:`ScoringContext.scenario_budgets`
find them through the scenario registry by the trajectory's scenario id.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from simforge.scenario.model import Task
from simforge.trace.episode import Episode, ToolCall
from simforge.world.store import World

if TYPE_CHECKING:
    from simforge.tools.tool import Tool


@dataclass(frozen=True)
class ScoringContext:
    trajectory: Episode
    world: World
    task: Task
    settings: dict[str, Any] = field(default_factory=dict)
    tools: Mapping[str, Tool] | None = None
    budgets: Mapping[str, float | int | None] | None = None

    @property
    def final_answer(self) -> str:
        sim = self.trajectory.simulation
        return (sim.final_answer if sim else None) or ""

    def catalog(self) -> Mapping[str, Tool] | None:
        """The pack's tools: given by the caller, or the registered scenario's pack."""
        if self.tools is not None:
            return self.tools
        loaded = self._loaded
        return loaded.pack.catalog if loaded is not None else None

    def scenario_budgets(self) -> Mapping[str, float | int | None]:
        """``{max_steps, max_sim_seconds}``: given, from ``settings["budgets"]``, or the
        registered scenario's; empty when none is known."""
        if self.budgets is not None:
            return self.budgets
        if isinstance(self.settings.get("budgets"), Mapping):
            given: Mapping[str, float | int | None] = self.settings["budgets"]
            return given
        loaded = self._loaded
        return loaded.scenario.budgets.model_dump() if loaded is not None else {}

    def is_write(self, tool: str) -> bool:
        """Whether ``tool`` writes: from the catalog (a tool outside it wrote nothing), else
        guessed from a read-like name."""
        tools = self.catalog()
        if tools is not None:
            return tool in tools and tools[tool].spec.kind == "write"
        return not tool.startswith(("get_", "list_", "search_", "find_", "read_", "lookup_"))

    @cached_property
    def by_tool(self) -> dict[str, list[tuple[int, ToolCall]]]:
        """The trajectory's calls by tool name, each with its position (built once: the
        validators that look for calls of some tools then touch only those)."""
        out: dict[str, list[tuple[int, ToolCall]]] = {}
        for i, call in enumerate(self.trajectory.tool_calls):
            out.setdefault(call.tool, []).append((i, call))
        return out

    def calls_of(self, pattern: str) -> list[tuple[int, ToolCall]]:
        """``(position, call)`` for the calls whose tool matches the glob ``pattern``, in
        trajectory order; the glob is matched against the distinct tool names only."""
        cache = self._patterns
        found = cache.get(pattern)
        if found is None:
            by_tool = self.by_tool
            if pattern in by_tool and not any(c in pattern for c in "*?["):
                found = by_tool[pattern]
            else:
                names = [n for n in by_tool if fnmatch.fnmatchcase(n, pattern)]
                found = sorted((pair for n in names for pair in by_tool[n]),
                               key=lambda pair: pair[0]) if len(names) > 1 else (
                    by_tool[names[0]] if names else [])
            cache[pattern] = found
        return found

    @cached_property
    def _patterns(self) -> dict[str, list[tuple[int, ToolCall]]]:
        return {}

    @cached_property
    def _loaded(self) -> Any:
        sim = self.trajectory.simulation
        if sim is None:
            return None
        from simforge.scenario.registry import default_registry

        try:
            return default_registry.get(sim.scenario)
        except Exception:  # a fallback only: an unregistered scenario has no catalog to offer
            return None
