"""Many sessions in one process, each isolated: 500 concurrent sessions x 8 calls over a real
socket, zero errors and zero cross-session leaks.

Isolation and errors are what this asserts; 8 calls a session (4 writes, 3 reads, the read-back)
reach every session's state as 20 did at less than half the client's CPU (the httpx client, not
the server, is most of this test's time). The 500 x 20 load figure is the benchmark's
(``benchmarks/serve.py --only load``, from several processes)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from simforge.serve.sessions import Limits

from .conftest import AUTH, MINI

SESSIONS = 500
CALLS = 8
NOTES = 4


async def _one_session(c: httpx.AsyncClient, i: int) -> list[str]:
    sid = f"load-{i}"
    problems = []
    r = await c.post("/sessions", json={"session_id": sid, "max_steps": 1000,
                                        "insecure_id": True}, headers=AUTH)
    if r.status_code != 201:
        return [f"{sid}: create {r.status_code}"]
    tools = {"Authorization": f"Bearer {r.json()['tool_token']}"}
    for k in range(CALLS - 1):
        if k < NOTES:
            r = await c.post(
                f"/s/{sid}/tools/create_note", json={"customer_id": "C-0001", "text": f"{sid}/{k}"},
                headers=tools,
            )
        else:
            r = await c.post(
                "/tools/get_customer",
                json={"customer_id": "C-0002"},
                headers={"X-Simforge-Session": sid, **tools},
            )
        if r.status_code != 200:
            problems.append(f"{sid}: call {k} answered {r.status_code}")
    r = await c.post(f"/s/{sid}/tools/list_notes", json={}, headers=tools)
    if r.status_code != 200:
        return [*problems, f"{sid}: list {r.status_code}"]
    texts = sorted(n["text"] for n in r.json()["items"])
    if texts != sorted(f"{sid}/{k}" for k in range(NOTES)):
        problems.append(f"{sid}: sees {texts}")
    return problems


async def _load(url: str) -> tuple[list[str], int]:
    # A pooled connection is reused until the client's expiry; the server must keep it longer,
    # or it closes one just as the client sends on it (httpx.ReadError on a busy machine).
    expiry = 5.0
    assert Limits().keep_alive > 2 * expiry
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64,
                          keepalive_expiry=expiry)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as c:
        results = await asyncio.gather(*[_one_session(c, i) for i in range(SESSIONS)])
        listed = (await c.get("/sessions", headers=AUTH)).json()
    return [p for r in results for p in r], len(listed)


@pytest.mark.slow
def test_500_sessions_x_8_calls_no_errors_no_leaks(live_server):
    live = live_server(MINI)
    problems, listed = asyncio.run(_load(live.url))
    assert problems == []
    assert listed == SESSIONS + 1  # and the default session
    default_notes = httpx.post(f"{live.url}/tools/list_notes", json={}).json()
    assert default_notes["items"] == []
