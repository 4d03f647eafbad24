"""A real (if tiny) OpenAI-compatible endpoint for tests: FastAPI served by uvicorn on 127.0.0.1.

It serves ``POST /v1/chat/completions`` and nothing else, answering from a scripted queue::

    from tests.fakes.openai_server import Reply, completion, serve_fake, tool_call

    with serve_fake([Reply(429, headers={"retry-after": "2"}), Reply(body=completion("hi"))]) as s:
        client = ChatClient(ChatConfig(base_url=s.base_url, model="m"))
        ...
        s.requests[0].body["model"]          # every request, as received, in arrival order

Each :class:`Reply` is a status, optional headers, and either a JSON ``body`` or raw ``text``,
plus an optional ``delay`` (seconds the handler waits before answering, holding the request
"in flight"). An item of the queue may also be a callable ``(body) -> Reply`` (for replies that
depend on the conversation, such as "answer the n-th assistant turn"). When the queue runs out
the server answers ``default`` if one was given, else ``410`` with a JSON error saying so (a 4xx
that no client retries, so an under-scripted test fails fast and says why).

The server counts requests in flight; :attr:`FakeServer.max_in_flight` is the most it saw at
once (used to check client-side concurrency bounds). It works with any HTTP client, including the
official ``openai`` SDK (``OpenAI(base_url=server.base_url, api_key="x")``).

Import it as ``tests.fakes.openai_server`` (``tests`` is a namespace package, found from the
repository root when pytest runs there).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response

__all__ = ["FakeServer", "Received", "Reply", "completion", "serve_fake", "tool_call"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: ``status``, ``headers``, a JSON ``body`` or raw ``text`` (``text``
    wins when both are given; neither means an empty body), and a ``delay`` in seconds."""

    status: int = 200
    body: Any = None
    text: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as the server got it: the JSON body (the raw text when it was not JSON), the
    headers, lower-cased, and the client's ``host:port`` (one per connection it opened)."""

    body: Any
    headers: dict[str, str]
    peer: str | None = None


ReplySource = Reply | Callable[[Any], Reply]


class FakeServer:
    """The running server. ``base_url`` is ``http://127.0.0.1:PORT/v1`` (``port`` alone too);
    ``requests`` lists every :class:`Received` in arrival order; ``in_flight`` and
    ``max_in_flight`` count requests being answered now and at most at once; :meth:`add`
    queues more replies; :meth:`stop` shuts it down (done on leaving :func:`serve_fake`)."""

    def __init__(self, replies: Iterable[ReplySource], default: Reply | None = None) -> None:
        self._queue: deque[ReplySource] = deque(replies)
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.app = self._build_app()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", loop="asyncio",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True,
            name=f"fake-openai-{self.port}",
        )

    def add(self, *replies: ReplySource) -> None:
        """Append replies to the queue (the server may already be running)."""
        with self._lock:
            self._queue.extend(replies)

    def _next(self, body: Any) -> Reply:
        with self._lock:
            source = self._queue.popleft() if self._queue else None
        if source is None:
            if self._default is not None:
                return self._default
            return Reply(410, body={"error": {"message": "fake server: no scripted reply left"}})
        return source if isinstance(source, Reply) else source(body)

    def _build_app(self) -> FastAPI:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

        @app.post("/v1/chat/completions")
        async def chat_completions(request: Request) -> Response:
            raw = await request.body()
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with self._lock:
                peer = f"{request.client.host}:{request.client.port}" if request.client else None
                headers = {k.lower(): v for k, v in request.headers.items()}
                self.requests.append(Received(body, headers, peer))
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                reply = self._next(body)
                if reply.delay > 0:
                    await asyncio.sleep(reply.delay)
            finally:
                with self._lock:
                    self.in_flight -= 1
            if reply.text is not None:
                content, media = reply.text.encode(), "text/plain"
            elif reply.body is not None:
                content, media = json.dumps(reply.body).encode(), "application/json"
            else:
                content, media = b"", "text/plain"
            return Response(content, reply.status, headers=reply.headers, media_type=media)

        return app

    def start(self) -> FakeServer:
        self._thread.start()
        for _ in range(500):  # up to 5 s
            if self._server.started or not self._thread.is_alive():
                break
            threading.Event().wait(0.01)
        if not self._server.started:
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def serve_fake(
    replies: Iterable[ReplySource] = (), *, default: Reply | None = None
) -> Iterator[FakeServer]:
    """Run a :class:`FakeServer` for the ``with`` block."""
    server = FakeServer(replies, default).start()
    try:
        yield server
    finally:
        server.stop()


def tool_call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    """An OpenAI tool call; ``arguments`` is JSON-encoded unless it already is a string."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if id is not None:
        call = {"id": id, **call}
    return call


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    usage: dict[str, int] | None = None,
    model: str = "fake-model",
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A chat-completion body with one choice; ``usage`` defaults to a small fixed count."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
        }],
        "usage": usage if usage is not None else
        {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
