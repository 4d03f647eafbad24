"""OpenEnv: openenv-core's own clients reset and step a simforge session over /ws, with reward
and done in typed fields."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Observation, State
from openenv.core.generic_client import GenericEnvClient
from pydantic import ConfigDict

from .conftest import MINI, TOKEN

pytestmark = pytest.mark.anyio


class SimforgeObservation(Observation):
    model_config = ConfigDict(extra="allow")


class SimforgeClient(EnvClient[dict[str, Any], SimforgeObservation, State]):
    """A typed client: the observation is a pydantic model, reward and done typed fields."""

    def _step_payload(self, action: dict[str, Any]) -> dict[str, Any]:
        return action

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SimforgeObservation]:
        obs = SimforgeObservation(
            **payload["observation"], reward=payload.get("reward"), done=payload["done"]
        )
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload["done"])

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def authed(url: str) -> str:
    return url.replace("http://", f"http://trainer:{TOKEN}@")


async def test_openenv_client_resets_and_steps_to_a_reward(live_server):
    live = live_server(MINI)
    async with SimforgeClient(base_url=authed(live.url)) as env:
        first = await env.reset(seed=1, task="upgrade")
        assert first.done is False
        assert first.observation.task["id"] == "upgrade"  # type: ignore[attr-defined]
        step = await env.step(
            {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0003"}}]}
        )
        assert step.done is False and step.reward == 0.0
        assert step.observation.results[0]["ok"] is True  # type: ignore[attr-defined]
        await env.step(
            {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]}
        )
        final = await env.step({"final_answer": "C-0003 is now on the gold tier."})
        assert final.done is True
        assert isinstance(final.reward, float) and final.reward == 1.0
        assert final.observation.done is True and final.observation.reward == 1.0
        assert "verdicts" not in str(final.observation.model_dump())
        state = await env.state()
        assert state.step_count == 2  # tool-call steps; the final answer ends the episode
        sid = state.episode_id
    assert sid not in live.app.state.manager.sessions  # the session goes with the connection


def test_generic_sync_client_works_too(live_server):
    live = live_server(MINI)
    with GenericEnvClient(base_url=authed(live.url)).sync() as env:
        result = env.reset()
        assert "task" in result.observation
        result = env.step({"final_answer": "nothing to do"})
        assert result.done is True
        assert result.reward == 0.0


async def test_ws_without_the_token_is_refused(live_server):
    live = live_server(MINI)
    client = GenericEnvClient(base_url=live.url)
    with pytest.raises(ConnectionError):
        await client.connect()


async def test_bad_messages_are_error_messages_not_crashes(live_server):
    live = live_server(MINI)
    async with GenericEnvClient(base_url=authed(live.url)) as env:
        await env.reset()
        with pytest.raises(RuntimeError, match="Server error"):
            await env.step({"tool_calls": "not a list"})
        with pytest.raises(RuntimeError, match="Server error"):
            await env.reset(seed=-3)
        result = await env.step({"final_answer": "still alive"})
        assert result.done is True


def test_discovery_endpoints(live_server):
    live = live_server(MINI)
    with httpx.Client(base_url=live.url) as c:
        assert c.get("/health").json() == {"status": "healthy"}
        assert c.get("/metadata").json()["name"] == "mini/upgrade-v1"
        schema = c.get("/schema").json()
        assert set(schema) == {"action", "observation", "state"}
        own, list_tools, call_tool = schema["action"]["anyOf"]
        assert "tool_calls" in own["properties"]
        assert list_tools["properties"]["type"] == {"const": "list_tools"}
        assert call_tool["required"] == ["type", "tool_name"]
