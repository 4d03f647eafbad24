"""A server on a network, against clients that misbehave on the wire: bodies too large for any
route (declared or streamed), connections held open by headers or bodies that never finish,
and the keep-alive a pooled client relies on. Over a real uvicorn server on 127.0.0.1, started
with the configuration ``simforge serve`` uses."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from simforge.serve.sessions import Limits

from .conftest import MINI

MIB = 1 << 20
BIG = 200 * MIB
ROUTES = [
    "/sessions/x/step",  # control plane, no token: read before its 401 until now
    "/sessions",
    "/tools/get_customer",
    "/s/default/tools/get_customer",
    "/mcp",
    "/s/x/mcp",
    "/s/x/messages",
    "/reset",  # OpenEnv's HTTP
    "/step",
]
UNREAD = {"/s/x/messages"}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """The process's peak resident memory above where it stood, sampled every 2 ms (the server
    runs in a thread of this process)."""
    base = _rss()
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss() - base)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def push(port: int, path: str, total: int, *, chunked: bool) -> tuple[bytes, int]:
    """POST ``total`` bytes to ``path`` over a raw socket, as fast as the server takes them;
    answers ``(the status line, bytes the server took before it answered or hung up)``."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(20)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
        .encode()
    )
    answer = bytearray()

    def read() -> None:
        try:
            while b"\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    return
                answer.extend(data)
        except OSError:
            return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    block = b" " * (64 * 1024)
    frame = b"%x\r\n%s\r\n" % (len(block), block) if chunked else block
    sent = 0
    try:
        while sent < total and reader.is_alive():
            sock.sendall(frame)
            sent += len(block)
    except OSError:
        pass  # the server hung up: the rest was never read
    reader.join(timeout=20)
    sock.close()
    return bytes(answer).partition(b"\r\n")[0], sent


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mb_body_to_any_route_is_413_before_it_is_read(live_server, chunked):
    live = live_server(MINI)
    for path in ROUTES:
        with peak_rss_growth() as growth:
            status, sent = push(live.port, path, BIG, chunked=chunked)
        # a route that answers before it reads (an unknown session) refuses the body too
        refused = (b"413", b"404") if chunked and path in UNREAD else (b"413",)
        assert status[9:12] in refused, (path, status)
        assert growth[0] < 20 * MIB, (path, growth[0])
        assert sent < BIG, path
    # and the server is as it was
    assert httpx.post(f"{live.url}/tools/get_customer", json={"customer_id": "C-0001"}
                      ).status_code == 200


def test_a_body_within_the_limit_still_arrives_chunked(live_server):
    live = live_server(MINI)

    def body() -> Iterator[bytes]:
        yield b'{"customer_id": '
        yield b'"C-0001"}'

    r = httpx.post(f"{live.url}/tools/get_customer", content=body(),
                   headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["id"] == "C-0001"


def _dropped_within(sock: socket.socket, seconds: float, dribble: bytes | None) -> bytes | None:
    """Dribble ``dribble`` a byte at a time (or send nothing) until the server hangs up; what it
    answered, or ``None`` if the connection is still open after ``seconds``."""
    sock.setblocking(False)
    deadline = time.monotonic() + seconds
    answer = b""
    position = 0
    while time.monotonic() < deadline:
        try:
            data = sock.recv(4096)
            if not data:
                return answer
            answer += data
        except BlockingIOError:
            pass
        except OSError:
            return answer
        if dribble is not None:
            try:
                sock.send(dribble[position % len(dribble):][:1])
            except OSError:
                return answer
            position += 1
        time.sleep(0.05)
    return None


def test_slow_headers_and_silent_connections_are_dropped_at_the_header_timeout(live_server):
    live = live_server(MINI, limits=Limits(header_timeout=0.5, body_timeout=0.5))
    request = b"POST /tools/get_customer HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"a" * 10_000
    slow = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(30)]
    silent = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(10)]
    started = time.monotonic()
    results = [_dropped_within(s, 10, request) for s in slow]
    results += [_dropped_within(s, 10, None) for s in silent]
    for s in slow + silent:
        s.close()
    assert all(r is not None for r in results)  # every one dropped, none held for 10 s
    assert all(r.startswith(b"HTTP/1.1 408") for r in results if r)
    assert time.monotonic() - started < 10
    # a client that sends its request gets its answer
    assert httpx.post(f"{live.url}/tools/get_customer", json={"customer_id": "C-0001"}
                      ).status_code == 200


def test_a_body_that_never_finishes_is_dropped_at_the_body_timeout(live_server):
    live = live_server(MINI, limits=Limits(header_timeout=0.5, body_timeout=0.5))
    sock = socket.create_connection(("127.0.0.1", live.port))
    sock.sendall(b"POST /tools/get_customer HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
    answer = _dropped_within(sock, 10, b" ")
    sock.close()
    assert answer is not None and answer.startswith(b"HTTP/1.1 408")


def test_a_reused_connection_times_each_request_it_receives(live_server):
    """A request that arrives whole costs no timer, and the next request on the connection,
    sent with the end of the first or after it, has its own header deadline."""
    live = live_server(MINI, limits=Limits(header_timeout=0.5, body_timeout=0.5))
    body = b'{"customer_id": "C-0001"}'
    whole = (b"POST /tools/get_customer HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    for first_with_second in (False, True):
        sock = socket.create_connection(("127.0.0.1", live.port))
        sock.sendall(whole + (whole[:20] if first_with_second else b""))
        started = time.monotonic()
        answer = _dropped_within(sock, 10, whole[20 if first_with_second else 0:])
        sock.close()
        assert answer is not None and time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 408" in answer, answer[-200:]


def test_an_idle_keep_alive_connection_outlives_the_header_timeout(live_server):
    """The header deadline times requests being received, not the idle time between them:
    that is the keep-alive's, longer than a pooled client's expiry."""
    live = live_server(MINI, limits=Limits(header_timeout=0.3, keep_alive=30))
    with httpx.Client(base_url=live.url, limits=httpx.Limits(keepalive_expiry=20)) as c:
        first = c.post("/tools/get_customer", json={"customer_id": "C-0001"})
        time.sleep(1.0)
        second = c.post("/tools/get_customer", json={"customer_id": "C-0001"})
    assert first.status_code == second.status_code == 200
    assert live.app.state.manager.limits.keep_alive > 5.0  # above httpx's default expiry
    assert Limits().keep_alive > 15.0  # and aiohttp's


def test_keep_alive_counts_from_the_last_answer(live_server):
    """A connection whose requests keep coming, each sooner than the keep-alive after the last
    answer, stays open well past the keep-alive; once idle for the whole keep-alive it is
    closed, and not much later."""
    keep_alive = 0.6
    live = live_server(MINI, limits=Limits(keep_alive=keep_alive, header_timeout=5))
    body = b'{"customer_id": "C-0001"}'
    whole = (b"POST /tools/get_customer HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sock = socket.create_connection(("127.0.0.1", live.port))
    sock.settimeout(5)
    try:
        started = time.monotonic()
        for _ in range(6):  # 6 x 0.35 s: 3.5 keep-alives in all
            sock.sendall(whole)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
            time.sleep(0.35)
        assert time.monotonic() - started > 3 * keep_alive
        sock.sendall(whole)  # still open
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        idle = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the server
        waited = time.monotonic() - idle
        assert keep_alive * 0.8 < waited < keep_alive + 1.5, waited
    finally:
        sock.close()
