"""One conversation contract on every served path: ``POST /s/{sid}/messages`` (REST), the
``message_user`` tool (MCP, through the official client) and a ``message`` step (control plane,
OpenEnv's own client): the user's reply comes back, and the conversation ends when the user ends
it, the agent's last message being the final answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from openenv.core.generic_client import GenericEnvClient

from .conftest import AUTH, TOKEN, asgi_client

pytestmark = pytest.mark.anyio
DIALOGUE = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
               / "mini_dialogue.yaml")
UPGRADE = {"customer_id": "C-0003"}


async def _session(client: Any, sid: str) -> dict[str, str]:
    r = await client.post("/sessions", json={"session_id": sid, "task": "ask-id", "seed": 0,
                                             "insecure_id": True}, headers=AUTH)
    assert r.status_code == 201, r.text
    obs = r.json()["observation"]
    assert obs["policy"].startswith("# Tiers") and obs["task"]["id"] == "ask-id"
    return {"Authorization": f"Bearer {r.json()['tool_token']}"}


async def test_rest_messages_answer_the_users_reply_then_end(make_app):
    app = make_app(DIALOGUE)
    async with asgi_client(app) as c:
        tools = await _session(c, "a")
        stranger = await c.post("/s/a/messages", json={"content": "Hello?"})
        assert stranger.status_code == 401  # the session's tool token, or nothing
        r = await c.post("/s/a/messages", json={"content": "Which customer id is yours?"},
                         headers=tools)
        assert r.status_code == 200, r.text
        assert r.json()["user"] == "My customer id is C-0003." and r.json()["ended"] is False
        r = await c.post("/s/a/tools/upgrade_customer", json=UPGRADE, headers=tools)
        assert r.status_code == 200
        # any content type: agents written with urllib send JSON labelled as a form
        r = await c.post("/s/a/messages", content=b'{"content": "Done: C-0003 is gold."}',
                         headers={"Content-Type": "application/x-www-form-urlencoded", **tools})
        assert r.json()["ended"] is True and r.json()["user"] is None
        score = (await c.get("/sessions/a/score", headers=AUTH)).json()
        assert score["reward"] == 1.0, score
        r = await c.post("/s/a/messages", json={"content": "Anything else?"}, headers=tools)
        assert r.status_code == 409 and r.json()["code"] == "episode_ended"
        tools = await _session(c, "b")
        bad = await c.post("/s/b/messages", json={"text": "hi"}, headers=tools)
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "body.content"
        assert (await c.post("/s/b/finish", json={"answer": "x"})).status_code == 401
        r = await c.post("/s/b/finish", json={"answer": "I cannot."}, headers=tools)
        assert r.json()["ended"] is True
        assert (await c.get("/sessions/b/score", headers=AUTH)).json()["reward"] == 0.0


async def test_mcp_agents_talk_to_the_user_with_message_user(live_server):
    live = live_server(DIALOGUE, task="ask-id")
    async with Client(f"{live.url}/mcp") as client:
        reply = await client.call_tool("message_user", {"content": "Which customer id?"})
        assert reply.is_error is False
        assert reply.structured_content == {"user": "My customer id is C-0003.", "ended": False}
        await client.call_tool("upgrade_customer", UPGRADE)
        reply = await client.call_tool("message_user", {"content": "Done: C-0003 is gold."})
        assert reply.structured_content == {"user": None, "ended": True}
        bad = await client.call_tool("message_user", {"content": 3})
        assert bad.is_error is True


async def test_openenv_steps_carry_messages_and_the_users_replies(live_server):
    live = live_server(DIALOGUE)
    url = live.url.replace("http://", f"http://trainer:{TOKEN}@")
    async with GenericEnvClient(base_url=url) as env:
        first = await env.reset(seed=0, task="ask-id")
        assert first.observation["policy"].startswith("# Tiers")
        step = await env.step({"message": "Which customer id is yours?"})
        assert step.observation["user"] == "My customer id is C-0003." and not step.done
        await env.step({"tool_calls": [{"name": "upgrade_customer", "arguments": UPGRADE}]})
        final = await env.step({"message": "Done: C-0003 is on the gold tier."})
        assert final.done is True and final.reward == 1.0
