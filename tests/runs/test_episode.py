"""One episode loop, two drivers: ``play_episode`` (plain calls) and ``aplay_episode`` (awaits)
play the same episode for the same policy and seeds, end an episode whose policy became
unavailable the same way, and hand a policy that drives whole episodes itself the same
arguments."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simforge
from simforge.errors import PolicyUnavailable
from simforge.policies import get_policy
from simforge.policies.base import PolicyBase
from simforge.runs.episode import (
    EpisodeDriver,
    EpisodeOutcome,
    aplay_episode,
    finish_outcome,
    play_episode,
    run_episode,
)

MINI = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "mini.yaml")


@pytest.fixture(scope="module")
def env():
    return simforge.make(MINI)


def _played(outcome: EpisodeOutcome) -> tuple[Any, ...]:
    calls = [(c.tool, c.args, c.result, c.error) for c in outcome.trajectory.tool_calls]
    return outcome.result.to_dict(), calls


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    policy=st.sampled_from(["oracle", "random", "retrying", "no-retry"]),
    seed=st.integers(0, 2**16),
    policy_seed=st.none() | st.integers(0, 2**16),
    task=st.sampled_from([None, "upgrade", "note"]),
)
def test_the_sync_and_async_drivers_play_the_same_episode(env, policy, seed, policy_seed, task):
    def play_sync() -> EpisodeOutcome:
        return play_episode(env, get_policy(policy), seed=seed, task=task,
                            policy_seed=policy_seed)

    def play_async() -> EpisodeOutcome:
        return asyncio.run(aplay_episode(env, get_policy(policy), seed=seed, task=task,
                                         policy_seed=policy_seed))

    assert _played(play_sync()) == _played(play_async())


class _Fails(PolicyBase):
    """Answers once, then its endpoint is gone."""

    name: ClassVar[str] = "fails"

    def reset(self, observation: dict[str, Any], *, task: Any = None, seed: int = 0) -> None:
        self.acts = 0

    def act(self, observation: dict[str, Any]) -> Any:
        self.acts += 1
        if self.acts > 1:
            raise PolicyUnavailable("the endpoint went away")
        return {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0003"}}]}


def test_a_policy_that_becomes_unavailable_ends_the_episode_as_invalid_in_both_drivers(env):
    for outcome in (
        play_episode(env, _Fails(), seed=0, task="upgrade"),
        asyncio.run(aplay_episode(env, _Fails(), seed=0, task="upgrade")),
    ):
        assert outcome.result.invalid_reason.endswith("policy unavailable: the endpoint went away")
        assert [c.tool for c in outcome.trajectory.tool_calls] == ["get_customer"]
        assert not outcome.result.passed


class _Driver(PolicyBase):
    """Plays whole episodes itself (as the harness does), recording what it was handed."""

    name: ClassVar[str] = "driver"

    def __init__(self) -> None:
        self.handed: list[dict[str, Any]] = []

    def play_episode(self, env, *, seed, task, faults, policy_seed) -> EpisodeOutcome:
        self.handed.append({"seed": seed, "task": task, "faults": faults,
                            "policy_seed": policy_seed})
        env.reset(seed=seed, options={"task": task, "faults": faults})
        _obs, _r, terminated, truncated, _ = env.step({"final_answer": "nothing done"})
        return finish_outcome(env, self.name, seed, terminated, truncated)


def test_a_driver_plays_its_own_episode_with_the_same_arguments_in_both_drivers():
    env = simforge.make(MINI, faults="none")
    driver = _Driver()
    assert isinstance(driver, EpisodeDriver)
    sync = play_episode(env, driver, seed=4, task="upgrade")
    async_ = asyncio.run(aplay_episode(env, driver, seed=4, task="upgrade"))
    # the environment's own profile applies when the call names none; policy_seed is the seed
    assert driver.handed == [{"seed": 4, "task": "upgrade", "faults": "none", "policy_seed": 4}] * 2
    assert sync.result.to_dict() == async_.result.to_dict()
    assert sync.result.policy == "driver" and sync.result.terminated


def test_run_episode_is_play_episode_s_summary(env):
    assert (run_episode(env, get_policy("oracle"), seed=2, task="upgrade").to_dict()
            == play_episode(env, get_policy("oracle"), seed=2, task="upgrade").result.to_dict())
