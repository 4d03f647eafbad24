"""The hand-written JSON-RPC handler at /mcp against the official SDK: the same answer (status
and body) as the SDK's own server over the same sessions, in both protocol eras; call results
that survive the SDK's per-version serializer unchanged; and what it answers beyond MCP
(OpenEnv's plain JSON-RPC, its session methods, bad envelopes)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp_types import methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from simforge.serve.mcp_server import SESSION_SCOPE_KEY, call_result, sdk_manager

from .conftest import AUTH, MINI, TOKEN

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
INIT = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def legacy(method: str, params: dict[str, Any] | None = None, version: str | None = "2025-11-25",
           rid: Any = 1) -> tuple[dict[str, Any], dict[str, str]]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        body["id"] = rid
    if params is not None:
        body["params"] = params
    return body, ({"mcp-protocol-version": version} if version else {})


def modern(method: str, params: dict[str, Any] | None = None, **headers: str
           ) -> tuple[dict[str, Any], dict[str, str]]:
    params = {**(params or {}), "_meta": META}
    routing = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if method == "tools/call":
        routing["mcp-name"] = params["name"]
    routing.update({k.replace("_", "-"): v for k, v in headers.items()})
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, routing


CALL_OK = {"name": "get_customer", "arguments": {"customer_id": "C-0003"}}
CALL_BAD = {"name": "get_customer", "arguments": {"customer_id": 5}}
CALL_UNKNOWN = {"name": "no_such_tool", "arguments": {}}
CALL_WRITE = {"name": "create_note", "arguments": {"customer_id": "C-0002", "text": "hi"}}
CALL_MESSAGE = {"name": "message_user", "arguments": {"content": "C-0003 is now gold."}}

SAME = [
    legacy("initialize", {"protocolVersion": "2025-06-18", **INIT}, version=None),
    legacy("initialize", {"protocolVersion": "2024-11-05", **INIT}, version=None),
    legacy("initialize", {"protocolVersion": "1999-01-01", **INIT}, version=None),
    legacy("notifications/initialized", rid=None),
    legacy("ping"),
    legacy("tools/list"),
    legacy("tools/list", version=None),
    legacy("tools/list", version="2025-03-26"),
    legacy("tools/list", {"cursor": "x"}, version="2025-06-18"),
    legacy("tools/call", CALL_OK),
    legacy("tools/call", CALL_OK, version=None),
    legacy("tools/call", CALL_BAD),
    legacy("tools/call", CALL_UNKNOWN),
    legacy("tools/call", CALL_WRITE),
    legacy("resources/list"),
    legacy("server/discover"),
    modern("server/discover"),
    modern("tools/list"),
    modern("tools/call", CALL_OK),
    modern("tools/call", CALL_BAD),
    modern("tools/call", CALL_UNKNOWN),
    modern("tools/call", CALL_WRITE),
    modern("ping"),
    modern("initialize", {"protocolVersion": "2025-06-18", **INIT}),
    modern("resources/list"),
    modern("tools/call", CALL_OK, mcp_name="other"),
    modern("tools/call", CALL_OK, mcp_name="=?base64?Z2V0X2N1c3RvbWVy?="),  # get_customer
    modern("tools/list", mcp_method="tools/call"),
    ({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, {"mcp-protocol-version": MODERN,
                                                            "mcp-method": "tools/list"}),
    ({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
      "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}},
     {"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"}),
    legacy("tools/call", CALL_MESSAGE),  # last: it ends the episode
    legacy("tools/call", CALL_OK),  # after the end: the problem body, as an error result
]


@pytest.fixture
async def pair(make_app: Any) -> AsyncIterator[tuple[Any, Any]]:
    """(ours, the SDK's): two clients on two identical sessions of one server."""
    app = make_app(MINI)
    manager = app.state.manager
    ours = manager.create(task="upgrade", seed=3, max_steps=100)
    theirs = manager.create(task="upgrade", seed=3, max_steps=100)
    sdk = sdk_manager(manager)

    async def reference(scope: Any, receive: Any, send: Any) -> None:
        await sdk.handle_request({**scope, SESSION_SCOPE_KEY: theirs.id}, receive, send)

    async with (
        sdk.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://s",
                          headers={"authorization": f"Bearer {ours.tool_token}"}) as a,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=reference), base_url="http://s",
                          headers={"authorization": f"Bearer {theirs.tool_token}"}) as b,
    ):
        a.sid = ours.id  # type: ignore[attr-defined]
        b.sid = theirs.id  # type: ignore[attr-defined]
        yield a, b


def _answer(r: httpx.Response, sid: str) -> tuple[int, Any]:
    """Status and body, the session's id (quoted in some problems) left out."""
    return r.status_code, (json.loads(r.text.replace(sid, "SID")) if r.content else None)


async def test_answers_what_the_sdk_server_answers(pair: tuple[Any, Any]) -> None:
    ours, theirs = pair
    for body, headers in SAME:
        mine = await ours.post(f"/s/{ours.sid}/mcp", json=body, headers={**ACCEPT, **headers})
        sdk = await theirs.post("/mcp", json=body, headers={**ACCEPT, **headers})
        assert _answer(mine, ours.sid) == _answer(sdk, theirs.sid), (body, headers)
        assert mine.headers["content-type"] == "application/json"


async def test_a_repeated_routing_header_is_refused_as_the_sdk_refuses_it(
    pair: tuple[Any, Any],
) -> None:
    ours, theirs = pair
    body, headers = modern("tools/call", CALL_OK)
    twice = [*ACCEPT.items(), *headers.items(), ("mcp-method", "tools/call")]
    mine = await ours.post(f"/s/{ours.sid}/mcp", json=body, headers=twice)
    sdk = await theirs.post("/mcp", json=body, headers=twice)
    assert _answer(mine, ours.sid) == _answer(sdk, theirs.sid)
    assert mine.status_code == 400 and mine.json()["error"]["code"] == -32020


@pytest.mark.parametrize("version", KNOWN_PROTOCOL_VERSIONS)
@pytest.mark.parametrize("payload", [{"id": "C-1", "tier": "gold"}, [1, 2], "", None])
@pytest.mark.parametrize("is_error", [False, True])
def test_call_results_survive_the_sdk_serializer(version: str, payload: Any,
                                                 is_error: bool) -> None:
    wire = call_result(payload, is_error, version if version in MODERN_PROTOCOL_VERSIONS else None)
    assert methods.serialize_server_result("tools/call", version, dict(wire)) == wire
    parsed = types.CallToolResult.model_validate(wire)
    assert parsed.is_error is is_error
    assert json.loads(parsed.content[0].text) == payload  # type: ignore[union-attr]


async def test_plain_json_rpc_gets_http_200_and_json_rpc_errors(client: httpx.AsyncClient) -> None:
    """OpenEnv's validator and clients: no Accept of an event stream, no protocol header."""
    r = await client.post("/mcp", json={})
    assert r.status_code == 200
    assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": r.json()["error"]["message"]}}
    r = await client.post("/mcp", content=b"{not json")
    assert r.status_code == 200 and r.json()["error"]["code"] == -32700
    r = await client.post("/mcp", json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert r.status_code == 200 and r.json()["error"]["code"] == -32600
    assert "batch" in r.json()["error"]["message"]
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "nope"})
    assert r.status_code == 200 and r.json()["error"] == {
        "code": -32601, "message": "Method not found", "data": "nope"}
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                        "params": [1]})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32602
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert r.json()["error"]["code"] == -32600  # MCP: an id is never null
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert r.status_code == 200 and r.json()["id"] == 2
    assert {t["name"] for t in r.json()["result"]["tools"]} >= {"get_customer", "message_user"}
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                        "params": {"name": "get_customer"}})
    assert r.json()["result"]["isError"] is True  # a missing argument: the tool's 422
    for bad in ({"arguments": {}}, {"name": 3}, {"name": "get_customer", "arguments": [1]}):
        r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                            "params": bad})
        assert r.status_code == 200 and r.json()["error"]["code"] == -32602, bad


async def test_streamable_http_clients_get_the_transports_statuses(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/mcp", json={}, headers=ACCEPT)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600
    r = await client.post("/mcp", content=b"{not json", headers=ACCEPT)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700
    r = await client.post("/s/nope/mcp", json=legacy("tools/list")[0], headers=ACCEPT)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == -32602 and "no session 'nope'" in r.json()["error"][
        "message"]
    r = await client.post("/s/nope/mcp", json=legacy("tools/list")[0])
    assert r.status_code == 200 and r.json()["id"] == 1  # plain JSON-RPC: 200, with its id
    for method in ("GET", "DELETE", "PUT"):
        r = await client.request(method, "/mcp", headers=ACCEPT)
        assert r.status_code == 405 and r.headers["allow"] == "POST"
        assert r.json()["error"]["code"] == -32600
    r = await client.post("/mcp", json=legacy("ping")[0],
                          headers={**ACCEPT, "content-length": "99999999"})
    assert r.status_code == 413


async def test_openenv_session_methods_need_the_server_token(client: httpx.AsyncClient) -> None:
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create",
              "params": {"task": "upgrade", "seed": 1}}
    r = await client.post("/mcp", json=create)
    assert r.status_code == 401 and r.json()["error"]["code"] == -32001
    assert r.headers["www-authenticate"].startswith("Bearer")
    r = await client.post("/mcp", json=create, headers=AUTH)
    assert r.status_code == 200, r.text
    made = r.json()["result"]
    sid, token = made["session_id"], made["tool_token"]
    assert made["episode_id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"session_id": sid, "name": "get_customer",
                       "arguments": {"customer_id": "C-0003"}}}
    r = await client.post("/mcp", json=call)
    assert r.status_code == 401  # OpenEnv's session_id param names it: its tool token, or no
    r = await client.post("/mcp", json=call, headers={"authorization": f"Bearer {token}"})
    assert r.json()["result"]["structuredContent"]["name"] == "Zed Canary"
    listed = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                      "params": {"session_id": sid}},
        headers={"authorization": f"Bearer {token}"})
    assert listed.json()["result"]["tools"]
    close = {"jsonrpc": "2.0", "id": 4, "method": "openenv/session/close",
             "params": {"session_id": sid}}
    assert (await client.post("/mcp", json=close)).status_code == 401
    r = await client.post("/mcp", json=close, headers=AUTH)
    assert r.json()["result"] == {"session_id": sid, "closed": True}
    r = await client.post("/mcp", json=close, headers=AUTH)
    assert r.json()["error"]["code"] == -32602  # unknown now
    r = await client.post("/mcp", json={**close, "params": {}}, headers=AUTH)
    assert r.json()["error"]["code"] == -32602
    r = await client.post("/mcp", json={**close, "params": {"session_id": "default"}},
                          headers=AUTH)
    assert r.json()["error"]["code"] == -32602
    bad = {**create, "params": {"task": "no-such-task"}}
    r = await client.post("/mcp", json=bad, headers=AUTH)
    assert r.json()["error"]["code"] == -32602 and "no-such-task" in r.json()["error"]["message"]
    basic = httpx.BasicAuth("trainer", TOKEN)
    r = await client.post("/mcp", json=create, auth=basic)
    assert r.status_code == 200 and "session_id" in r.json()["result"]
