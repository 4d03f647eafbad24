"""Faults are real HTTP behaviour: status codes and problem bodies, Retry-After, delays that
really elapse (scaled), sockets that really drop, empty bodies."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from simforge.serve.tool_plane import SimulatedReset

from .conftest import MINI, asgi_client

PROFILE = """
name: http-faults
rules:
  - id: reset-first-read
    fault: {kind: connection_reset}
    target: {tools: [get_customer]}
    when: {on_call: 0}
  - id: throttle
    fault: {kind: rate_limit, burst: 1, per_second: 0.25}
    target: {tools: [list_customers]}
  - id: unavailable
    fault: {kind: error_status, status: 503}
    target: {tools: [list_notes]}
  - id: blank
    fault: {kind: empty_response}
    target: {tools: [create_note]}
  - id: hang
    fault: {kind: timeout, after: 2.0}
    target: {tools: [upgrade_customer]}
"""


@pytest.fixture
def profile(tmp_path: Path) -> str:
    path = tmp_path / "http-faults.yaml"
    path.write_text(PROFILE)
    return str(path)


def test_a_connection_reset_drops_the_socket(live_server, profile):
    live = live_server(MINI, faults=profile)
    with httpx.Client(base_url=live.url) as c:
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            c.post("/tools/get_customer", json={"customer_id": "C-0001"})
        # the fault hit one call; the next one, on a new connection, is answered
        r = c.post("/tools/get_customer", json={"customer_id": "C-0001"})
        assert r.status_code == 200


@pytest.mark.anyio
async def test_in_process_a_reset_is_an_exception(make_app, profile):
    async with asgi_client(make_app(MINI, faults=profile)) as c:
        with pytest.raises(SimulatedReset):
            await c.post("/tools/get_customer", json={"customer_id": "C-0001"})


@pytest.mark.anyio
async def test_rate_limit_is_429_with_retry_after(make_app, profile):
    async with asgi_client(make_app(MINI, faults=profile)) as c:
        first = await c.post("/tools/list_customers", json={})
        assert first.status_code == 200
        limited = await c.post("/tools/list_customers", json={})
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["retry_after"] > 0
        assert limited.headers["content-type"] == "application/problem+json"


@pytest.mark.anyio
async def test_an_injected_error_status_is_that_status(make_app, profile):
    async with asgi_client(make_app(MINI, faults=profile)) as c:
        r = await c.post("/tools/list_notes", json={})
        assert r.status_code == 503
        assert r.json()["status"] == 503


@pytest.mark.anyio
async def test_an_empty_response_is_an_empty_200(make_app, profile):
    async with asgi_client(make_app(MINI, faults=profile)) as c:
        r = await c.post("/tools/create_note", json={"customer_id": "C-0001", "text": "x"})
        assert r.status_code == 200
        assert r.content == b""


def test_a_timeout_answers_504_after_the_scaled_deadline(live_server, profile):
    # mini's call timeout is 30 simulated seconds: the hang lasts that long, 0.3 s on the wall
    live = live_server(MINI, faults=profile, time_scale=0.01)
    with httpx.Client(base_url=live.url, timeout=10) as c:
        t0 = time.monotonic()
        r = c.post("/tools/upgrade_customer", json={"customer_id": "C-0001"})
        elapsed = time.monotonic() - t0
    assert r.status_code == 504
    assert r.json()["code"] == "timeout"
    assert 0.28 <= elapsed < 2.0


def test_latency_really_elapses_scaled_and_think_time_follows_the_wall(live_server):
    live = live_server(MINI, time_scale=0.2)  # upgrade_customer takes 0.5 simulated seconds
    manager = live.app.state.manager
    with httpx.Client(base_url=live.url, timeout=10) as c:
        t0 = time.monotonic()
        r = c.post("/tools/upgrade_customer", json={"customer_id": "C-0001"})
        elapsed = time.monotonic() - t0
        assert r.status_code == 200
        assert 0.09 <= elapsed < 1.0
        time.sleep(0.2)  # the agent "thinks" for 0.2 wall seconds = 1 simulated second
        c.post("/tools/get_customer", json={"customer_id": "C-0001"})
    now = manager.get("default").session.now
    assert 1.5 <= now < 3.0  # 0.5 + ~1.0 of thinking + 0.1, mapped from the wall clock


@pytest.mark.anyio
async def test_time_scale_zero_answers_at_once(make_app):
    async with asgi_client(make_app(MINI, time_scale=0.0)) as c:
        t0 = time.monotonic()
        for _ in range(5):
            await c.post("/tools/upgrade_customer", json={"customer_id": "C-0002", "tier": "x"})
        assert time.monotonic() - t0 < 0.5
