"""The gate: :class:`Gate` is the one pure ASGI layer in front of everything. It applies the
body limit to every HTTP request (tool plane, MCP, the conversation, the control plane,
OpenEnv's HTTP routes), so that no route can read a body, or authenticate from one, before the
limit has been applied; then it hands the hot paths (the tool plane, MCP) their requests
before FastAPI's routing, and the rest (WebSockets and lifespan included) to FastAPI.

**The body limit.** A ``Content-Length``
over the limit is answered ``413`` at once, without reading a byte of the body and without
calling the application. A body with no length (``Transfer-Encoding: chunked``) is counted
while the application reads it: past the limit the application is told the client went away,
whatever it was about to answer is dropped, and the answer is ``413``. Both close the
connection (the rest of the body is never read), as does an answer given before a streamed
body was read whole (a ``401``, a ``404``). A request with a ``Content-Length`` within
the limit is passed through untouched: the HTTP parser already holds it to that length, and
the hot path pays for one header scan.

Slow clients are :mod:`simforge.serve.server`'s business.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .problems import PROBLEM_JSON, Problem
from .tool_plane import Answer, Receive, Route, Scope, Send, route

App = Callable[[Scope, Receive, Send], Awaitable[None]]


def body_too_large(limit: int) -> Problem:
    return Problem(
        413,
        "body_too_large",
        f"the request body exceeds {limit} bytes",
        errors=[{"field": "body", "expected": f"at most {limit} bytes"}],
    )


async def _send_problem(send: Send, problem: Problem) -> None:
    body = problem.encode()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Counted:
    """One request whose body has no declared length: ``receive`` counts what arrives, ``send``
    is the application's until the limit is passed. ``transport`` is the server's (the tool
    plane aborts it to simulate a connection reset)."""

    __slots__ = (
        "_receive",
        "_send",
        "complete",
        "exceeded",
        "limit",
        "size",
        "started",
        "transport",
    )

    def __init__(self, receive: Receive, send: Send, limit: int) -> None:
        self._receive = receive
        self._send = send
        self.limit = limit
        self.size = 0
        self.exceeded = False
        self.started = False
        self.complete = False
        self.transport = getattr(getattr(send, "__self__", None), "transport", None)

    async def receive(self) -> MutableMapping[str, Any]:
        if self.exceeded:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.limit:
                self.exceeded = True
                return {"type": "http.disconnect"}
            self.complete = not message.get("more_body", False)
        return message

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if self.exceeded:
            return  # the answer is the 413
        if message["type"] == "http.response.start":
            self.started = True
            if not self.complete:  # answered without the body (a 401, a 404): not read either
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (b"connection", b"close")]}
        await self._send(message)


Refusal = Callable[[Scope], Problem | None]
"""An access policy: the problem to answer a request or WebSocket with before anything else
sees it, or ``None`` to let it through (the external harness's: its own session only)."""


class Gate:
    """The one ASGI layer in front of the application: an access policy (``refuse``), every
    HTTP request's body held to ``limit`` bytes, then the tool plane and MCP answered before
    ``app`` (FastAPI) routes anything else. ``tool_plane(scope, receive, send, session,
    tool)`` and ``mcp(scope, receive, send, session)`` are the hot paths' handlers."""

    def __init__(
        self, app: App, tool_plane: Any, mcp: Any, limit: int, refuse: Refusal | None = None
    ) -> None:
        self.app = app
        self.tool_plane = tool_plane
        self.mcp = mcp
        self.limit = limit
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.refuse is not None and scope["type"] in ("http", "websocket"):
            problem = self.refuse(scope)
            if problem is not None:
                if scope["type"] == "http":
                    await _send_problem(send, problem)
                else:  # closed before the handshake is accepted: refused (HTTP 403)
                    await send({"type": "websocket.close", "code": 1008,
                                "reason": problem.detail[:120]})
                return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counted = False
        for key, value in scope["headers"]:
            if key == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = -1
                if length < 0:
                    await _send_problem(send, Problem(
                        400, "invalid_header", "content-length is not a number",
                        errors=[{"field": "header.content-length"}]))
                    return
                if length > self.limit:
                    await _send_problem(send, body_too_large(self.limit))
                    return
                await self._route(scope, receive, send)
                return
            if key == b"transfer-encoding":
                counted = True
        if not counted:  # no length, no chunks: no body (RFC 9112 6.3)
            await self._route(scope, receive, send)
            return
        request = _Counted(receive, send, self.limit)
        try:
            await self._route(scope, request.receive, request.send)
        except Exception:
            if not request.exceeded:
                raise
        if request.exceeded and not request.started:
            await _send_problem(send, body_too_large(self.limit))

    def wants(self, scope: Scope) -> Route | None:
        """Whether :meth:`now` may answer this request once its body is in: a ``POST`` to the
        tool plane with a ``Content-Length`` within the limit (nothing else to count) that the
        access policy lets through. Its route (for :meth:`now`) if so, else ``None``."""
        if scope["method"] != "POST":
            return None
        target = route(scope["path"])
        if target is None:
            return None
        if self.refuse is not None and self.refuse(scope) is not None:
            return None
        length = None
        for key, value in scope["headers"]:
            if key == b"content-length":
                length = value
            elif key == b"transfer-encoding":
                return None
        if length is not None and length.isdigit() and int(length) <= self.limit:
            return target
        return None

    def now(self, scope: Scope, body: bytes, target: Route | None = None) -> Answer | None:
        """The answer to a request :meth:`wants` (``target``: the route it gave), computed at
        once (the tool plane's :meth:`~.tool_plane.ToolPlane.now`); ``None``: through the gate
        as ASGI instead."""
        if target is None:
            target = route(scope["path"])
            assert target is not None
        answer: Answer | None = self.tool_plane.now(scope, body, *target)
        return answer

    def _route(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The handler of an HTTP request whose body is within the limit."""
        path = scope["path"]
        target = route(path)
        if target is not None:
            return self.tool_plane(scope, receive, send, *target)
        if path == "/mcp":
            return self.mcp(scope, receive, send, None)
        if path.startswith("/s/") and path.endswith("/mcp"):
            sid = path[3:-4]
            if sid and "/" not in sid:
                return self.mcp(scope, receive, send, sid)
        return self.app(scope, receive, send)
