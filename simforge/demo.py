"""The demo: the whole pipeline on the shipped examples, in one place.

Every registered scenario x task, each with the (retrying) oracle, the no-op and the cheater,
under no faults and under a fault profile the scenario declares solvable, paired by seed,
scored (the table shows each reward and the names of the validators that failed). Later stages
of the pipeline (ingestion, synthesis) join here so that the demo stays the one place where all
of it is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table

from simforge.config import NotFound
from simforge.env.core import SimforgeEnv
from simforge.policies import get_policy
from simforge.runs import run_episode
from simforge.scenario import ScenarioRegistry, default_registry

POLICIES = ("retrying", "noop", "cheater")
"""The oracle plays the reference solution as a careful client would (retrying transient
errors), so that its faulty column shows whether the task is solvable under the profile."""
"""The reference solution, the floor, and the reward hacker (which must earn 0 everywhere)."""


def demo_profiles(declared: list[str]) -> list[str]:
    """``none`` and the first profile the scenario declares solvable (flaky-network if none)."""
    faulty = [p for p in declared if p != "none"]
    return ["none", faulty[0] if faulty else "flaky-network"]


def run_demo(
    seeds: list[int] | None = None,
    *,
    registry: ScenarioRegistry = default_registry,
    advance: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    loaded = registry.all()
    if not loaded:
        raise NotFound("no scenarios found (is the scenarios/ folder present?)")
    plan = [
        (item, task.id, policy, profile, seed)
        for item in loaded
        for task in item.scenario.tasks
        for policy in POLICIES
        for profile in demo_profiles(item.scenario.faults.profiles)
        for seed in (seeds if seeds is not None else item.scenario.seeds[:1])
    ]
    if advance is not None:
        advance(-len(plan))
    envs: dict[str, SimforgeEnv] = {}
    episodes = []
    for item, task_id, policy, profile, seed in plan:
        env = envs.setdefault(item.scenario.id, SimforgeEnv(item))
        result = run_episode(env, get_policy(policy), seed=seed, task=task_id, faults=profile)
        episodes.append(result.to_dict())
        if advance is not None:
            advance(1)
    return episodes


def demo_table(episodes: list[dict[str, Any]]) -> Table:
    """One row per (scenario, task, policy, seed); the clean run and the faulty run side by side."""
    rows: dict[tuple[str, str, str, int], dict[str, dict[str, Any]]] = {}
    for e in episodes:
        rows.setdefault((e["scenario"], e["task"], e["policy"], e["seed"]), {})[e["faults"]] = e
    table = Table(
        title="simforge demo: scenario x task x policy, without and with faults",
        title_justify="left",
    )
    for col, justify in [
        ("scenario", "left"),
        ("task", "left"),
        ("policy", "left"),
        ("seed", "right"),
        ("steps", "right"),
        ("sim time", "right"),
        ("reward (none)", "right"),
        ("faults", "left"),
        ("reward (faults)", "right"),
        ("failed validators", "left"),
    ]:
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for (scenario, task, policy, seed), by_profile in rows.items():
        clean = by_profile.get("none")
        faulty = next((e for p, e in by_profile.items() if p != "none"), None)
        failed = sorted({f for e in by_profile.values() for f in e["failed"]})
        table.add_row(
            scenario,
            task,
            policy,
            str(seed),
            str(clean["steps"]) if clean else "",
            f"{clean['sim_time']:.1f} s" if clean else "",
            _reward(clean),
            f"{faulty['faults']} ({len(faulty['faults_injected'])} fired)" if faulty else "",
            _reward(faulty),
            ", ".join(failed),
        )
    return table


def _reward(e: dict[str, Any] | None) -> str:
    if e is None:
        return ""
    if e["reward"] is None:
        return "[yellow]invalid[/]"
    color = "green" if e["reward"] >= 0.999 else "red"
    return f"[{color}]{e['reward']:.2f}[/]"
