"""JSON from outside, on every surface: one parse path (depth limit, integers held to 64 bits),
so that an integer of any size anywhere in a body is a 422 naming its field, never a 500, and
the session it was sent to stays healthy."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.jsonio import MAX_DEPTH
from simforge.serve.app import create_app
from simforge.serve.problems import INT_MAX, INT_MIN, Problem, parse_json

from .conftest import AUTH, MINI, TOKEN, asgi_client

pytestmark = pytest.mark.anyio

WIDE = st.one_of(st.integers(min_value=INT_MAX + 1), st.integers(max_value=INT_MIN - 1))
JSON_HEADERS = {**AUTH, "content-type": "application/json"}


def _raw(value: Any) -> bytes:
    return json.dumps(value).encode()  # the standard library writes integers of any size


@given(number=WIDE, depth=st.integers(min_value=0, max_value=5),
       key=st.text(alphabet="abcxyz_", min_size=1, max_size=6))
def test_an_integer_beyond_64_bits_anywhere_is_refused_with_its_path(number, depth, key):
    value: Any = number
    path = ""
    for level in range(depth):
        value = {key: value} if level % 2 == 0 else ["pad", value]
        path = (f".{key}" if level % 2 == 0 else ".1") + path
    with pytest.raises(Problem) as caught:
        parse_json(_raw({"outer": value}))
    problem = caught.value
    assert problem.status == 422
    assert problem.errors[0]["field"] == f"body.outer{path}"


@given(number=st.integers(min_value=INT_MIN, max_value=INT_MAX))
def test_an_integer_within_64_bits_is_read_exactly(number):
    assert parse_json(_raw({"n": number, "s": "1234567890123456789012"})) == {
        "n": number, "s": "1234567890123456789012"}


def test_nesting_beyond_the_depth_limit_is_a_400():
    with pytest.raises(Problem) as caught:
        parse_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert caught.value.status == 400


BODIES = [
    ("/sessions", lambda n: {"seed": n}),
    ("/sessions", lambda n: {"max_steps": n}),
    ("/sessions/s/step", lambda n: {"action": {"tool_calls": [
        {"name": "get_customer", "arguments": {"customer_id": n}}]}}),
    ("/sessions/s/step", lambda n: {"action": {"message": "hi", "think": n}}),
    ("/sessions/s/reset", lambda n: {"seed": n}),
    ("/s/s/messages", lambda n: {"content": "hi", "think": n}),
    ("/s/s/tools/get_customer", lambda n: {"customer_id": n}),
    ("/tools/get_customer", lambda n: {"customer_id": "C-0001", "extra": [n]}),
    ("/reset", lambda n: {"seed": n}),
    ("/step", lambda n: {"action": {"tool_calls": [{"name": "get_customer",
                                                     "arguments": {"customer_id": n}}]}}),
]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(number=WIDE)
def test_a_wide_integer_in_any_body_is_a_422_and_the_session_stays_healthy(number):
    async def play() -> None:
        app = create_app(MINI, time_scale=0.0, token=TOKEN)
        async with asgi_client(app) as c:
            created = await c.post("/sessions", json={"session_id": "s", "insecure_id": True},
                                   headers=AUTH)
            tool = {"Authorization": f"Bearer {created.json()['tool_token']}",
                    "content-type": "application/json"}
            await c.post("/reset", json={}, headers=AUTH)
            for path, body in BODIES:
                headers = tool if path.startswith("/s/") else JSON_HEADERS
                r = await c.post(path, content=_raw(body(number)), headers=headers)
                assert r.status_code == 422, (path, r.status_code, r.text)
                assert r.json()["code"] == "integer_out_of_range", path
                assert r.json()["errors"][0]["field"].startswith("body."), path
            for path in ("/sessions/s/trajectory", "/sessions/s/score", "/sessions/s"):
                assert (await c.get(path, headers=AUTH)).status_code == 200, path
            r = await c.post("/s/s/tools/get_customer", json={"customer_id": "C-0001"},
                             headers=tool)
            assert r.status_code == 200

    asyncio.run(play())


async def test_mcp_answers_a_wide_integer_as_an_invalid_request(client):
    raw = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
           '"get_customer", "arguments": {"customer_id": 99999999999999999999}}}')
    r = await client.post("/mcp", content=raw, headers={"content-type": "application/json"})
    error = r.json()["error"]
    assert error["code"] == -32600 and "params.arguments.customer_id" in error["message"]


_DIGIT_RUNS = st.lists(st.one_of(st.binary(max_size=8), st.integers(0, 10**30).map(
    lambda n: str(n).encode())), max_size=8).map(b"".join)


@given(_DIGIT_RUNS)
def test_the_long_number_scan_finds_what_the_regular_expression_finds(data: bytes) -> None:
    """The scan for 19 digits in a row (a translation to zeros, then a substring search)
    answers as ``re.search(rb"\\d{19}")`` does, on any bytes."""
    import re

    from simforge.serve.problems import _DIGITS_AS_ZERO, _LONG_NUMBER

    found = len(data) >= 19 and _LONG_NUMBER in data.translate(_DIGITS_AS_ZERO)
    assert found == (re.search(rb"\d{19}", data) is not None)
