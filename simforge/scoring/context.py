"""What a validator may look at: the trajectory, the final world and the task's ground truth.

Validators see an Episode and a World, never the kernel, so a production trace replayed into a
world is scored exactly like a simulated run. Two things a few validators need are optional:
``tools`` (the pack's catalog, to replay reference actions and to tell reads from writes) and
``budgets`` (the scenario's steps and simulated seconds, for ``efficiency``). The caller hands
them over (the environment does); the scorer never looks them up in a process-global registry,
so two scenarios of the same id from different folders score each by its own. ``plugins`` is the
registry the scenario was loaded with, so two scenarios with different validator plugins do
too. Without a catalog, reads are told from writes by their names (``get_``,
``list_``, ``search_``, ...), and a validator that cannot work without one says so.

A context also indexes what validators look up, each built once, the first time one asks: the
calls by tool (with their positions, so a validator that looks for calls of some tools touches
only those), the failed calls, the calls whose metadata carries an error, the injected faults by
call, the world's changes by entity, whether a tool writes. A validator that walks all of the
trajectory, or loops over calls inside a loop over calls, costs what a long episode makes of it:
a 1,000-call episode would spend more on scoring than on being played.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from simforge.plugins import PLUGINS, Plugins
from simforge.scenario.model import Task
from simforge.trace.episode import EntityChange, Episode, InjectedFault, ToolCall
from simforge.world.store import World

T = TypeVar("T")
Positioned = list[tuple[int, ToolCall]]
"""``(position in the trajectory, call)`` pairs, in trajectory order."""

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
    plugins: Plugins = PLUGINS
    """Where validators, invariants and policy checks are looked up: the registry the
    scenario was loaded with (the process's default unless the caller says otherwise)."""

    @property
    def final_answer(self) -> str:
        sim = self.trajectory.simulation
        return (sim.final_answer if sim else None) or ""

    def catalog(self) -> Mapping[str, Tool] | None:
        """The pack's tools, as the caller gave them (``None`` when it did not)."""
        return self.tools

    def scenario_budgets(self) -> Mapping[str, float | int | None]:
        """``{max_steps, max_sim_seconds}``: given, or from ``settings["budgets"]``; empty when
        neither is."""
        if self.budgets is not None:
            return self.budgets
        if isinstance(self.settings.get("budgets"), Mapping):
            given: Mapping[str, float | int | None] = self.settings["budgets"]
            return given
        return {}

    def is_write(self, tool: str) -> bool:
        """Whether ``tool`` writes: from the catalog (a tool outside it wrote nothing), else
        guessed from a read-like name (decided once per tool name)."""
        known = self._writes.get(tool)
        if known is None:
            tools = self.catalog()
            if tools is not None:
                known = tool in tools and tools[tool].spec.kind == "write"
            else:
                known = not tool.startswith(
                    ("get_", "list_", "search_", "find_", "read_", "lookup_"))
            self._writes[tool] = known
        return known

    @cached_property
    def _writes(self) -> dict[str, bool]:
        return {}

    @cached_property
    def _calls(self) -> tuple[dict[str, Positioned], Positioned, list[tuple[int, ToolCall, Any]]]:
        """One walk over the calls: by tool, the failed ones, those whose metadata names an
        error (its value, whatever it is)."""
        by_tool: dict[str, Positioned] = {}
        failed: Positioned = []
        errors: list[tuple[int, ToolCall, Any]] = []
        for i, call in enumerate(self.trajectory.tool_calls):
            pair = (i, call)
            found = by_tool.get(call.tool)
            if found is None:
                by_tool[call.tool] = [pair]
            else:
                found.append(pair)
            if call.error is not None:
                failed.append(pair)
            if call.metadata:
                error = call.metadata.get("error")
                if error:
                    errors.append((i, call, error))
        return by_tool, failed, errors

    @property
    def by_tool(self) -> dict[str, Positioned]:
        """The trajectory's calls by tool name, each with its position, tools in the order
        of their first call."""
        return self._calls[0]

    @property
    def failed_calls(self) -> Positioned:
        """The calls that failed (``error`` set), with their positions."""
        return self._calls[1]

    @property
    def error_calls(self) -> list[tuple[int, ToolCall, Any]]:
        """``(position, call, metadata["error"])`` for the calls whose metadata names an error
        (a simulated call's status, code and message)."""
        return self._calls[2]

    def calls_of(self, pattern: str) -> Positioned:
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
                if len(names) == len(by_tool) and len(names) > 1:  # every call, e.g. "*"
                    found = list(enumerate(self.trajectory.tool_calls))
                elif len(names) > 1:
                    found = sorted(pair for n in names for pair in by_tool[n])
                else:
                    found = by_tool[names[0]] if names else []
            cache[pattern] = found
        return found

    def calls_matching(self, patterns: list[str]) -> Positioned:
        """The calls whose tool matches any of the globs, each once, in trajectory order."""
        if len(patterns) == 1:
            return self.calls_of(patterns[0])
        seen: dict[int, ToolCall] = {}
        for pattern in patterns:
            for pos, call in self.calls_of(pattern):
                seen[pos] = call
        return sorted(seen.items())

    @cached_property
    def _patterns(self) -> dict[str, Positioned]:
        return {}

    @cached_property
    def faults_by_call(self) -> dict[str, list[InjectedFault]]:
        """The injected faults by the id of the call they hit (faults on no call left out)."""
        sim = self.trajectory.simulation
        out: dict[str, list[InjectedFault]] = {}
        for fault in sim.faults if sim else []:
            if fault.call_id is not None:
                out.setdefault(fault.call_id, []).append(fault)
        return out

    @cached_property
    def changes_by_entity(self) -> dict[str, list[EntityChange]]:
        """The world's changes (``simulation.world_diff``) by entity, in the diff's order."""
        sim = self.trajectory.simulation
        out: dict[str, list[EntityChange]] = {}
        for change in sim.world_diff if sim else []:
            out.setdefault(change.entity, []).append(change)
        return out

    def derived(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, once per context and ``key``: for a plugin's rule that every call
        asks the same thing of the episode (the customers its task names), so that it is
        worked out once rather than per call."""
        memo = self._derived
        if key not in memo:
            memo[key] = compute()
        value: T = memo[key]
        return value

    @cached_property
    def _derived(self) -> dict[str, Any]:
        return {}
