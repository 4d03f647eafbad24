"""MCP at /mcp (streamable HTTP), through the official mcp client."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from .conftest import AUTH, MINI, devices_pack, mcp_client

pytestmark = pytest.mark.anyio
ACME_PACK = str(Path(__file__).resolve().parents[2] / "tools_mock" / "acme")


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


def _mcp_error(group: BaseException) -> Any:
    """The MCPError inside what the client raises (its task groups wrap it)."""
    from mcp.shared.exceptions import MCPError

    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    assert isinstance(group, MCPError), repr(group)
    return group


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_sees_each_tools_annotations(live_server, mode):
    live = live_server(ACME_PACK)  # the whole pack: every tool of Acme's 16 systems
    async with Client(f"{live.url}/mcp", mode=mode) as client:
        listed = {t.name: t.annotations for t in (await client.list_tools()).tools}
    get = listed["get_customer"]
    assert (get.read_only_hint, get.open_world_hint) == (True, False)
    refund = listed["refund_order"]  # moves money on an existing order: not additive, not a no-op
    assert (refund.read_only_hint, refund.destructive_hint, refund.idempotent_hint) == (
        False, True, False)
    ticket = listed["create_ticket"]  # a new record only
    assert (ticket.destructive_hint, ticket.idempotent_hint) == (False, False)
    cancel = listed["cancel_order"]  # a state: cancelling twice changes nothing more
    assert (cancel.destructive_hint, cancel.idempotent_hint) == (True, True)
    assert listed["send_external_email"].open_world_hint is True  # leaves the company
    assert listed["send_internal_email"].open_world_hint is False
    assert listed["post_public_message"].open_world_hint is True
    message = listed["message_user"]
    assert (message.read_only_hint, message.destructive_hint) == (False, False)
    for name, hints in listed.items():
        assert hints is not None and hints.read_only_hint is not None, name
        if not hints.read_only_hint:
            assert hints.destructive_hint is not None and hints.idempotent_hint is not None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_session_is_a_json_rpc_error_without_a_traceback(
    live_server, mode, caplog
):
    live = live_server(MINI)
    caplog.set_level(logging.INFO)
    with pytest.raises(BaseException) as raised:
        async with Client(f"{live.url}/s/nope/mcp", mode=mode) as client:
            await client.list_tools()
    error = _mcp_error(raised.value)
    assert error.error.code == -32602
    assert "no session 'nope'" in error.error.message
    assert error.error.data == {"session_id": "nope"}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def test_reserved_and_taken_names_never_collide(live_server):
    """OpenEnv's reserved names (reset, step, state, close) and the message tool's name, taken
    by a pack's own tools: each pack tool is listed under a name of its own, and calls it."""
    live = live_server(devices_pack())
    async with Client(f"{live.url}/mcp") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert sorted(names) == sorted(
            ["reset_tool_", "state_tool", "reset_tool", "message_user", "simforge_message_user"])
        assert not set(names) & {"reset", "step", "state", "close"}
        reset = await client.call_tool("reset_tool_", {"device": "d1"})
        assert reset.structured_content == {"device": "d1", "reset": True}
        toolbox = await client.call_tool("reset_tool", {"device": "d1"})
        assert toolbox.structured_content == {"device": "d1", "toolbox": "reset"}
        paged = await client.call_tool("message_user", {"text": "hi"})
        assert paged.structured_content == {"paged": "hi"}
        state = await client.call_tool("state_tool", {"device": "d1"})
        assert state.structured_content["state"] == "on"
        reserved = await client.call_tool("reset", {"device": "d1"})
        assert reserved.is_error is True  # not a listed name
    with httpx.Client(base_url=live.url) as c:  # REST keeps the pack's names
        assert c.post("/tools/reset", json={"device": "d2"}).json()["reset"] is True
