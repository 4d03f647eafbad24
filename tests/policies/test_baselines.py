"""The scripted baselines of the runs layer: replay, random, no-retry and retrying."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import simforge
from simforge.policies import get_policy
from simforge.policies.base import PolicyBase, act_async
from simforge.policies.baselines import (
    NoRetryPolicy,
    RandomPolicy,
    ReplayPolicy,
    RetryingPolicy,
    replay_actions,
)
from simforge.runs.episode import aplay_episode, play_episode
from simforge.runs.specs import POLICIES, build_policy

MINI = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "mini.yaml")
RATE_LIMITED = """\
name: rate-limited
description: One call per ten seconds per tool.
rules:
  - id: bucket
    fault: {kind: rate_limit, burst: 1, per_second: 0.1, scope: session}
"""


@pytest.fixture
def env():
    return simforge.make(MINI)


def test_every_baseline_is_registered_by_name():
    assert {"replay", "random", "no-retry", "retrying", "llm", "harness"} <= set(POLICIES)
    assert isinstance(get_policy("random"), RandomPolicy)
    assert isinstance(build_policy("retrying"), RetryingPolicy)
    with pytest.raises(ValueError, match="needs a source"):
        get_policy("replay")
    with pytest.raises(simforge.config.NotFound, match="takes no argument"):
        build_policy("oracle:x")


def test_replay_plays_a_trajectory_back_to_the_same_episode(env):
    source = play_episode(env, get_policy("oracle"), seed=1, task="upgrade")
    actions = replay_actions(source.trajectory)
    assert [sorted(a) for a in actions] == [["tool_calls"], ["tool_calls"], ["final_answer"]]
    again = play_episode(env, ReplayPolicy([source.trajectory]), seed=1, task="upgrade")
    assert again.result.reward == source.result.reward == 1.0
    assert again.trajectory.model_dump(exclude={"simulation": {"policy"}}) == \
        source.trajectory.model_dump(exclude={"simulation": {"policy"}})


def test_replay_picks_the_source_episode_of_the_task(env):
    sources = [play_episode(env, get_policy("oracle"), seed=0, task=t).trajectory
               for t in ("upgrade", "note")]
    replay = ReplayPolicy(sources)
    assert play_episode(env, replay, seed=0, task="note").result.reward == 1.0
    assert play_episode(env, replay, seed=0, task="upgrade").result.reward == 1.0


def test_replay_follows_a_synthesized_task_to_its_source_episode(env):
    """A task synthesized from traces is named ``epNNNNN-...``; its source is in its metadata."""
    source = play_episode(env, get_policy("oracle"), seed=0, task="upgrade").trajectory
    source = source.model_copy(update={"id": "trace-17", "simulation": None,
                                       "task": source.task.model_copy(update={"id": "17"})})
    other = source.model_copy(update={"id": "trace-18"})
    replay = ReplayPolicy([other, source])
    task = env.scenario.task("upgrade").model_copy(
        update={"id": "ep00001-17", "metadata": {"episode_id": "trace-17"}})
    assert replay.pick("ep00001-17", 0, episode_id="trace-17") is source
    replay.reset({"task": {"id": "ep00001-17"}}, task=task, seed=0)
    assert replay.act({}) == replay_actions(source)[0]
    with pytest.raises(ValueError, match="no source episode for task 'ep00001-17'"):
        replay.pick("ep00001-17", 0, episode_id="trace-99")


def test_a_one_episode_source_is_replayed_only_for_its_own_task(env):
    source = play_episode(env, get_policy("oracle"), seed=0, task="upgrade").trajectory
    replay = ReplayPolicy([source])
    assert play_episode(env, replay, seed=3, task="upgrade").result.reward == 1.0
    with pytest.raises(ValueError, match=r"no source episode for task 'note'.*\['upgrade'\]"):
        play_episode(env, replay, seed=0, task="note")
    # a bare conversation (no task named anywhere) is the one exception: played for every task
    bare = source.model_copy(update={"simulation": None,
                                     "task": source.task.model_copy(update={"id": None})})
    assert ReplayPolicy([bare]).pick("note", 0) is bare


def test_random_calls_are_schema_valid_and_seeded(env):
    jsonschema = pytest.importorskip("jsonschema")
    obs, _ = env.reset(seed=0, options={"task": "upgrade"})
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in obs["tools"]}
    runs = []
    for _ in range(2):
        policy = RandomPolicy()
        policy.reset(obs, seed=42)
        actions = [policy.act({"results": []}) for _ in range(6)]
        runs.append(actions)
        for action in actions:
            for call in action.get("tool_calls", []):
                jsonschema.validate(call["arguments"], schemas[call["name"]])
    assert runs[0] == runs[1]
    assert runs[0][-1] == {"final_answer": "I could not complete the request."}
    other = RandomPolicy()
    other.reset(obs, seed=43)
    assert [other.act({"results": []}) for _ in range(6)] != runs[0]


def test_no_retry_gives_up_at_the_first_error():
    policy = NoRetryPolicy()
    env = simforge.make(MINI)
    obs, _ = env.reset(seed=0, options={"task": "upgrade"})
    policy.reset(obs, task=env.task, seed=0)
    assert "tool_calls" in policy.act(obs)
    failed = {"results": [{"call_id": "c1", "name": "get_customer", "ok": False,
                           "error": {"status": 503, "code": "unavailable", "message": "x"}}]}
    assert "final_answer" in policy.act(failed)
    assert "final_answer" in policy.act({"results": []})


def test_retrying_waits_at_least_retry_after(env, tmp_path):
    profile = tmp_path / "rate-limited.yaml"
    profile.write_text(RATE_LIMITED)
    outcome = play_episode(env, RetryingPolicy(), seed=0, task="upgrade", faults=str(profile))
    calls = outcome.trajectory.tool_calls
    limited = [c for c in calls if c.metadata.get("error", {}).get("status") == 429]
    assert limited, "the profile should rate-limit the second call"
    for failed in limited:
        retry = next(c for c in calls if c.tool == failed.tool and c.started_at > failed.started_at)
        wait = failed.metadata["error"]["retry_after"]
        assert retry.started_at - failed.ended_at >= wait - 1e-6
    assert outcome.result.reward == 1.0


def test_retrying_backoff_grows_and_is_capped():
    policy = RetryingPolicy(base=1.0, cap=8.0)
    policy._rng.seed(0)
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    for attempt, ceiling in enumerate(ceilings, start=1):
        assert 0.0 <= policy.backoff(attempt, None) <= ceiling
    assert policy.backoff(1, 30.0) == 30.0


def test_a_synchronous_policy_runs_in_the_async_loop(env):
    class Echo(PolicyBase):
        name = "echo"

        def act(self, observation):
            return {"final_answer": "done"}

    assert asyncio.run(act_async(Echo(), {})) == {"final_answer": "done"}
    assert asyncio.run(Echo().aact({})) == {"final_answer": "done"}
    outcome = asyncio.run(aplay_episode(env, get_policy("oracle"), seed=0, task="upgrade"))
    assert outcome.result.reward == 1.0
