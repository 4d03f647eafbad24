"""The uvicorn server of ``simforge serve``: its HTTP protocol with deadlines on receiving
requests, and the one configuration the CLI and the tests start it with.

**Slow clients.** uvicorn drops a keep-alive connection idle between requests
(``timeout_keep_alive``) but has no timer while a request is being received, and any byte
received cancels the keep-alive timer: a client that opens a connection and sends nothing, or
dribbles its headers a byte at a time (slowloris), holds the connection for as long as it likes
(``h11_max_incomplete_event_size`` bounds the size of the headers, not their time;
``limit_concurrency`` answers 503 to new requests but keeps the slow ones). The protocol here
adds one deadline per request: its headers must be complete within ``header_timeout`` of the
connection opening (or of the request's first byte on a reused connection), and its body
within ``body_timeout`` of the headers; past either, the client gets ``408`` (unless an answer
is already on its way) and the connection is closed. Nothing is timed while the application
works on a request, or while the connection idles between requests: that is the keep-alive
timeout's.

**Keep-alive.** A pooled client reuses an idle connection until its own expiry (httpx, and so
the OpenAI and Anthropic SDKs: 5 s; aiohttp: 15 s); a server that closes it first races the
client's next request on it, which then fails with a read error. The server's keep-alive must
be the longer of the two: 75 s by default (nginx's), where uvicorn's own default is 5 s, the
same as httpx's.

**Direct paths.** In virtual time a tool call and an OpenEnv step wait for nothing, so the
ASGI round trip around them (a task, messages through queues, the answer in pieces) is most
of what the server adds to the simulation. A tool-plane ``POST`` the application's gate wants
is answered where this protocol parsed it (:meth:`_Deadlines._answer_now`), and ``/ws``
messages where :class:`DirectWebSocket` parsed them; whatever may wait takes the ASGI path.
A middleware put between uvicorn and the application keeps the HTTP direct path off (the
gate is found on the application ``server_config`` is given); one that must see every
WebSocket message should drop :data:`DIRECT_WS` from the scope's extensions.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any, cast

import uvicorn
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request

from simforge.errors import UsageError

from .guard import Gate
from .sessions import Limits
from .tool_plane import Route

_IDLE, _HEADERS, _BODY = 0, 1, 2
"""What a connection's deadline covers: nothing (between requests: the keep-alive timer's),
a request's headers, its body."""


class _Deadlines(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on receiving each request, and a direct
    path for the tool plane.

    The parser's callbacks only note what is being received (and for which request); the
    timer is set after each chunk of bytes is parsed, to match: a request whose headers and
    body arrive in one chunk, as most do, completes before anything is armed, so it costs no
    timer. The deadlines are the same: a request's first byte and the end of its headers are
    in the chunk being parsed, at the moment the timer is set."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    gate: Gate | None = None
    """The application's gate, whose ``now`` answers tool-plane requests where they were
    parsed (:meth:`_answer_now`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._receiving_body = False
        self._phase = _IDLE
        self._request = 0
        self._armed = (_IDLE, 0)
        """The ``(phase, request)`` the timer is set for."""
        self._held: tuple[RequestResponseCycle, Any, Any] | None = None
        """A request the gate wants (with its route), its body still coming: no task was
        started for it."""
        self._idle_since: float | None = None
        """When the connection last fell idle (its last response complete, nothing received
        since); ``None`` while a request is on its way or being answered."""
        self._head: tuple[object, bytes] = ((), b"")
        """uvicorn's default headers (``date``, ``server``) as bytes, and the list they were
        joined from: uvicorn replaces the list once a second."""

    def _sync(self) -> None:
        wanted = (self._phase, self._request)
        if wanted == self._armed:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._armed = wanted
        if self._phase != _IDLE:
            seconds = self.header_timeout if self._phase == _HEADERS else self.body_timeout
            self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        self._phase = _IDLE
        self._sync()

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if self._receiving_body:  # the application has the headers and waits for the body
            answer = cycle is not None and not cycle.response_started
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # what it reads next is the client going away
                cycle.message_event.set()
        else:  # headers: no answer is on its way, unless a pipelined one is
            answer = cycle is None or cycle.response_complete
        if answer:
            self.transport.write(_TIMED_OUT)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._phase = _HEADERS  # a client that connects and sends nothing
        self._sync()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._sync()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.timeout_keep_alive_task is not None:  # the keep-alive timer, below
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        super().connection_lost(exc)

    # -- keep-alive: one timer per idle stretch, not one per request -----------------------------
    #
    # uvicorn cancels its keep-alive timer whenever bytes arrive and starts a new one after every
    # response: a timer handle made and cancelled per request. Here bytes arriving only note that
    # the connection is busy; the timer, when it fires, closes the connection if it has been idle
    # for the whole keep-alive since its last response, and otherwise waits for the rest of it
    # (or, busy, for the next response to start it again). The same connections are closed, at
    # the same moments.

    def _unset_keepalive_if_required(self) -> None:
        self._idle_since = None

    def on_response_complete(self) -> None:
        # uvicorn's, but for the keep-alive timer
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._idle_since = None
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self._idle_since = self.loop.time()
            if self.timeout_keep_alive_task is None:
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self._keep_alive_due)

    def _keep_alive_due(self) -> None:
        self.timeout_keep_alive_task = None
        idle_since = self._idle_since
        if idle_since is None:  # busy: the next response starts the timer again
            return
        left = idle_since + self.timeout_keep_alive - self.loop.time()
        if left > 0:
            self.timeout_keep_alive_task = self.loop.call_later(left, self._keep_alive_due)
        else:
            self.timeout_keep_alive_handler()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._receiving_body = False
        self._phase = _HEADERS
        self._request += 1

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._receiving_body = True
        self._phase = _BODY

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._receiving_body = False
        self._phase = _IDLE
        held = self._held
        if held is not None:  # a tool call whose body is in: the direct path's, below
            self._held = None
            cycle, app, target = held
            assert self.gate is not None
            if not self._answer_now(cycle, self.gate, target):
                super()._start_asgi_task(cycle, app)

    # -- the direct path: a tool call answered where it was parsed -------------------------------
    #
    # uvicorn starts a task per request as soon as its headers are in, and the application
    # then reads the body and answers through ASGI messages, each response in two writes. A
    # tool-plane request the gate wants gets no task: once its body is in, the gate answers it
    # at once (in virtual time nothing in a call waits), and the response goes out in one
    # write; keep-alive, pipelining and the deadlines are uvicorn's and this protocol's, as
    # for any request. What the gate does not answer (``None``) is started as uvicorn would
    # have started it, its body already read.

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        gate = self.gate
        if gate is not None and app is self.app and not cycle.waiting_for_100_continue:
            # (a client that waits for 100 Continue before it sends the body gets it from
            # uvicorn, when the app reads)
            target = gate.wants(cast(Any, cycle.scope))
            if target is not None:
                if cycle.more_body:
                    self._held = (cycle, app, target)
                    return
                if self._answer_now(cycle, gate, target):  # pipelined: its body was in
                    return  # before its turn
        super()._start_asgi_task(cycle, app)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self._held is not None and self.flow.read_paused:
            # uvicorn pauses reading past 64 KiB until the application reads; a held request
            # has no reader yet, and its body is within the limit (Gate.wants): read it whole
            self.flow.resume_reading()

    def _answer_now(self, cycle: RequestResponseCycle, gate: Gate, target: Route) -> bool:
        if self.flow.write_paused or cycle.disconnected:
            return False  # uvicorn's way, which waits for the client to read
        try:
            answer = gate.now(cast(Any, cycle.scope), bytes(cycle.body), target)
        except Exception:
            self.logger.exception("Exception in ASGI application\n")
            answer = 500, [(b"content-type", b"text/plain; charset=utf-8"),
                           (b"content-length", b"21"), (b"connection", b"close")], \
                b"Internal Server Error"
            cycle.keep_alive = False
        if answer is None:
            return False
        status, headers, body = answer
        defaults = self.server_state.default_headers
        if defaults is not self._head[0]:
            self._head = defaults, b"".join(b"%s: %s\r\n" % pair for pair in defaults)
        out = [STATUS_LINE[status], self._head[1]]
        for name, value in headers:
            out += (name, b": ", value, b"\r\n")
        if not cycle.keep_alive:
            out.append(b"connection: close\r\n")
        out += (b"\r\n", body)
        cycle.response_started = cycle.response_complete = True
        self.transport.write(b"".join(out))
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()
        return True

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the WebSocket protocol takes the connection over
        super().handle_websocket_upgrade()


_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 32\r\nconnection: close\r\n\r\nthe request was not sent in time"
)


DIRECT_WS = "simforge.ws.direct"
"""The ASGI scope extension under which :class:`DirectWebSocket` offers itself to the
application: ``scope["extensions"][DIRECT_WS].direct = handler`` once the WebSocket is
accepted."""


class Reclaim:
    """A full collection of the garbage collector after every ``every`` closed WebSocket
    connections, run from the event loop once the close is handled.

    What uvicorn and ``websockets`` make for a connection (the protocol, its transport,
    parser, queues, events and timers) is a web of reference cycles, about 26 KB a
    connection, that only the collector frees. A connection that lives through a few young
    collections (a trainer's, playing episodes) leaves it in the oldest generation, and
    ``serve``'s thresholds make full collections rare (:func:`~.cli.tune_gc`: one per about a
    hundred million allocations), so a server whose trainers reconnect grew by every
    connection they closed: 5,760 connections of a reset and 30 steps each, 32 at a time, took
    ``simforge serve`` from 124 to 273 MB with their episodes already closed
    (:meth:`~.sessions.SessionManager.discard`), 162 MB with this. Closed connections are
    what makes that garbage, so they set the pace: a full collection walks what is alive (the
    sessions' records; the packs are frozen at start), a few milliseconds, once per ``every``
    connections, and
    what waits for it is bounded by ``every`` connections' worth. A server whose connections
    are long-lived, as in the benchmarks, never pays it. (Breaking those cycles at
    ``connection_lost`` instead would mean clearing attributes of uvicorn's and
    ``websockets``' objects that they may still read.)"""

    def __init__(self, every: int) -> None:
        if every < 1:
            raise UsageError(f"ws_closes_per_collection must be at least 1, got {every}")
        self.every = every
        self.closed = 0

    def connection_closed(self, loop: asyncio.AbstractEventLoop) -> None:
        self.closed += 1
        if self.closed >= self.every:
            self.closed = 0
            loop.call_soon(gc.collect)


class DirectWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's sans-IO WebSocket protocol (``websockets``' parser and framing, its
    handshake, close, keepalive and limits unchanged) with a direct path for messages.

    The application may set :attr:`direct` to ``handler(text) -> bytes | None``. A text
    message that arrives while the application waits for the next message (nothing of
    its own in flight, the transport writable) is then answered where it was parsed:
    ``handler``'s bytes go out at once as one text frame, with no ASGI message, queue, task
    wake-up or pause of reading around it, and no decoding of the reply to ``str`` and back.
    ``None`` from ``handler`` (it cannot answer without waiting), a binary message or a busy
    application take uvicorn's way: the message is queued for the application's ``receive``,
    in order. A server running the application without this protocol simply never offers
    the extension."""

    direct: Callable[[str], bytes | None] | None = None
    reclaim: Reclaim | None = None
    """Told of each closed connection (:func:`server_config` sets one per server)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idle = False
        """The application waits in ``receive`` with nothing queued: a message answered here
        cannot overtake one of its own."""

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # none when the handshake was refused
        if scope is not None:
            scope["extensions"][DIRECT_WS] = self

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.reclaim is not None:
            self.reclaim.connection_closed(self.loop)

    async def receive(self) -> Any:
        if self.queue.empty():
            self.idle = True
        return await super().receive()

    def send_receive_event_to_app(self) -> None:
        handler = self.direct
        if (handler is not None and self.idle and self.curr_msg_data_type == "text"
                and not self.close_sent and self.writable.is_set()):
            data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
            try:
                reply = handler(data.decode())
            except UnicodeDecodeError:
                reply = None  # uvicorn's way: closed with 1007
            if reply is not None:
                self.frames = []
                try:
                    self.conn.send_text(reply)
                except InvalidState:  # closing: the reply has no one to go to
                    return
                self.transport.write(b"".join(self.conn.data_to_send()))
                return
        self.idle = False
        super().send_receive_event_to_app()


def protocol_class(
    header_timeout: float, body_timeout: float, gate: Gate | None = None
) -> type[HttpToolsProtocol]:
    """uvicorn's HTTP protocol with these deadlines (``uvicorn.Config(http=...)``), and with
    ``gate``'s direct path for the tool plane."""
    return type(
        "SimforgeHttpProtocol",
        (_Deadlines,),
        {"header_timeout": header_timeout, "body_timeout": body_timeout, "gate": gate},
    )


def server_config(
    app: Any, host: str, port: int, limits: Limits, *, ws_compression: bool = False,
    **kwargs: Any,
) -> uvicorn.Config:
    """The uvicorn configuration ``simforge serve`` runs ``app`` with: the deadlines and
    keep-alive of ``limits``, WebSocket messages held to the body limit and answered on
    :class:`DirectWebSocket`'s direct path where they can be.

    ``ws_compression``: accept a WebSocket client's offer of permessage-deflate (RFC 7692).
    Off by default, where uvicorn's default is on: the OpenEnv ``/ws`` runs over loopback or a
    local network, where deflating every frame was 30% of the server's time (a reset's
    observation is tens of KB) and saved nothing that matters. Clients offer the extension and
    work either way: the server simply does not accept it."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(limits.header_timeout, limits.body_timeout,
                            getattr(app, "gate", None)),
        timeout_keep_alive=limits.keep_alive,  # type: ignore[arg-type]  # a float works
        ws=type("SimforgeWebSocket", (DirectWebSocket,),
                {"reclaim": Reclaim(limits.ws_closes_per_collection)}),
        ws_max_size=limits.max_body_bytes,
        ws_per_message_deflate=ws_compression,
        access_log=False,
        **kwargs,
    )
