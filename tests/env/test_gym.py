"""The Gymnasium adapter: Gymnasium's own checker accepts it, and it plays like the env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from simforge.env.gym import SimforgeGymEnv

MINI = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "mini.yaml")


@pytest.mark.parametrize("scenario", [MINI, "acme/refund-damaged-order-v1"])
def test_gymnasiums_env_checker_passes(scenario):
    check_env(SimforgeGymEnv(scenario), skip_render_check=True)


def test_observations_and_actions_are_json_text():
    env = SimforgeGymEnv(MINI)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert json.loads(obs)["task"]["id"] == "upgrade"
    call = json.dumps(
        {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]}
    )
    obs, reward, terminated, truncated, info = env.step(call)
    assert json.loads(obs)["results"][0]["ok"] is True and reward == 0.0
    obs, reward, terminated, truncated, info = env.step("C-0003 is now on the gold tier.")
    assert terminated and reward == 1.0


def test_same_seed_same_observation():
    env = SimforgeGymEnv(MINI)
    assert env.reset(seed=5)[0] == env.reset(seed=5)[0]
