"""Limits: maximum sessions, idle TTL, body size (in test_tool_plane), requests queued per
session; concurrent calls to one session are serialized, sessions run side by side."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from simforge.serve.sessions import Limits

from .conftest import AUTH, MINI, asgi_client, create_session, free_port

pytestmark = pytest.mark.anyio


async def test_the_maximum_of_sessions_is_a_503_with_retry_after(make_app):
    async with asgi_client(make_app(limits=Limits(max_sessions=3))) as c:
        for _ in range(2):  # the default session counts
            assert (await c.post("/sessions", json={}, headers=AUTH)).status_code == 201
        r = await c.post("/sessions", json={}, headers=AUTH)
        assert r.status_code == 503
        assert r.headers["retry-after"]
        assert r.json()["code"] == "too_many_sessions"


async def test_idle_sessions_expire_but_the_default_one_stays(make_app):
    app = make_app(limits=Limits(idle_ttl=0.05))
    manager = app.state.manager
    async with asgi_client(app) as c:
        await create_session(c, session_id="idle")
        await asyncio.sleep(0.1)
        assert manager.evict_idle() == 1
        assert (await c.get("/sessions/idle", headers=AUTH)).status_code == 404
        assert (
            await c.post("/tools/get_customer", json={"customer_id": "C-0001"})
        ).status_code == 200


async def test_a_new_session_lives_the_whole_ttl_from_its_creation(make_app, idle_clock):
    app = make_app(limits=Limits(idle_ttl=100))
    manager = app.state.manager
    async with asgi_client(app) as c:
        await create_session(c, session_id="waiting")
        idle_clock.now += 99
        assert manager.evict_idle() == 0  # still awaiting its first call: not idle for long
        idle_clock.now += 2
        assert manager.evict_idle() == 1


@pytest.mark.parametrize("activity", ["reset", "inspect", "call", "step", "openenv-state"])
async def test_every_request_naming_a_session_restarts_its_idle_time(
    make_app, idle_clock, activity
):
    app = make_app(limits=Limits(idle_ttl=100))
    manager = app.state.manager
    async with asgi_client(app) as c:
        await c.post("/reset", json={"episode_id": "busy-episode"}, headers=AUTH)
        (sid,) = [s for s in manager.sessions if s != "default"]
        tools = {"Authorization": f"Bearer {manager.get(sid).tool_token}"}
        idle_clock.now += 80
        r = {
            "reset": lambda: c.post(f"/sessions/{sid}/reset", json={}, headers=AUTH),
            "inspect": lambda: c.get(f"/sessions/{sid}", headers=AUTH),
            "call": lambda: c.post(f"/s/{sid}/tools/get_customer",
                                   json={"customer_id": "C-0001"}, headers=tools),
            "step": lambda: c.post(f"/sessions/{sid}/step",
                                   json={"action": {"tool_calls": [{"name": "get_customer", "arguments": {
                                       "customer_id": "C-0001"}}]}}, headers=AUTH),
            "openenv-state": lambda: c.get("/state", params={"episode_id": "busy-episode"},
                                           headers=AUTH),
        }[activity]
        assert (await r()).status_code == 200
        idle_clock.now += 80  # 160 s since creation, 80 since the request
        assert manager.evict_idle() == 0
        idle_clock.now += 21
        assert manager.evict_idle() == 1


async def test_a_session_whose_lock_is_held_is_not_evicted(make_app, idle_clock):
    app = make_app(limits=Limits(idle_ttl=100))
    manager = app.state.manager
    async with asgi_client(app) as c:
        await create_session(c, session_id="stepping")
        async with manager.sessions["stepping"].lock:  # a long step (an LLM user replying)
            idle_clock.now += 500
            assert manager.evict_idle() == 0
        assert manager.evict_idle() == 1


async def test_too_many_queued_requests_on_one_session_is_429(make_app):
    app = make_app(time_scale=0.05, limits=Limits(max_pending_per_session=2))
    async with asgi_client(app) as c:
        calls = [
            c.post("/tools/upgrade_customer", json={"customer_id": f"C-000{i}"})
            for i in range(1, 6)
        ]
        answers = await asyncio.gather(*calls)
    statuses = sorted(r.status_code for r in answers)
    assert statuses.count(200) == 2 and statuses.count(429) == 3
    assert all(r.headers.get("retry-after") for r in answers if r.status_code == 429)


async def test_concurrent_calls_to_one_session_are_serialized_in_simulated_time(make_app):
    app = make_app(time_scale=0.0)
    async with asgi_client(app) as c:
        calls = [
            c.post("/tools/upgrade_customer", json={"customer_id": f"C-00{i:02d}"})
            for i in range(1, 11)
        ]
        answers = await asyncio.gather(*calls)
    assert all(r.status_code == 200 for r in answers)
    session = app.state.manager.get("default").session
    assert session.now == pytest.approx(10 * 0.5)  # one after the other, 0.5 s each


async def test_sessions_run_concurrently_in_real_time(make_app):
    app = make_app(time_scale=0.2)  # upgrade takes 0.5 simulated s = 0.1 wall s
    async with asgi_client(app) as c:
        tokens = [(await create_session(c, session_id=f"p{i}"))[1] for i in range(5)]
        t0 = time.monotonic()
        answers = await asyncio.gather(
            *[
                c.post(f"/s/p{i}/tools/upgrade_customer", json={"customer_id": "C-0001"},
                       headers=tokens[i])
                for i in range(5)
            ]
        )
        elapsed = time.monotonic() - t0
    assert all(r.status_code == 200 for r in answers)
    assert elapsed < 0.35  # five sessions' latencies overlap instead of adding up


def test_the_cli_serves_and_prints_a_generated_token(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from simforge.cli import main; main()",
            "serve",
            MINI,
            "--port",
            str(port),
            "--time-scale",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        token = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert len(token) >= 20
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(
                    f"http://127.0.0.1:{port}/sessions",
                    headers={"Authorization": f"Bearer {token}"},
                )
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert r.status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/sessions").status_code == 401
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_the_cli_refuses_a_port_in_use_before_announcing_anything():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", "from simforge.cli import main; main()", "serve", MINI,
             "--port", str(port), "--time-scale", "0"],
            capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 2
    assert done.stdout == "", "no token is printed for a server that never starts"
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "serving" not in done.stderr and "Traceback" not in done.stderr


READ_ACTION = {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0001"}}]}


async def test_a_full_server_lets_the_oldest_http_episode_go_for_a_new_one(make_app):
    """A trainer naming every rollout over OpenEnv's HTTP endpoints starts a session per
    episode id: at the limit, the least recently used of those goes (it answers 404 after),
    where every reset was refused until the idle TTL passed."""
    app = make_app(limits=Limits(max_sessions=4))  # the default session counts
    async with asgi_client(app) as c:
        for i in range(8):
            r = await c.post("/reset", json={"episode_id": f"ep-{i}"}, headers=AUTH)
            assert r.status_code == 200, r.text
            step = await c.post("/step", json={"episode_id": f"ep-{i}", "action": READ_ACTION},
                                headers=AUTH)
            assert step.status_code == 200, step.text
        # ep-5 touched again: ep-6 is now the least recently used of the three kept
        assert (await c.get("/state", params={"episode_id": "ep-5"},
                            headers=AUTH)).status_code == 200
        assert (await c.post("/reset", json={"episode_id": "ep-8"}, headers=AUTH)).status_code == 200
        kept = [i for i in range(9) if (await c.get(
            "/state", params={"episode_id": f"ep-{i}"}, headers=AUTH)).status_code == 200]
        assert kept == [5, 7, 8]
        gone = await c.post("/step", json={"episode_id": "ep-0", "action": READ_ACTION},
                            headers=AUTH)
        assert gone.status_code == 404 and gone.json()["code"] == "unknown_episode"


async def test_sessions_created_by_name_or_in_use_are_never_taken_for_room(make_app):
    app = make_app(limits=Limits(max_sessions=4))  # the default session counts
    manager = app.state.manager
    async with asgi_client(app) as c:
        await create_session(c, session_id="named")
        await create_session(c, session_id="named-too")
        assert (await c.post("/reset", json={"episode_id": "busy"}, headers=AUTH)).status_code == 200
        (busy,) = [s for s in manager.sessions.values() if s.episode_id == "busy"]
        async with busy.lock:  # a step in it (an LLM user replying)
            r = await c.post("/reset", json={"episode_id": "new"}, headers=AUTH)
            assert r.status_code == 503 and r.json()["code"] == "too_many_sessions"
            assert (await c.post("/sessions", json={}, headers=AUTH)).status_code == 503
        assert {"named", "named-too", busy.id} <= set(manager.sessions)
        # done with, the episode makes room for the next one
        assert (await c.post("/reset", json={"episode_id": "new"}, headers=AUTH)).status_code == 200
        assert busy.id not in manager.sessions
        assert {"named", "named-too"} <= set(manager.sessions)
        # a session asked for by name takes an idle HTTP episode's room as well
        assert (await c.post("/sessions", json={}, headers=AUTH)).status_code == 201
        assert not any(s.episode_id == "new" for s in manager.sessions.values())
