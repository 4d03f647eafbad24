"""The Gymnasium adapter as vector envs and wrappers use it: copies rebuilt from the scenario
reference (pickle, deepcopy, mid-episode), Gymnasium's Sync and Async vector envs (fork, spawn,
forkserver), and malformed actions answered as observations instead of raised."""

from __future__ import annotations

import copy
import functools
import json
import pickle
from pathlib import Path

import gymnasium
import pytest

import simforge
from simforge.env.gym import PackRef, SimforgeGymEnv, scenario_reference

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
MINI_PACK = str(FIXTURES / "packs" / "mini")


def call(name: str, **arguments) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


GET = call("get_customer", customer_id="C-0003")
UPGRADE = call("upgrade_customer", customer_id="C-0003")
ANSWER = "C-0003 is now on the gold tier."


# -- malformed actions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "says"),
    [
        ('{"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": ', "not valid JSON"),
        ('{"tool_calls": 3}', "malformed"),
        ('{"tool_calls": [{"arguments": {}}]}', "name"),
        ('{"banana": 1}', "action"),
        ('[{"name": "get_customer"}, 7]', "tool_calls.1"),
        (42, "expected a string"),
        (None, "expected a string"),
    ],
)
def test_a_malformed_action_is_an_observation_and_the_episode_goes_on(action, says):
    env = SimforgeGymEnv(MINI, task="upgrade")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    seen = json.loads(obs)
    assert says in seen["error"]
    assert seen["results"] == [] and seen["step"] == 1
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["malformed_actions"] == 1 and info["action_error"] == seen["error"]
    # the agent lost a turn, nothing else: the task can still be solved in full
    for good in (GET, UPGRADE):
        obs, reward, terminated, truncated, info = env.step(good)
        assert json.loads(obs)["results"][0]["ok"] is True
        assert "error" not in json.loads(obs) and info["malformed_actions"] == 1
    obs, reward, terminated, truncated, info = env.step(ANSWER)
    assert terminated and reward == 1.0
    kinds = [m.metadata for m in env.env.trajectory().messages if m.role == "assistant"]
    assert {"malformed_action": seen["error"]} in kinds  # recorded with the turn it cost


def test_malformed_actions_use_up_the_budget_like_any_turn():
    env = SimforgeGymEnv(MINI, task="upgrade")  # max_steps: 6
    env.reset(seed=0)
    for n in range(1, 7):
        obs, reward, terminated, truncated, info = env.step("{oops")
        assert info["malformed_actions"] == n
    assert truncated and not terminated and reward == 0.0
    assert info["truncation_reason"] == "max_steps" and info["score"]["reward"] == 0.0
    assert env.reset(seed=1)[1]["malformed_actions"] == 0  # counted per episode


def test_plain_text_is_still_a_message_and_json_strings_are_text():
    env = SimforgeGymEnv(MINI, task="upgrade")
    env.reset(seed=0)
    env.step(GET)
    env.step(UPGRADE)
    obs, reward, terminated, truncated, info = env.step(json.dumps(ANSWER))  # a bare JSON string
    assert terminated and reward == 1.0 and info["malformed_actions"] == 0


# -- copies -----------------------------------------------------------------------------------


def rest_of_episode(env: SimforgeGymEnv) -> list:
    return [env.step(a)[:4] for a in (UPGRADE, ANSWER)]


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copy_mid_episode_is_in_the_same_state_and_independent(how):
    env = SimforgeGymEnv(MINI, task="upgrade")
    env.reset(seed=3)
    env.step("{not json")
    env.step(GET)
    twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert twin is not env and twin.env is not env.env
    assert twin.render_mode == env.render_mode and twin._malformed == 1
    assert twin.np_random.bit_generator.state == env.np_random.bit_generator.state
    mine = rest_of_episode(env)
    assert mine[-1][1] == 1.0
    assert rest_of_episode(twin) == mine  # same observations, rewards and flags
    # the copy's world is its own: the original's upgrade did not happen in it beforehand
    assert twin.env.session is not env.env.session


def test_copies_before_reset_and_of_envs_made_elsewhere():
    fresh = pickle.loads(pickle.dumps(SimforgeGymEnv(MINI)))
    assert json.loads(fresh.reset(seed=1)[0])["task"]["id"] == "upgrade"
    made = SimforgeGymEnv(simforge.make("acme/refund-damaged-order-v1"))
    assert scenario_reference(made.env.loaded) == "acme/refund-damaged-order-v1"
    assert copy.deepcopy(made).reset(seed=0)[0] == made.reset(seed=0)[0]
    from simforge.scenario import load_pack

    sandbox = SimforgeGymEnv(load_pack(MINI_PACK))
    twin = pickle.loads(pickle.dumps(sandbox))
    assert isinstance(twin._ref, PackRef) and Path(twin._ref.path).name == "mini"
    assert twin.reset(seed=0)[0] == sandbox.reset(seed=0)[0]


def test_gymnasium_make_envs_copy_too():
    env = gymnasium.make("acme/refund-damaged-order-v1", split="train")
    env.reset(seed=0)
    twin = copy.deepcopy(env)
    assert twin.unwrapped.env.task.id == env.unwrapped.env.task.id
    assert twin.spec == env.spec


# -- vector envs ------------------------------------------------------------------------------


def play_vector(vec) -> None:
    obs, info = vec.reset(seed=[0, 0])
    assert [json.loads(o)["task"]["id"] for o in obs] == ["upgrade", "upgrade"]
    obs, reward, terminated, truncated, info = vec.step([GET, "{broken"])
    first, second = (json.loads(o) for o in obs)
    assert first["results"][0]["ok"] is True and "error" in second
    assert list(info["malformed_actions"]) == [0, 1]
    obs, reward, terminated, truncated, info = vec.step([UPGRADE, GET])
    obs, reward, terminated, truncated, info = vec.step([ANSWER, "I could not do it."])
    assert list(terminated) == [True, True]
    assert list(reward) == [1.0, 0.0]


def test_sync_vector_env():
    envs = gymnasium.vector.SyncVectorEnv(
        [functools.partial(SimforgeGymEnv, MINI, task="upgrade")] * 2
    )
    try:
        play_vector(envs)
    finally:
        envs.close()


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_async_vector_env(context):
    envs = gymnasium.vector.AsyncVectorEnv(
        [functools.partial(SimforgeGymEnv, MINI, task="upgrade")] * 2,
        context=context,
        shared_memory=False,
    )
    try:
        play_vector(envs)
    finally:
        envs.close()


def test_async_vector_env_over_a_copied_env():
    """An env made in this process and handed to the workers (pickled, as with spawn)."""
    env = SimforgeGymEnv(MINI, task="upgrade")
    envs = gymnasium.vector.AsyncVectorEnv(
        [lambda: copy.deepcopy(env)] * 2, context="spawn", shared_memory=False
    )
    try:
        play_vector(envs)
    finally:
        envs.close()


def test_shared_memory_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="shared_memory=False") as caught:
        gymnasium.vector.AsyncVectorEnv(
            [functools.partial(SimforgeGymEnv, MINI)] * 2, context="fork"
        )
    assert "Text" in str(caught.value.__cause__)


def test_a_pool_of_scenarios_copies_too():
    env = SimforgeGymEnv([MINI, str(FIXTURES / "scenarios" / "mini_dialogue.yaml")])
    obs, info = env.reset(seed=2)
    twin = pickle.loads(pickle.dumps(env))
    assert twin.env.tasks == env.env.tasks
    assert json.loads(twin.step("Hello?")[0]) == json.loads(env.step("Hello?")[0])
