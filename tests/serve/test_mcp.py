"""MCP at /mcp (streamable HTTP), through the official mcp client."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from .conftest import AUTH, MINI, mcp_client

pytestmark = pytest.mark.anyio


async def test_lists_the_session_tools_with_their_schemas(live_server):
    live = live_server(MINI)
    catalog = live.app.state.manager.loaded.pack.catalog
    async with Client(f"{live.url}/mcp") as client:
        listed = await client.list_tools()
    by_name = {t.name: t for t in listed.tools}
    # the session's tools, and the agent's channel to the user
    assert set(by_name) == {*catalog, "message_user"}
    assert by_name["message_user"].input_schema["required"] == ["content"]
    for name, tool in catalog.items():
        assert by_name[name].input_schema == tool.spec.input_schema
        assert by_name[name].description == tool.spec.description
        assert by_name[name].annotations.read_only_hint == (tool.spec.kind == "read")


async def test_calls_a_tool_and_the_write_lands_in_the_session(live_server):
    live = live_server(MINI)
    async with Client(f"{live.url}/mcp") as client:
        result = await client.call_tool("upgrade_customer", {"customer_id": "C-0004"})
        assert result.is_error is False
        assert result.structured_content["tier"] == "gold"
        again = await client.call_tool("get_customer", {"customer_id": "C-0004"})
        assert json.loads(again.content[0].text)["tier"] == "gold"


async def test_errors_are_error_results_naming_the_argument(live_server):
    live = live_server(MINI)
    async with Client(f"{live.url}/mcp") as client:
        bad = await client.call_tool("get_customer", {"customer_id": 5})
        assert bad.is_error is True
        body = json.loads(bad.content[0].text)
        assert body["status"] == 422 and body["errors"][0]["field"] == "body.customer_id"
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error is True


async def test_a_session_is_chosen_by_path_prefix(live_server):
    import httpx

    live = live_server(MINI)
    with httpx.Client(base_url=live.url) as c:
        created = c.post("/sessions", json={"session_id": "m", "insecure_id": True}, headers=AUTH)
        assert created.status_code == 201
    tools = {"Authorization": f"Bearer {created.json()['tool_token']}"}
    # without the session's tool token, MCP is closed to the session: HTTP 401
    stranger = httpx.post(f"{live.url}/s/m/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                        "method": "tools/list"})
    assert stranger.status_code == 401
    async with mcp_client(f"{live.url}/s/m/mcp", tools) as client:
        await client.call_tool("create_note", {"customer_id": "C-0001", "text": "via mcp"})
    with httpx.Client(base_url=live.url) as c:
        mine = c.post("/s/m/tools/list_notes", json={}, headers=tools).json()["items"]
        default = c.post("/tools/list_notes", json={}).json()["items"]
    assert [n["text"] for n in mine] == ["via mcp"]
    assert default == []
