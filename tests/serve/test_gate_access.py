"""The serve gate's access policy (``create_app(refuse=...)``): one ASGI gate holds it, before
the body limit and every route, on the ASGI path and the direct path of a real server alike; the
external harness's policy keeps a harness to its own session."""

from __future__ import annotations

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from simforge.runs.harness import harness_access
from simforge.serve.problems import Problem


def _closed_tool_plane(scope) -> Problem | None:
    if scope["type"] == "websocket":
        return Problem(403, "forbidden", "no WebSockets here")
    if scope["path"].startswith("/tools/"):
        return Problem(403, "forbidden", "the open tool plane is closed")
    return None


def test_a_refused_request_is_answered_by_the_gate_before_any_route(live_server):
    live = live_server(refuse=_closed_tool_plane)
    with httpx.Client(base_url=live.url) as http:
        # the direct path of the tool plane would answer this POST; the policy comes first
        refused = http.post("/tools/get_customer", json={"customer_id": "C-0003"})
        assert refused.status_code == 403
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["detail"] == "the open tool plane is closed"
        # an oversized body is refused too, by the policy, not read
        assert http.post("/tools/get_customer", content=b"x" * 10_000_000).status_code == 403
        assert http.get("/openapi.json").status_code == 200  # what the policy lets through
    with pytest.raises(InvalidStatus) as caught:
        connect(f"ws://127.0.0.1:{live.port}/ws", open_timeout=5)
    assert caught.value.response.status_code == 403


def test_without_a_policy_the_same_requests_are_served(live_server):
    live = live_server()
    with httpx.Client(base_url=live.url) as http:
        answer = http.post("/tools/get_customer", json={"customer_id": "C-0003"})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    ("kind", "path", "status"),
    [
        ("http", "/sessions", 403),
        ("http", "/sessions/abc/score", 403),
        ("http", "/tools/get_customer", 403),
        ("http", "/mcp", 403),
        ("http", "/ws", 403),
        ("http", "/s/default/tools/get_customer", 401),
        ("websocket", "/ws", 404),
        ("http", "/s/abc123/tools/get_customer", None),
        ("http", "/s/abc123/messages", None),
        ("http", "/openapi.json", None),
    ],
)
def test_a_harness_reaches_its_own_session_and_discovery_only(kind, path, status):
    problem = harness_access({"type": kind, "path": path})
    assert (problem.status if problem is not None else None) == status
