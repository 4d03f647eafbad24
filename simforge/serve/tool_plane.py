"""The tool plane: every tool at ``POST /tools/{name}`` (or ``/s/{session}/tools/{name}``).

This is the hot path of a harness under load, so it is a bare ASGI handler in front of FastAPI:
no routing table, no dependency injection, no pydantic model per request; orjson in and out. The
request is checked here (method, JSON; its size before, by :mod:`simforge.serve.guard`); the
arguments are checked by the tool itself inside
the simulation, as a real service would, and a bad argument answers 422 naming it. FastAPI never
sees these paths; ``/openapi.json`` still documents each tool, from its ToolSpec's own schemas.

A call's outcome becomes HTTP: the result with 200; an error with its status and a problem body;
429 with ``Retry-After``; a connection reset (status 0) as a socket that is really aborted; an
empty response as an empty 200 body; timeouts answer 504 after the (scaled) deadline.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from simforge.faults.wire import render as render_wire
from simforge.sim.calls import CallOutcome
from simforge.tools.pack import ToolCatalog

from .problems import PROBLEM_JSON, PROBLEM_SCHEMA, Problem, parse_json, tool_problem
from .sessions import DEFAULT_SESSION, ServedSession, SessionManager, authorize, episode_ended

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

SESSION_HEADER = b"x-simforge-session"
_JSON = [(b"content-type", b"application/json")]
_PROBLEM = [(b"content-type", PROBLEM_JSON.encode())]


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
"""A response: status, headers, body."""


def _credentials(scope: Scope, sid: str | None) -> tuple[str | None, bytes | None]:
    """``(session, authorization)`` of a tool-plane request."""
    authorization = None
    for key, value in scope["headers"]:
        if key == SESSION_HEADER and sid is None:
            sid = value.decode("latin-1")
        elif key == b"authorization":
            authorization = value
    return sid, authorization


def _arguments(body: bytes) -> Any:
    return parse_json(body) if body.strip() else {}


def _length(body: bytes) -> tuple[bytes, bytes]:
    return b"content-length", str(len(body)).encode()


def _problem(exc: Problem) -> Answer:
    body = exc.encode()
    headers = [*_PROBLEM, _length(body)]
    if exc.headers:
        headers.extend((k.lower().encode(), v.encode()) for k, v in exc.headers.items())
    return exc.status, headers, body


class SimulatedReset(ConnectionResetError):
    """Raised where no socket can be aborted (an in-process ASGI client): the caller sees the
    reset as an exception, as it would over a network."""


Route = tuple[str | None, str]
"""A tool-plane request's ``(session or None, tool)``."""


def route(path: str) -> Route | None:
    """``(session or None, tool)`` for a tool-plane path, else ``None`` (FastAPI's business)."""
    if path.startswith("/tools/"):
        name = path[7:]
        sid = None
    elif path.startswith("/s/"):
        sid, _, tail = path[3:].partition("/")
        if not sid or not tail.startswith("tools/"):
            return None
        name = tail[6:]
    else:
        return None
    if not name or "/" in name:
        return None
    return sid, name


def resolve(
    manager: SessionManager,
    session_id: str | None,
    tool: str,
    authorization: str | bytes | None = None,
) -> ServedSession:
    served = manager.get(session_id or DEFAULT_SESSION)
    authorize(served, authorization)
    tools = served.session.tools
    if tool not in tools:
        raise Problem(
            404,
            "unknown_tool",
            f"no tool named {tool!r}; {len(tools)} tools are available",
            errors=[{"field": "path.name", "received": tool, "expected": "a tool name"}],
        )
    return served


async def invoke(
    manager: SessionManager,
    session_id: str | None,
    tool: str,
    args: Any,
    authorization: str | bytes | None = None,
) -> CallOutcome:
    """Run one call on a session (shared by REST and MCP). Raises :class:`Problem` for what is
    not a call: unknown session or tool, a missing tool token, episode over."""
    served = resolve(manager, session_id, tool, authorization)
    outcome = await served.call(tool, args)
    if outcome is None:
        raise episode_ended(served)
    return outcome


def retry_after_header(seconds: float, time_scale: float) -> str:
    """Whole seconds of wall time (the simulated wait, scaled in real-time mode)."""
    wall = seconds * time_scale if time_scale > 0 else seconds
    return str(max(0, math.ceil(wall)))


class ToolPlane:
    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, sid: str | None, name: str
    ) -> None:
        try:
            if scope["method"] != "POST":
                raise Problem(
                    405,
                    "method_not_allowed",
                    f"{scope['method']} {scope['path']}: tools are called with POST",
                    errors=[{"field": "method", "expected": "POST"}],
                    headers={"Allow": "POST"},
                )
            sid, authorization = _credentials(scope, sid)
            body = await self._body(receive)
            outcome = await invoke(self.manager, sid, name, _arguments(body), authorization)
        except Problem as exc:
            await self._send(send, _problem(exc))
            return
        if outcome.wire is not None:  # the answer's bytes are the fault's (faults/wire.py)
            await render_wire(
                send, outcome.wire, outcome.result,
                f"{outcome.call_id}\x1fwire", outcome.call_id, self.manager.time_scale,
                lambda: self._abort(send),
            )
            return
        error = outcome.error
        if error is not None and int(error.get("status", 500)) == 0:
            await self._reset(send)
            return
        await self._send(send, self._answer(outcome))

    def now(self, scope: Scope, body: bytes, sid: str | None, name: str) -> Answer | None:
        """The answer to a whole request, computed at once, for a server that can write it
        without the ASGI round trip (:mod:`simforge.serve.server`); ``None`` when it must go
        the coroutine's way: real time (the answer waits), or a session with a fault plan
        (whose answers may be a wire fault's bytes or a reset socket). Same answers as
        :meth:`__call__`: in virtual time ``invoke`` is this call, without awaiting. Only for a
        ``POST`` (:meth:`~.guard.Gate.wants`)."""
        manager = self.manager
        if manager.time_scale > 0:
            return None
        try:
            sid, authorization = _credentials(scope, sid)
            args = _arguments(body)
            served = resolve(manager, sid, name, authorization)
            if served.session.plan is not None:
                return None
            outcome = served.call_now(name, args)
            if outcome is None:
                raise episode_ended(served)
        except Problem as exc:
            return _problem(exc)
        return self._answer(outcome)

    def _answer(self, outcome: CallOutcome) -> Answer:
        """A call's answer (not a wire fault's, not a reset)."""
        error = outcome.error
        call_id = (b"x-simforge-call-id", outcome.call_id.encode())
        if error is None:
            result = outcome.result
            body = b"" if result == "" else orjson.dumps(result, default=repr)
            return 200, [*_JSON, _length(body), call_id], body
        answer = tool_problem(error)
        body = answer.encode()
        headers = [*_PROBLEM, _length(body), call_id]
        if answer.retry_after is not None:
            wait = retry_after_header(answer.retry_after, self.manager.time_scale)
            headers.append((b"retry-after", wait.encode()))
        return int(error.get("status", 500)), headers, body

    @staticmethod
    async def _body(receive: Receive) -> bytes:
        """The whole body (its size is the business of :mod:`simforge.serve.guard`)."""
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Problem(499, "client_disconnected", "the client went away")
            chunk = message.get("body", b"")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @staticmethod
    async def _send(send: Send, answer: Answer) -> None:
        status, headers, body = answer
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def _abort(send: Send) -> None:
        """Close the connection mid-body (a truncated answer, garbage then close)."""
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        if transport is None:
            raise SimulatedReset("connection closed before the body was complete (simulated)")
        transport.abort()
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    @staticmethod
    async def _reset(send: Send) -> None:
        """Abort the socket with a TCP RST (SO_LINGER 0), the way a dropped connection looks to
        a client. uvicorn's ``send`` is a bound method of its request cycle, which holds the
        transport; behind anything else there is no socket, and the reset is an exception."""
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        if transport is None:
            raise SimulatedReset("connection reset by peer (simulated)")
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        # let the protocol see the loss, so that the server does not answer a 500 on a dead socket
        await asyncio.sleep(0)
        await asyncio.sleep(0)


# -- the OpenAPI description of the tool plane ---------------------------------------------------


def _hoist(schema: Any, prefix: str, components: dict[str, Any]) -> Any:
    """A tool schema with its ``$defs`` moved to ``components/schemas`` under ``prefix``, so
    that every ``$ref`` resolves inside the OpenAPI document (no type is lost on the way)."""
    if not isinstance(schema, dict):
        return schema
    raw = orjson.dumps(schema).decode()
    raw = raw.replace('"#/$defs/', f'"#/components/schemas/{prefix}')
    out = orjson.loads(raw)
    for name, sub in (out.pop("$defs", None) or {}).items():
        components[f"{prefix}{name}"] = sub
    return out


def tool_operations(catalog: ToolCatalog) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(paths, component schemas)`` for every tool: its input schema as the request body, its
    output schema as the 200 answer, tagged by system. Only the spec's agent-facing fields
    (name, description, schemas, kind, system) go in: nothing of scenarios or validators."""
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {"Problem": PROBLEM_SCHEMA}
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for tool in catalog.values():
        spec = tool.spec
        prefix = f"{spec.name}__"
        input_schema = _hoist(spec.input_schema, prefix, components)
        output_schema = _hoist(spec.output_schema, prefix, components) or {}
        description = spec.description.strip()
        paths[f"/tools/{spec.name}"] = {
            "post": {
                "operationId": spec.name,
                "summary": description.splitlines()[0] if description else spec.name,
                "description": description
                + f"\n\nKind: {spec.kind}. Session: the `X-Simforge-Session` header, or call "
                f"`/s/{{session_id}}/tools/{spec.name}`; without either, the default session.",
                "tags": [spec.system or "tools"],
                "parameters": [
                    {
                        "name": "X-Simforge-Session",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                        "description": "The session to call; the default session when absent.",
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": input_schema}},
                },
                "responses": {
                    "200": {
                        "description": "The tool's result.",
                        "content": {"application/json": {"schema": output_schema}},
                    },
                    "4XX": {"description": "A client or business error.", "content": problem},
                    "429": {
                        "description": "Rate limited; retry after the given seconds.",
                        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                        "content": problem,
                    },
                    "5XX": {
                        "description": "A (simulated) service failure or timeout.",
                        "content": problem,
                    },
                },
                "x-simforge-kind": spec.kind,
            }
        }
    return paths, components
