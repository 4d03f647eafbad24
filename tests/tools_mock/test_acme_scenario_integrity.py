"""Every shipped Acme scenario pays nothing for the known exploits, is deterministic for a seed,
and stays solvable under each fault profile it declares (by the careful, retrying oracle)."""

from __future__ import annotations

from pathlib import Path

import pytest

import simforge.env as simenv
from simforge.policies import get_policy
from simforge.runs.episode import run_episode
from simforge.scenario.loader import load_scenario

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "acme").glob("*.yaml"))
TASKS = [
    pytest.param(path, task.id, id=f"{path.stem}:{task.id}")
    for path in SCENARIOS
    for task in load_scenario(path).tasks
]
PROFILES = [
    pytest.param(path, profile, id=f"{path.stem}:{profile}")
    for path in SCENARIOS
    for profile in load_scenario(path).faults.profiles
    if profile != "none"
]

FIRST_PACK = {  # shipped with the first pack, before the 3-to-20-calls rule
    "acme/refund-damaged-order-v1",
    "acme/cancel-paid-order-v1",
    "acme/escalate-ticket-by-email-v1",
    "acme/large-refund-approval-v1",
}

try:
    from simforge.policies.cheater import STRATEGIES, CheaterPolicy
except ImportError:  # the cheater baseline is not part of every checkout yet
    STRATEGIES, CheaterPolicy = (), None  # type: ignore[assignment]


def test_there_are_thirty_scenarios_over_many_systems() -> None:
    scenarios = [load_scenario(p) for p in SCENARIOS]
    assert len(scenarios) >= 30
    tags = {t for s in scenarios for t in s.tags}
    assert {"multi-system", "single-system", "multi-turn"} <= tags
    assert any(task.user_turns for s in scenarios for task in s.tasks)
    for scenario in scenarios:
        if scenario.id in FIRST_PACK:
            continue
        calls = [sum(len(step.calls) for step in task.oracle) for task in scenario.tasks]
        assert 3 <= max(calls) <= 20, scenario.id


@pytest.mark.skipif(CheaterPolicy is None, reason="the cheater policy is not available")
@pytest.mark.parametrize(("path", "task"), TASKS)
def test_the_cheater_earns_nothing(path: Path, task: str) -> None:
    env = simenv.make(str(path))
    for seed, strategy in enumerate(STRATEGIES):
        result = run_episode(env, CheaterPolicy(strategy), seed=seed, task=task)
        assert result.reward == 0.0, (strategy, result.failed, result.invalid_reason)


@pytest.mark.parametrize(("path", "task"), TASKS)
def test_an_episode_is_deterministic_for_a_seed(path: Path, task: str) -> None:
    dumps = []
    for _ in range(2):
        env = simenv.make(str(path))
        run_episode(env, get_policy("oracle"), seed=1, task=task, faults="flaky-network")
        dumps.append(env.trajectory().model_dump_json())
    assert dumps[0] == dumps[1]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "profile"), PROFILES)
def test_a_careful_agent_still_solves_it_under_its_fault_profiles(path: Path, profile: str) -> None:
    env = simenv.make(str(path))
    scenario = load_scenario(path)
    for task in scenario.tasks:
        for seed in scenario.seeds:
            result = run_episode(
                env, get_policy("retrying"), seed=seed, task=task.id, faults=profile
            )
            assert result.reward == 1.0, (task.id, seed, result.failed)
