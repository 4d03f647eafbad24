"""OpenEnv: openenv-core's own clients (GenericEnvClient, a typed EnvClient, MCPToolClient) play
whole episodes over /ws against a real server, reward included; its WebSocket messages, error
codes and HTTP simulation endpoints follow its types; and `openenv validate --url` passes every
criterion against `simforge serve` of a hand-written scenario and of a synthesized pack."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient
from pydantic import ConfigDict, Field

from simforge.serve.sessions import Limits

from .conftest import ACME, AUTH, MINI, TOKEN, free_port

pytestmark = pytest.mark.anyio
GET_C3 = {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0003"}}]}
UPGRADE_C3 = {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]}


class SimforgeAction(Action):
    """A typed action: tool calls, a message to the user, or a final answer."""

    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    message: str | None = None
    final_answer: str | None = None


class SimforgeObservation(Observation):
    model_config = ConfigDict(extra="allow")


class SimforgeClient(EnvClient[SimforgeAction, SimforgeObservation, State]):
    """A typed client: the action and the observation are pydantic models, reward and done
    typed fields."""

    def _step_payload(self, action: SimforgeAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude_defaults=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SimforgeObservation]:
        obs = SimforgeObservation(
            **payload["observation"], reward=payload.get("reward"), done=payload["done"]
        )
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload["done"])

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def authed(url: str) -> str:
    return url.replace("http://", f"http://trainer:{TOKEN}@")


async def test_typed_client_plays_an_episode_to_its_reward(live_server):
    live = live_server(MINI)
    async with SimforgeClient(base_url=authed(live.url)) as env:
        first = await env.reset(seed=1, task="upgrade")
        assert first.done is False
        assert first.observation.task["id"] == "upgrade"  # type: ignore[attr-defined]
        step = await env.step(SimforgeAction(tool_calls=GET_C3["tool_calls"]))
        assert step.done is False and step.reward == 0.0
        assert step.observation.results[0]["ok"] is True  # type: ignore[attr-defined]
        await env.step(SimforgeAction(tool_calls=UPGRADE_C3["tool_calls"]))
        final = await env.step(SimforgeAction(final_answer="C-0003 is now on the gold tier."))
        assert final.done is True
        assert isinstance(final.reward, float) and final.reward == 1.0
        assert final.observation.done is True and final.observation.reward == 1.0
        assert "verdicts" not in str(final.observation.model_dump())
        state = await env.state()
        assert state.step_count == 2  # tool-call steps; the final answer ends the episode
        assert state.episode_id
        sid = state.session_id  # type: ignore[attr-defined]
    assert sid not in live.app.state.manager.sessions  # the session goes with the connection


def test_generic_sync_client_plays_an_episode_to_its_reward(live_server):
    live = live_server(MINI)
    with GenericEnvClient(base_url=authed(live.url)).sync() as env:
        result = env.reset(seed=0, task="upgrade")
        assert "task" in result.observation and result.reward is None
        env.step(GET_C3)
        env.step(UPGRADE_C3)
        result = env.step({"final_answer": "C-0003 is now on the gold tier."})
        assert result.done is True and result.reward == 1.0
        assert result.observation["info"]["passed"] is True
        result = env.reset(seed=1, task="upgrade")  # the same connection, a new episode
        result = env.step({"final_answer": "nothing to do"})
        assert result.done is True and result.reward == 0.0


async def test_mcp_tool_client_plays_an_episode_with_tool_actions(live_server):
    """openenv's MCPToolClient: list_tools and call_tool are step actions over /ws; a call is a
    step of the episode, the message tool talks to the user, and the end carries the reward."""
    live = live_server(MINI)
    async with MCPToolClient(base_url=authed(live.url)) as env:
        await env.reset(seed=1, task="upgrade")
        tools = {t.name: t for t in await env.list_tools()}
        assert {"get_customer", "upgrade_customer", "message_user"} <= set(tools)
        assert tools["get_customer"].input_schema["required"] == ["customer_id"]
        customer = await env.call_tool("get_customer", customer_id="C-0003")
        assert customer["tier"] == "standard"
        missing = await env.call_tool("get_customer", customer_id="C-9999")
        assert missing["status"] == 404  # the service's own error: a result, not a failure
        with pytest.raises(RuntimeError, match="tool_not_found"):
            await env.call_tool("no_such_tool")
        step = await env.step(CallToolAction(tool_name="upgrade_customer",
                                             arguments={"customer_id": "C-0003"}))
        assert isinstance(step.observation, CallToolObservation)
        assert step.observation.result["data"]["tier"] == "gold"
        assert step.done is False and step.reward == 0.0
        final = await env.step(CallToolAction(
            tool_name="message_user", arguments={"content": "C-0003 is now on the gold tier."}))
        assert final.observation.result["data"] == {"user": None, "ended": True}
        assert final.done is True and final.reward == 1.0
        state = await env.state()
        assert state.step_count == 4  # get, get, upgrade, message


async def test_ws_mcp_messages_answer_json_rpc(live_server):
    live = live_server(MINI)
    async with GenericEnvClient(base_url=authed(live.url)) as env:
        await env.reset(task="upgrade")
        listed = await env._send_and_receive(
            {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}})
        assert listed["type"] == "mcp" and listed["data"]["id"] == 1
        assert "message_user" in {t["name"] for t in listed["data"]["result"]["tools"]}
        called = await env._send_and_receive({"type": "mcp", "data": {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_customer", "arguments": {"customer_id": "C-0003"}}}})
        assert called["data"]["result"]["structuredContent"]["id"] == "C-0003"
        bad = await env._send_and_receive({"type": "mcp", "data": {}})
        assert bad["data"]["error"]["code"] == -32600
        created = await env._send_and_receive({"type": "mcp", "data": {
            "jsonrpc": "2.0", "id": 3, "method": "openenv/session/create"}})
        state = await env.state()
        assert created["data"]["result"]["session_id"] == state["session_id"]  # its own
        closing = await env._send_and_receive({"type": "mcp", "data": {
            "jsonrpc": "2.0", "id": 4, "method": "openenv/session/close",
            "params": {"session_id": state["session_id"]}}})
        assert closing["data"]["error"]["code"] == -32600
        assert (await env.step({"final_answer": "x"})).done is True  # still there


async def test_a_requested_episode_id_is_kept(live_server):
    live = live_server(MINI)
    async with GenericEnvClient(base_url=authed(live.url)) as env:
        await env.reset(episode_id="ep-1")
        assert (await env.state())["episode_id"] == "ep-1"
        first = await env.reset()
        fresh = (await env.state())["episode_id"]
        assert fresh not in ("ep-1", "") and first.observation["episode_id"] == fresh
        await env.reset()
        assert (await env.state())["episode_id"] != fresh  # every reset, a new episode
        await env.reset(episode_id="ep-2", seed=4)
        state = await env.state()
        assert (state["episode_id"], state["seed"]) == ("ep-2", 4)


async def test_a_reset_offers_the_tools_of_its_episode(live_server):
    """The task's catalog is serialised once and reused by every reset that offers it as it
    is; an episode whose surface faults rename or add tools offers its own. On one connection
    a catalog (or policy) already received comes by reference (its id) and the agent keeps the
    one it has: what it holds after each reset is what the episode offers."""
    live = live_server(ACME)
    sessions = live.app.state.manager.sessions
    seen = []
    by_ref = 0
    known: dict[str, Any] = {}  # what the agent keeps: tools and policies by id
    async with GenericEnvClient(base_url=authed(live.url)) as env:
        for seed, faults in [(0, "none"), (1, "none"), *[(s, "tool-drift") for s in range(6)]]:
            obs = (await env.reset(seed=seed, faults=faults)).observation
            served = sessions[obs["session_id"]]
            offered = served.env.offered_tools()
            for key in ("tools", "policy"):
                ref = obs.get(f"{key}_id")
                if key in obs:
                    if ref is not None:
                        known[ref] = obs[key]
                else:
                    by_ref += 1
                    assert ref in known, (seed, faults, key)
            tools = obs["tools"] if "tools" in obs else known[obs["tools_id"]]
            policy = obs["policy"] if "policy" in obs else known[obs["policy_id"]]
            assert tools == offered, (seed, faults)
            assert policy == served.env.initial_observation()["policy"]
            seen.append(json.dumps(offered))
    assert seen[0] == seen[1] and len(set(seen)) > 1  # some drift episode offers other tools
    assert by_ref >= 2  # the second reset's tools and policy at least came by reference


async def test_each_connection_gets_the_catalog_in_full_once(live_server):
    """A second reset on a connection carries the tools and the policy by id only; a new
    connection gets them in full on its first reset; HTTP /reset always answers them in
    full (it has no connection to remember them by)."""
    live = live_server(MINI)
    first: list[dict[str, Any]] = []
    for _ in range(2):
        async with GenericEnvClient(base_url=authed(live.url)) as env:
            one = (await env.reset(seed=0, task="upgrade")).observation
            two = (await env.reset(seed=1, task="upgrade")).observation
            await env.step(GET_C3)  # the episode plays as before
        assert one["tools"] and isinstance(one["policy"], str)
        assert "tools" not in two and "policy" not in two
        assert (two["tools_id"], two["policy_id"]) == (one["tools_id"], one["policy_id"])
        first.append(one)
    assert first[0]["tools"] == first[1]["tools"] and first[0]["tools_id"] == first[1]["tools_id"]
    with httpx.Client(base_url=live.url, headers=AUTH) as http:
        for seed in (0, 1):
            obs = http.post("/reset", json={"seed": seed, "task": "upgrade"}).json()["observation"]
            assert obs["tools"] == first[0]["tools"] and obs["tools_id"] == first[0]["tools_id"]
            assert obs["policy"] == first[0]["policy"]


@pytest.mark.parametrize("enabled", [False, True])
async def test_ws_compression_is_negotiated_only_when_asked(live_server, enabled):
    """`simforge serve` declines permessage-deflate unless `--ws-compression`; the client
    (websockets, which OpenEnv's client uses, offers it) works either way."""
    from websockets.asyncio.client import connect

    live = live_server(MINI, ws_compression=enabled)
    url = live.url.replace("http://", "ws://") + "/ws"
    async with connect(url, additional_headers=AUTH) as ws:
        agreed = ws.response.headers.get("Sec-WebSocket-Extensions") or ""
        assert ("permessage-deflate" in agreed) is enabled
        await ws.send(json.dumps({"type": "reset", "data": {"task": "upgrade"}}))
        reply = json.loads(await ws.recv())
        assert reply["type"] == "observation" and reply["data"]["observation"]["tools"]


async def _raw(env: GenericEnvClient, message: str) -> dict[str, Any]:
    await env._ensure_connected()
    assert env._ws is not None
    await env._ws.send(message)
    return await env._receive()


async def test_errors_carry_openenvs_codes(live_server):
    live = live_server(MINI)
    async with GenericEnvClient(base_url=authed(live.url)) as env:
        await env.reset()

        async def code(message: Any) -> str:
            raw = message if isinstance(message, str) else json.dumps(message)
            answer = await _raw(env, raw)
            assert answer["type"] == "error", answer
            return str(answer["data"]["code"])

        assert await code("{not json") == "INVALID_JSON"
        assert await code({"type": "jump"}) == "UNKNOWN_TYPE"
        assert await code({"data": {}}) == "UNKNOWN_TYPE"
        assert await code([1, 2]) == "VALIDATION_ERROR"
        assert await code({"type": "step", "data": {"tool_calls": "not a list"}}) == (
            "VALIDATION_ERROR")
        assert await code({"type": "step"}) == "VALIDATION_ERROR"  # data is required
        assert await code({"type": "step", "data": [1]}) == "VALIDATION_ERROR"
        assert await code({"type": "state", "extra": 1}) == "VALIDATION_ERROR"
        assert await code({"type": "reset", "data": {"seed": -3}}) == "VALIDATION_ERROR"
        assert await code({"type": "reset", "data": {"seed": 2**64}}) == "VALIDATION_ERROR"
        assert await code("[" * 200 + "]" * 200) == "INVALID_JSON"  # deeper than MAX_DEPTH
        assert await code({"type": "reset", "data": {"taks": "upgrade"}}) == "VALIDATION_ERROR"
        assert await code({"type": "reset", "data": {"task": "no-such"}}) == "VALIDATION_ERROR"
        assert await code({"type": "step", "data": {"type": "teleport"}}) == "VALIDATION_ERROR"
        assert await code({"type": "step", "data": {"type": "call_tool", "tool_name": 3}}) == (
            "VALIDATION_ERROR")
        assert await code({"type": "step", "data": {"type": "call_tool", "tool_name": "x",
                                                    "arguments": [1]}}) == "VALIDATION_ERROR"
        with pytest.raises(RuntimeError, match=r"\(code: VALIDATION_ERROR\)"):
            await env.step({"tool_calls": "not a list"})
        assert (await env.step({"final_answer": "still alive"})).done is True
        assert await code({"type": "step", "data": {"final_answer": "again"}}) == (
            "EXECUTION_ERROR")  # a valid step the ended episode cannot take
        sid = (await env.state())["session_id"]
        with httpx.Client(base_url=live.url) as c:
            assert c.delete(f"/sessions/{sid}", headers=AUTH).status_code == 204
        assert await code({"type": "state"}) == "SESSION_ERROR"


async def test_a_full_server_answers_capacity_reached(live_server):
    live = live_server(MINI, limits=Limits(max_sessions=2))  # the default session and one more
    async with GenericEnvClient(base_url=authed(live.url)) as first:
        await first.reset()
        second = GenericEnvClient(base_url=authed(live.url))
        await second.connect()  # accepted, then told why it cannot have a session, and closed
        answer = await second._receive()
        assert answer["type"] == "error" and answer["data"]["code"] == "CAPACITY_REACHED"
        assert answer["data"]["status"] == 503
        await second.close()


async def test_ws_without_the_token_is_refused(live_server):
    live = live_server(MINI)
    client = GenericEnvClient(base_url=live.url)
    with pytest.raises(ConnectionError):
        await client.connect()


def test_http_simulation_endpoints_play_episodes(live_server):
    live = live_server(MINI)
    with httpx.Client(base_url=live.url, headers=AUTH) as c:
        assert httpx.post(f"{live.url}/reset", json={}).status_code == 401
        assert httpx.post(f"{live.url}/step", json={"action": {}}).status_code == 401
        assert httpx.get(f"{live.url}/state").status_code == 401
        assert c.post("/step", json={"action": GET_C3}).status_code == 404  # no episode yet
        r = c.post("/reset", json={"seed": 1, "task": "upgrade"})
        assert r.status_code == 200, r.text
        assert set(r.json()) == {"observation", "reward", "done"}
        assert r.json()["reward"] is None and r.json()["done"] is False
        current = r.json()["observation"]["episode_id"]
        step = c.post("/step", json={"action": GET_C3}).json()
        assert step["reward"] == 0.0 and step["observation"]["results"][0]["ok"] is True
        listed = c.post("/step", json={"action": {"type": "list_tools"}}).json()
        assert "upgrade_customer" in {t["name"] for t in listed["observation"]["tools"]}
        # a second episode beside it, named by its id
        other = c.post("/reset", json={"episode_id": "mine", "task": "upgrade", "seed": 2})
        assert other.json()["observation"]["episode_id"] == "mine"
        again = c.post("/step", json={"action": UPGRADE_C3, "episode_id": "mine",
                                      "request_id": "r1"}).json()
        replay = c.post("/step", json={"action": UPGRADE_C3, "episode_id": "mine",
                                       "request_id": "r1"}).json()
        assert again == replay  # the same request id: the first answer, not a second step
        final = c.post("/step", json={"action": {"final_answer": "C-0003 is now gold."},
                                      "episode_id": "mine"}).json()
        assert final["done"] is True and final["reward"] == 1.0
        state = c.get("/state", params={"episode_id": "mine"}).json()
        assert (state["episode_id"], state["step_count"], state["terminated"]) == (
            "mine", 1, True)
        mine_session = state["session_id"]
        # the id-less episode was untouched by all that
        state = c.get("/state").json()
        assert (state["episode_id"], state["step_count"]) == (current, 1)
        # a reset naming a live episode resets its session in place
        r = c.post("/reset", json={"episode_id": "mine"})
        assert r.json()["observation"]["session_id"] == mine_session
        assert c.get("/state", params={"episode_id": "nope"}).status_code == 404
        bad = c.post("/reset", json={"sed": 1})
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"].endswith("sed")
        bad = c.post("/step", json={"action": {"tool_calls": "no"}})
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_action"


def test_http_steps_hold_the_conversation(live_server):
    """The conversation contract on OpenEnv's HTTP endpoints: a message step, the user's reply
    in the observation (the message tool, as call_tool, the same)."""
    dialogue = str(Path(MINI).with_name("mini_dialogue.yaml"))
    live = live_server(dialogue)
    with httpx.Client(base_url=live.url, headers=AUTH) as c:
        c.post("/reset", json={"task": "ask-id", "seed": 0})
        r = c.post("/step", json={"action": {"message": "Which customer id is yours?"}}).json()
        assert r["observation"]["user"] == "My customer id is C-0003." and r["done"] is False
        c.post("/step", json={"action": UPGRADE_C3})
        r = c.post("/step", json={"action": {
            "type": "call_tool", "tool_name": "message_user",
            "arguments": {"content": "Done: C-0003 is on the gold tier."}}}).json()
        assert r["observation"]["result"]["data"] == {"user": None, "ended": True}
        assert r["done"] is True and r["reward"] == 1.0


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
        assert {"done", "reward", "metadata"} <= set(schema["observation"]["properties"])
        assert {"episode_id", "step_count"} <= set(schema["state"]["properties"])
        spec = c.get("/openapi.json").json()
        assert spec["info"]["version"] == "1.0.0"
        assert {"/reset", "/step", "/state"} <= set(spec["paths"])


# -- openenv validate, against a real `simforge serve` -------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
OPENENV_CLI = Path(sys.executable).parent / "openenv"


@contextlib.contextmanager
def simforge_serve(target: str) -> Iterator[str]:
    """``simforge serve TARGET`` in a subprocess on 127.0.0.1; its URL once /health answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simforge.cli", "serve", target, "--port", str(port),
         "--time-scale", "0", "--token", TOKEN],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"simforge serve exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("simforge serve did not answer /health in 90 s")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def openenv_validate(url: str) -> dict[str, Any]:
    if not OPENENV_CLI.exists():
        pytest.skip("openenv-core's CLI is not installed")
    done = subprocess.run([str(OPENENV_CLI), "validate", "--url", url, "--timeout", "20"],
                          capture_output=True, text=True, timeout=180)
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    return report


CRITERIA = {"openapi_version_available", "health_endpoint", "metadata_endpoint",
            "schema_endpoint", "mcp_endpoint", "mode_endpoint_consistency"}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("synth") / "pack"
    done = subprocess.run(
        [sys.executable, "-m", "simforge.cli", "synth", "examples/traces/acme-otlp.json",
         "--out", str(out)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return str(out)


@pytest.mark.parametrize("which", ["hand-written scenario", "synthesized pack"])
def test_openenv_validate_passes_every_criterion(which: str, request: pytest.FixtureRequest):
    target = ACME if which == "hand-written scenario" else request.getfixturevalue("synthesized")
    with simforge_serve(target) as url:
        report = openenv_validate(url)
    assert report["passed"] is True
    assert report["standard_version"] == "1.0.0"
    assert report["standard_profile"] == "openenv-http/1.x"
    assert report["mode"] == "simulation"
    assert {c["id"] for c in report["criteria"]} == CRITERIA
    assert all(c["passed"] for c in report["criteria"]), report["criteria"]
    assert report["summary"]["failed_criteria"] == []


def test_an_episode_id_is_a_uuid4_hex_as_before():
    import uuid

    from simforge.serve.sessions import new_episode_id

    ids = {new_episode_id() for _ in range(500)}
    assert len(ids) == 500
    for h in ids:
        parsed = uuid.UUID(hex=h)
        assert parsed.hex == h and parsed.version == 4 and parsed.variant == uuid.RFC_4122
