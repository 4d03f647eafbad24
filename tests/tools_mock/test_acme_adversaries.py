"""No shipped Acme task pays an adversary (``simforge.policies.adversaries``) for work it did not
do: on every task, each adversary earns at most what the no-op earns, and nothing at all where the
correct outcome changes nothing (the oracle's episode leaves the world as it was), since there a
refusal is the right outcome and must be paid only with evidence behind it.

The same bar as the audit's ``adversaries`` check, on seed 0 only and through the env API
(``simforge.make``, ``play_episode``), so that a task that lets a canned refusal, a parrot or a
stuffed answer through fails here before the audit runs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import simforge
from simforge.policies.adversaries import ADVERSARIES
from simforge.policies.scripted import NoopPolicy, OraclePolicy
from simforge.runs.episode import play_episode

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "acme").glob("*.yaml"))
SEED = 0
CASES = [
    pytest.param(name, path, id=f"{name}:{path.stem}") for name in ADVERSARIES for path in SCENARIOS
]


@cache
def _env(path: Path) -> simforge.SimforgeEnv:
    return simforge.make(str(path))


@cache
def _bar(path: Path, task_id: str) -> float:
    """The most an adversary may earn on the task: the no-op's reward, or 0 where the oracle's
    episode changes nothing."""
    env = _env(path)
    oracle = play_episode(env, OraclePolicy(), seed=SEED, task=task_id)
    assert oracle.result.reward == 1.0, (task_id, oracle.result.failed)
    simulation = oracle.trajectory.simulation
    assert simulation is not None
    if simulation.world_diff == []:
        return 0.0
    noop = play_episode(env, NoopPolicy(), seed=SEED, task=task_id)
    return noop.result.reward or 0.0


@pytest.mark.parametrize(("name", "path"), CASES)
def test_an_adversary_earns_no_more_than_doing_nothing(name: str, path: Path) -> None:
    env = _env(path)
    paid = []
    for task in env.scenario.tasks:
        bar = _bar(path, task.id)
        outcome = play_episode(env, ADVERSARIES[name](), seed=SEED, task=task.id)
        reward = outcome.result.reward or 0.0
        if reward > bar + 1e-9:
            paid.append(
                {"task": task.id, "reward": reward, "bar": bar, "failed": outcome.result.failed}
            )
    assert not paid, f"{name} is paid on {env.scenario.id}: {paid}"
