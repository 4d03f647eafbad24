"""Several scenarios as one environment: one pool of tasks for a trainer; and :func:`make`,
which gives an environment of one scenario or a pool of several.

``simforge.make(["acme/refund-damaged-order-v1", "synth/retail-v1"])`` gives a
:class:`TaskPool` with the API of :class:`~simforge.env.core.SimforgeEnv`. Its tasks are named
``scenario#task``; a reset without a task samples one with the reset seed, each block of ``n``
consecutive seeds visiting all ``n`` tasks of the pool once (as a single scenario does), and
``options={"task": "scenario#task"}`` picks one. Every scenario keeps its own pack, tools,
policy, faults and validators; the pool only chooses which of them the next episode plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simforge.config import NotFound
from simforge.env.core import SimforgeEnv, Split, sample_task
from simforge.errors import NotReady, UsageError
from simforge.scenario.registry import default_registry
from simforge.users.base import User

SEPARATOR = "#"


class TaskPool:
    """The tasks of several scenarios; one episode at a time, in the scenario it belongs to."""

    def __init__(
        self,
        scenarios: Sequence[str],
        *,
        faults: str | None = None,
        split: Split | None = None,
        user: User | str | None = None,
        strict_tools: bool = False,
    ) -> None:
        if not scenarios:
            raise UsageError("make([]): a task pool needs at least one scenario")
        self.envs: dict[str, SimforgeEnv] = {}
        for ref in scenarios:
            env = SimforgeEnv(default_registry.get(ref), faults=faults, split=split, user=user,
                              strict_tools=strict_tools)
            if env.scenario.id in self.envs:
                raise UsageError(f"make([...]): scenario {env.scenario.id!r} is given twice")
            self.envs[env.scenario.id] = env
        self._tasks = [
            f"{sid}{SEPARATOR}{task}" for sid, env in self.envs.items() for task in env.tasks
        ]
        self._next_seed = 0
        self.current: SimforgeEnv | None = None

    @property
    def tasks(self) -> list[str]:
        """Every task of the pool, as ``scenario#task``."""
        return list(self._tasks)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        options = dict(options or {})
        if seed is None:
            seed = self._next_seed
        self._next_seed = seed + 1
        name = options.pop("task", None) or sample_task(self._tasks, seed)
        scenario, sep, task = str(name).partition(SEPARATOR)
        if not sep or scenario not in self.envs:
            raise NotFound(
                f"task {name!r}: expected 'scenario#task' of this pool; scenarios: "
                f"{sorted(self.envs)}"
            )
        self.current = self.envs[scenario]
        obs, info = self.current.reset(seed=seed, options={**options, "task": task})
        obs["task"]["scenario"] = scenario
        return obs, info

    def _env(self) -> SimforgeEnv:
        if self.current is None:
            raise NotReady("call reset() before step()")
        return self.current

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        return self._env().step(action)

    async def astep(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        return await self._env().astep(action)

    def __getattr__(self, name: str) -> Any:
        # the current episode's env answers the rest: trajectory(), score(), session, task ...
        if name in ("envs", "current", "_tasks", "_next_seed"):
            raise AttributeError(name)
        return getattr(self._env(), name)

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.current = None


def make(
    scenario_id: str | Sequence[str],
    *,
    task: str | None = None,
    faults: str | None = None,
    split: Split | None = None,
    user: User | str | None = None,
    strict_tools: bool = False,
) -> Any:
    """The environment of a registered scenario (``domain/name-vN``) or a scenario YAML path,
    optionally under a fault profile (a built-in name, the scenario's own, or a YAML path).
    Given a list of scenarios, one environment over all their tasks
    (:class:`~simforge.env.pool.TaskPool`)."""
    if not isinstance(scenario_id, str):
        if task is not None:
            raise UsageError("make([...]): a pool samples its tasks; pass reset(options=...)")
        return TaskPool(list(scenario_id), faults=faults, split=split, user=user,
                        strict_tools=strict_tools)
    return SimforgeEnv(
        default_registry.get(scenario_id), task=task, faults=faults, split=split, user=user,
        strict_tools=strict_tools,
    )
