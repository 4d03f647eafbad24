"""A session that leaves the server (deleted on the control plane or over MCP, evicted as idle,
its OpenEnv WebSocket closed) has its episode closed: with the collector off it is freed at
once, where it used to be a cycle that only a full collection frees (``serve`` makes those
rare, so a server whose trainers reconnect grew by every episode they left). A session with a
request still in it keeps its episode for that request."""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

from simforge.serve.app import SimforgeApp
from simforge.serve.sessions import Limits

from .conftest import ACME, AUTH, asgi_client, create_session

READ = {"name": "get_customer", "arguments": {"customer_id": "C-9001"}}


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _episode_refs(manager: Any, sid: str) -> tuple[weakref.ref[Any], weakref.ref[Any]]:
    session = manager.sessions[sid].session
    return weakref.ref(session), weakref.ref(session.env)


def _freed(refs: tuple[weakref.ref[Any], weakref.ref[Any]]) -> bool:
    return all(ref() is None for ref in refs)


@pytest.mark.anyio
async def test_a_deleted_session_is_freed_without_the_collector(
    make_app: Callable[..., SimforgeApp], no_collector: None
) -> None:
    app = make_app(ACME)
    manager = app.state.manager
    async with asgi_client(app) as c:
        sid, tools = await create_session(c, session_id="leaving")
        r = await c.post(f"/s/{sid}/tools/get_customer", json={"customer_id": "C-9001"},
                         headers=tools)
        assert r.status_code == 200
        refs = _episode_refs(manager, sid)
        assert (await c.delete(f"/sessions/{sid}", headers=AUTH)).status_code == 204
        assert _freed(refs)
        r = await c.post(f"/s/{sid}/tools/get_customer", json={"customer_id": "C-9001"},
                         headers=tools)
        assert r.status_code == 404


@pytest.mark.anyio
async def test_an_evicted_session_is_freed_without_the_collector(
    make_app: Callable[..., SimforgeApp], idle_clock: Any, no_collector: None
) -> None:
    app = make_app(ACME, limits=Limits(idle_ttl=100))
    manager = app.state.manager
    async with asgi_client(app) as c:
        sid, _ = await create_session(c, session_id="idle")
        refs = _episode_refs(manager, sid)
        idle_clock.now += 500
        assert manager.evict_idle() == 1
        assert sid not in manager.sessions and _freed(refs)


@pytest.mark.anyio
async def test_a_session_deleted_with_a_request_in_it_keeps_its_episode_for_that_request(
    make_app: Callable[..., SimforgeApp], no_collector: None
) -> None:
    """A step awaiting in the session (an LLM user replying holds the lock) when the control
    plane deletes it finds its episode as it was: nothing is closed under it."""
    app = make_app(ACME)
    manager = app.state.manager
    async with asgi_client(app) as c:
        sid, _ = await create_session(c, session_id="busy")
        served = manager.sessions[sid]
        async with served.lock:
            assert (await c.delete(f"/sessions/{sid}", headers=AUTH)).status_code == 204
            outcome = served.call_now("get_customer", {"customer_id": "C-9001"})
            assert outcome is not None and outcome.error is None
            assert not served.session.done


def test_a_closed_websocket_frees_its_session_without_the_collector(
    live_server: Callable[..., Any], no_collector: None
) -> None:
    """Over uvicorn (the direct path and the coroutine's): once a trainer's connection closes,
    the episodes it played are gone, not waiting for a full collection."""
    server = live_server(ACME)
    manager = server.app.state.manager
    url = server.url.replace("http", "ws") + "/ws"
    before = set(manager.sessions)
    with connect(url, additional_headers=AUTH) as ws:
        for message in ({"type": "reset", "data": {"seed": 3}},
                        {"type": "step", "data": {"tool_calls": [READ]}},
                        {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1,
                                                 "method": "tools/list"}}):
            ws.send(json.dumps(message))
            assert json.loads(ws.recv())["type"] in {"observation", "mcp"}
        (sid,) = set(manager.sessions) - before
        refs = _episode_refs(manager, sid)
    deadline = time.monotonic() + 10
    while sid in manager.sessions and time.monotonic() < deadline:
        time.sleep(0.01)  # the server notices the close on its own thread
    assert sid not in manager.sessions
    assert _freed(refs)


def test_closed_websockets_are_collected_every_n_closes(
    live_server: Callable[..., Any], no_collector: None
) -> None:
    """What uvicorn and ``websockets`` leave of a closed connection is cyclic garbage: the
    server runs a full collection after every ``ws_closes_per_collection`` closes, so at most
    that many connections' worth waits for one, whatever the collector's thresholds."""
    from simforge.serve.server import DirectWebSocket

    server = live_server(ACME, limits=Limits(ws_closes_per_collection=5))
    manager = server.app.state.manager
    url = server.url.replace("http", "ws") + "/ws"

    def protocols() -> int:
        # by type: isinstance() would look through a dead weak proxy among the objects
        return sum(issubclass(type(o), DirectWebSocket) for o in gc.get_objects())

    before = protocols()
    for seed in range(12):
        with connect(url, additional_headers=AUTH) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            assert json.loads(ws.recv())["type"] == "observation"
        deadline = time.monotonic() + 10
        while len(manager.sessions) > 1 and time.monotonic() < deadline:
            time.sleep(0.005)  # the server handles the close on its own thread
    # ... and the collections it schedules after the fifth and the tenth close, when it gets
    # to them (a busy machine): the 11th and 12th connections' objects wait for the next one
    deadline = time.monotonic() + 10
    while protocols() - before > 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert protocols() - before <= 2


def test_a_collection_pace_below_one_is_refused() -> None:
    from simforge.errors import UsageError
    from simforge.serve.server import Reclaim

    with pytest.raises(UsageError, match="at least 1"):
        Reclaim(0)
