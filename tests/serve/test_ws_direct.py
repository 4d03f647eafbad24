"""The OpenEnv ``/ws`` direct path (answered where uvicorn's protocol parsed the message) says
what the coroutine path says, message for message, and hands over what it cannot answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from websockets.sync.client import connect

from simforge.serve import openenv
from simforge.serve.app import SimforgeApp

from .conftest import ACME, AUTH

READ = {"name": "get_customer", "arguments": {"customer_id": "C-9001"}}
MESSAGES: list[Any] = [
    {"type": "reset", "data": {"seed": 7}},
    {"type": "step", "data": {"tool_calls": [READ]}},
    {"type": "step", "data": {"tool_calls": [READ], "metadata": {}}},
    {"type": "step", "data": {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]}},
    {"type": "state"},
    {"type": "reset", "data": {"seed": 8}},  # tools and policy by reference now
    {"type": "step", "data": {"tool_calls": "not a list"}},
    {"type": "step", "data": {"bogus": 1}},
    {"type": "reset", "data": {"seed": -1}},
    {"type": "nope"},
    {"type": "step"},
    {"type": "step", "data": [], "extra": 1},
    [1, 2],
    "{not json",
]
IDS = ("session_id", "episode_id", "created_at", "tool_token")


def _comparable(reply: bytes) -> Any:
    """The reply with what differs between two sessions (ids, creation time) blanked."""

    def blank(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "<id>" if k in IDS else blank(v) for k, v in value.items()}
        if isinstance(value, list):
            return [blank(v) for v in value]
        return value

    return blank(json.loads(reply))


@pytest.mark.anyio
async def test_direct_path_answers_as_the_coroutine_does(
    make_app: Callable[..., SimforgeApp],
) -> None:
    app = make_app(ACME)
    manager = app.state.manager
    direct, slow = manager.create(), manager.create()
    sent_direct: set[str] = set()
    sent_slow: set[str] = set()
    deferred = []
    for message in MESSAGES:
        raw = message if isinstance(message, str) else json.dumps(message)
        now = openenv._message_now(manager, direct, sent_direct, raw)
        if now is None:  # not ours to answer here: the coroutine answers it
            now = await openenv._message(manager, app.mcp, direct, raw, sent_direct)
            deferred.append(message)
        later = await openenv._message(manager, app.mcp, slow, raw, sent_slow)
        assert now is not None and later is not None
        assert _comparable(now) == _comparable(later), message
    # all but the steps that are not plain tool calls (their errors come from the action's
    # validating parser, on the coroutine's path)
    assert deferred == [MESSAGES[6], MESSAGES[7]]


@pytest.mark.anyio
async def test_what_may_wait_goes_to_the_coroutine(make_app: Callable[..., SimforgeApp]) -> None:
    app = make_app(ACME)
    manager = app.state.manager
    served = manager.create()
    sent: set[str] = set()
    mcp = json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}})
    message = json.dumps({"type": "step", "data": {"message": "hello"}})  # asks the user
    for raw in (mcp, message, json.dumps({"type": "close"})):
        assert openenv._message_now(manager, served, sent, raw) is None
    async with served.lock:  # a busy session: nothing overtakes what holds its lock
        reset = json.dumps({"type": "reset", "data": {}})
        assert openenv._message_now(manager, served, sent, reset) is None
    real_time = make_app(ACME, time_scale=1.0).state.manager
    assert openenv._message_now(real_time, real_time.create(), set(),
                                json.dumps({"type": "state"})) is None


@pytest.mark.parametrize("pipelined", [1, 8])
def test_live_ws_in_order(live_server: Callable[..., Any], pipelined: int) -> None:
    """Over uvicorn, messages sent back to back (some answered directly, some by the
    coroutine) are answered in the order they were sent."""
    server = live_server(ACME)
    url = server.url.replace("http", "ws") + "/ws"
    batch = [
        {"type": "reset", "data": {"seed": 1}},
        {"type": "step", "data": {"tool_calls": [READ]}},
        {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}},
        {"type": "state"},
        {"type": "step", "data": {"tool_calls": [READ]}},
    ]
    with connect(url, additional_headers=AUTH) as ws:
        for _ in range(pipelined):
            for message in batch:
                ws.send(json.dumps(message))
        kinds = [json.loads(ws.recv())["type"] for _ in range(pipelined * len(batch))]
    assert kinds == ["observation", "observation", "mcp", "state", "observation"] * pipelined


def test_a_reset_frees_the_episode_it_replaces_without_the_collector(
    make_app: Callable[..., SimforgeApp],
) -> None:
    """A served session's reset closes the session it replaces (``Session.close``): with the
    collector off, the old episode is freed at once, where before it was a cycle that reached
    the oldest generation (a ``/ws`` server playing short episodes grew about 20 MB a
    second until a full collection)."""
    import gc
    import weakref

    manager = make_app(ACME).state.manager
    served, sent = manager.create(), set[str]()
    step = json.dumps({"type": "step", "data": {"tool_calls": [READ]}})
    gc.collect()
    gc.disable()
    try:
        refs = []
        for seed in range(3):
            reply = openenv._message_now(manager, served, sent,
                                         json.dumps({"type": "reset", "data": {"seed": seed}}))
            assert reply is not None and reply.startswith(b'{"type":"observation"')
            for _ in range(3):
                assert openenv._message_now(manager, served, sent, step) is not None
            refs.append((weakref.ref(served.session), weakref.ref(served.session.env)))
        assert [(s() is None, e() is None) for s, e in refs] == [(True, True)] * 2 + [(False,
                                                                                        False)]
    finally:
        gc.enable()
