"""The tool plane's direct path (answered where uvicorn's protocol parsed the request, without
a task or ASGI messages) answers what the ASGI path answers, in order, keep-alive and close
as uvicorn does them."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from simforge.serve.app import SimforgeApp

from .conftest import ACME, AUTH

READ = ("/tools/get_customer", {"customer_id": "C-9001"})
WRITE = ("/tools/apply_account_credit",
         {"customer_id": "C-9001", "amount": 5.0, "reason": "Printer on fire"})


def _request(path: str, body: Any, *extra: str) -> bytes:
    raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
    head = [f"POST {path} HTTP/1.1", "Host: test", "Content-Type: application/json",
            f"Content-Length: {len(raw)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + raw


def _responses(sock: socket.socket, n: int) -> list[tuple[int, dict[str, str], bytes]]:
    """``n`` responses read off ``sock`` (each with a content-length)."""
    buf, out = b"", []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            assert chunk, f"closed after {len(out)} responses"
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        status_line, *lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        size = int(headers["content-length"])
        while len(buf) < size:
            buf += sock.recv(65536)
        out.append((int(status_line.split()[1]), headers, buf[:size]))
        buf = buf[size:]
    return out


@pytest.mark.anyio
async def test_direct_answers_as_asgi(make_app: Callable[..., SimforgeApp],
                                      live_server: Callable[..., Any]) -> None:
    """The same requests to two fresh servers, one over uvicorn (direct) and one in process
    (ASGI): the same statuses, bodies and headers (but uvicorn's date and server)."""
    cases = [READ, WRITE, ("/tools/get_customer", {"customer_id": "nobody"}),
             ("/tools/no_such_tool", {}), ("/tools/get_customer", b"{not json"),
             ("/tools/apply_account_credit", {"customer_id": "C-9001"}),
             ("/s/nope/tools/get_customer", READ[1]),
             # amounts rounded to cents both ways (money's shortcut and round), a refusal
             ("/tools/apply_account_credit", {**WRITE[1], "amount": 0.1 + 0.2}),
             ("/tools/apply_account_credit", {**WRITE[1], "amount": 2.675}),
             ("/tools/apply_account_credit", {**WRITE[1], "amount": 250.01}),
             # an integer beyond 64 bits (the long-number scan), deep and long bodies
             ("/tools/get_customer", b'{"customer_id": "C-9001", "n": 123456789012345678901}'),
             ("/tools/get_customer", b'{"customer_id": "C-9001", "x": ' + b"[" * 129
              + b"]" * 129 + b"}"),
             ("/tools/get_customer", {"customer_id": "C-9001", "x": [[[1]]] * 40})]
    server = live_server(ACME)
    app = make_app(ACME)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as asgi, \
            httpx.AsyncClient(base_url=server.url) as live:
        for path, body in cases:
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers = {"content-type": "application/json"}
            a = await asgi.post(path, content=content, headers=headers)
            b = await live.post(path, content=content, headers=headers)
            assert (a.status_code, a.content) == (b.status_code, b.content), path
            drop = {"date", "server"}
            assert [(k, v) for k, v in a.headers.items() if k not in drop] == \
                [(k, v) for k, v in b.headers.items() if k not in drop], path


def test_pipelined_in_order_then_close(live_server: Callable[..., Any]) -> None:
    """Tool calls (direct) pipelined with requests FastAPI answers (ASGI tasks) come back in
    the order sent; ``Connection: close`` is answered, said and done."""
    server = live_server(ACME)
    session = "/sessions"
    batch = [
        _request(*READ),
        _request(session, {"task": None}, f"Authorization: {AUTH['Authorization']}"),
        _request(*WRITE),
        _request("/tools/no_such_tool", {}),
        _request(*READ, "Connection: close"),
    ]
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(10)
        sock.sendall(b"".join(batch))
        answers = _responses(sock, len(batch))
        assert sock.recv(1) == b""  # closed after the last
    assert [status for status, _, _ in answers] == [200, 201, 200, 404, 200]
    before, after = json.loads(answers[0][2]), json.loads(answers[4][2])
    assert after["account_credit"] == before["account_credit"] + 5.0  # read after the write
    assert "session_id" in json.loads(answers[1][2])["session"]
    assert answers[4][1]["connection"] == "close"
    assert all(h.get("connection") != "close" for _, h, _ in answers[:4])


def test_expect_100_continue(live_server: Callable[..., Any]) -> None:
    """A client that waits for ``100 Continue`` before its body gets it (the ASGI path)."""
    server = live_server(ACME)
    path, body = READ
    raw = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\nExpect: 100-continue\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(10)
        sock.sendall(head)
        assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(raw)
        [(status, _, answer)] = _responses(sock, 1)
    assert status == 200 and b"C-9001" in answer


def test_body_larger_than_uvicorns_read_buffer(live_server: Callable[..., Any]) -> None:
    """A body past uvicorn's high-water mark (64 KiB, where it pauses reading until the
    application reads) is answered, not left waiting for a reader."""
    server = live_server(ACME)
    path, body = READ
    padded = {**body, "padding": "x" * 200_000}  # within the body limit, an unknown argument
    with httpx.Client(base_url=server.url, timeout=10) as client:
        r = client.post(path, json=padded)
    assert r.status_code in (200, 422), r.text
