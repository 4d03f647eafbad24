"""``/mcp`` (and ``/s/{session}/mcp``): MCP's streamable HTTP and OpenEnv's JSON-RPC, answered
by a small handler of our own.

**Why by hand.** Behind the official SDK's stateless streamable-HTTP manager a ``tools/call``
cost about ten times a REST call of the same tool (``BENCHMARKS.md``): per request the SDK
builds a transport, starts a task, opens memory streams and a JSON-RPC dispatcher, validates the
envelope against the union of every JSON-RPC message, the params against the protocol's request
models and the result against its result models, and serializes through pydantic; on the
2026-07-28 wire it also ran the whole ``tools/list`` handler before every call with arguments
(to check ``Mcp-Param`` headers), which cost more than everything else. None of that is needed
to answer one request about one simulated call. Here a POST is: its headers scanned once, orjson,
a check of the envelope's few fields, the session's lookup, the call, one dict serialized.

**What it answers.**

- Handshake era (``MCP-Protocol-Version`` absent or 2024-11-05 to 2025-11-25): ``initialize``
  (stateless: nothing is kept), notifications (``202``), ``ping``, ``tools/list``,
  ``tools/call``.
- 2026-07-28 (any other ``MCP-Protocol-Version``): ``server/discover``, ``tools/list``,
  ``tools/call``; the per-request envelope and the routing headers are checked as the SDK's
  classifier (``classify_inbound_request``) checks them: a request every rung passes is let
  through by a few dict lookups (:func:`_routes`), any other goes to the classifier itself for
  its verdict and its words; ``Mcp-Param`` headers are checked against the tool's schema when
  it declares any.
- OpenEnv's extensions (``openenv/session/create``, ``openenv/session/close``: they create and
  delete sessions, so they take the server's token) and its ``session_id`` param on
  ``tools/list`` and ``tools/call``.
- Anything else: ``-32601``.

What the SDK builds is still built with the SDK: the tool list, the ``initialize`` and
``server/discover`` results are its models, put through its per-version serializer once per
catalog and version (:class:`~.mcp_server.McpCatalog`). A call's result is a plain dict in
``CallToolResult``'s wire shape; the tests hold it to the SDK's serializer, and every answer to
the SDK server's own (:func:`~.mcp_server.sdk_server`).

**HTTP status.** A client of the streamable-HTTP transport (it accepts ``text/event-stream`` or
sends ``MCP-Protocol-Version``, as the official client always does) gets the transport's
statuses: ``400`` for a body that is not one JSON-RPC request, ``404`` for an unknown session,
and on the 2026-07-28 wire the SDK's table (``ERROR_CODE_HTTP_STATUS``). A plain JSON-RPC client
(OpenEnv's validator and clients) gets ``200`` with the JSON-RPC error, as OpenEnv requires of
``POST /mcp``. A known session without its tool token is ``401`` for everyone, before the body
is read. Nothing here answers a traceback: an unexpected exception is logged once and answered
``-32603``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    NAME_BEARING_METHODS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    unsupported_protocol_version_rejection,
    validate_mcp_param_headers,
)
from mcp_types import methods
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from .control_plane import token_matches
from .mcp_server import (
    INSTRUCTIONS,
    SERVER_NAME,
    SERVER_VERSION,
    call_result,
    call_tool,
    session_catalog,
    stamp,
)
from .problems import Problem, parse_json
from .sessions import DEFAULT_SESSION, ServedSession, SessionManager, authorize
from .tool_plane import Receive, Send

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000
"""JSON-RPC's generic server error (OpenEnv's code for a server at capacity)."""
UNAUTHORIZED = -32001
"""Ours: the request lacks the credential it needs (HTTP 401 beside it)."""
VERSION_KEY = types.PROTOCOL_VERSION_META_KEY
CAPABILITIES_KEY = types.CLIENT_CAPABILITIES_META_KEY
DEFAULT_VERSION = types.DEFAULT_NEGOTIATED_VERSION
"""The protocol version of a request without ``MCP-Protocol-Version`` (the SDK's default)."""

_JSON = (b"content-type", b"application/json")
_ALLOW = (b"allow", b"POST")
_CAPABILITIES = types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False))


class RpcError(Exception):
    """A JSON-RPC error. ``status`` is the HTTP status for a streamable-HTTP client (``None``:
    the transport's default for ``code``); ``http`` forces the status on every client."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        status: int | None = None,
        http: bool = False,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status
        self.http = http
        self.headers = headers

    def error(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@dataclass
class Rpc:
    """Where one JSON-RPC message came from."""

    version: str = DEFAULT_VERSION
    modern: bool = False
    """The 2026-07-28 wire (per-request envelope)."""
    strict: bool = False
    """A streamable-HTTP client: the transport's HTTP statuses apply."""
    served: ServedSession | None = None
    """The session named by the path or header (authorized), or the WebSocket's own."""
    missing: str | None = None
    """A session named by the path or header that does not exist."""
    authorization: str | None = None
    headers: dict[str, str] | None = None
    """The ``mcp-*`` headers, lower-case (the 2026-07-28 wire's routing checks)."""
    routing: list[tuple[str, str]] | None = None
    """The same as sent, repeats included (a repeated routing header is rejected)."""
    ws: bool = False
    """A ``{"type": "mcp"}`` message of an OpenEnv WebSocket: its session, its token."""


def _unknown_session(sid: str) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        f"no session {sid!r}; sessions are created on the control plane (POST /sessions) or "
        "with openenv/session/create",
        {"session_id": sid},
        status=404,
    )


def _unauthorized(problem: Problem) -> RpcError:
    headers = tuple((k.lower().encode(), v.encode()) for k, v in problem.headers.items())
    return RpcError(UNAUTHORIZED, problem.detail, status=401, http=True, headers=headers)


def _rejection(rejection: InboundLadderRejection) -> RpcError:
    return RpcError(rejection.code, rejection.message, rejection.data)


class JsonRpc:
    """The JSON-RPC core (:meth:`answer`) and its HTTP endpoint (:meth:`__call__`)."""

    def __init__(self, manager: SessionManager, token: str) -> None:
        self.manager = manager
        self.token = token
        self._initialized: dict[tuple[str, str], dict[str, Any]] = {}
        self._discovered: dict[str, dict[str, Any]] = {}

    # -- HTTP ---------------------------------------------------------------------------------

    async def __call__(self, scope: Any, receive: Receive, send: Send, sid: str | None) -> None:
        if scope["method"] != "POST":
            error = RpcError(
                INVALID_REQUEST,
                f"{scope['method']} {scope['path']}: JSON-RPC messages are POSTed here (no "
                "event stream to open, no MCP session to end)",
            )
            await _send(send, 405, _frame(None, error), (_ALLOW,))
            return
        rpc = Rpc()
        accept = b""
        mcp: list[tuple[str, str]] | None = None
        for key, value in scope["headers"]:
            if key == b"authorization":
                rpc.authorization = value.decode("latin-1")
            elif key == b"x-simforge-session":
                if sid is None:
                    sid = value.decode("latin-1")
            elif key == b"accept":
                accept = value
            elif key.startswith(b"mcp-"):  # MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*
                if mcp is None:
                    mcp = []
                mcp.append((key.decode("latin-1"), value.decode("latin-1")))
                if key == b"mcp-protocol-version":
                    rpc.version = mcp[-1][1]
                    rpc.strict = True
                    rpc.modern = rpc.version not in HANDSHAKE_PROTOCOL_VERSIONS
        if b"text/event-stream" in accept:
            rpc.strict = True
        try:
            if sid is not None:
                served = self.manager.sessions.get(sid)
                if served is None:
                    rpc.missing = sid
                else:
                    try:
                        authorize(served, rpc.authorization)
                    except Problem as problem:
                        raise _unauthorized(problem) from None
                    rpc.served = served
            body = await self._body(receive)
        except RpcError as error:
            await _send(send, error.status or 400, _frame(None, error), error.headers)
            return
        if rpc.modern and mcp is not None:
            # what the 2026-07-28 ladder reads: the routing headers (and any Mcp-Param-*)
            rpc.headers = dict(mcp)
            rpc.routing = mcp
        try:
            message = parse_json(body)
        except Problem as problem:  # not JSON (400), or an integer beyond 64 bits (422)
            detail = problem.detail.partition(": ")[2]
            bad = RpcError(PARSE_ERROR, f"Parse error: {detail}") if problem.status == 400 else (
                RpcError(INVALID_REQUEST, f"Invalid Request: {problem.detail}"))
            await _send(send, self._status(bad, rpc), _frame(None, bad))
            return
        status, answer, extra = await self._answer_http(message, rpc)
        await _send(send, status, answer, extra)

    async def _answer_http(
        self, message: Any, rpc: Rpc
    ) -> tuple[int, bytes, tuple[tuple[bytes, bytes], ...]]:
        if type(message) is dict and "id" not in message:
            if rpc.modern:  # the SDK's notification arm: a version it does not serve is told so
                rejection = unsupported_protocol_version_rejection(rpc.version)
                if rejection is not None:
                    error = _rejection(rejection)
                    return self._status(error, rpc), _frame(None, error), ()
            if "method" in message or (rpc.strict and ("result" in message or "error" in message)):
                return 202, b"", ()  # a notification, or a client's response: nothing to answer
        if rpc.routing is not None and rpc.headers is not None and len(rpc.headers) < len(
            rpc.routing
        ) and type(message) is dict:  # an mcp-* header came twice: is it a routing one?
            duplicated = find_duplicated_routing_header(rpc.routing)
            if duplicated is not None and _request_id(message) is not None:
                error = RpcError(types.HEADER_MISMATCH, f"{duplicated} header appears more "
                                                        "than once")
                return self._status(error, rpc), _frame(message["id"], error), ()
        try:
            result = await self.answer(message, rpc)
        except RpcError as error:
            rid = _request_id(message) if type(message) is dict else None
            return self._status(error, rpc), _frame(rid, error), error.headers
        return 200, result, ()

    @staticmethod
    def _status(error: RpcError, rpc: Rpc) -> int:
        if error.http:
            return error.status or 200
        if not rpc.strict:
            return 200
        if error.status is not None:
            return error.status
        if rpc.modern:
            return ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        return 400 if error.code in (PARSE_ERROR, INVALID_REQUEST) else 200

    @staticmethod
    async def _body(receive: Receive) -> bytes:
        """The whole body (its size is the business of :mod:`simforge.serve.guard`)."""
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise RpcError(INVALID_REQUEST, "the client went away", status=499, http=True)
            chunk = message.get("body", b"")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # -- the core -----------------------------------------------------------------------------

    async def answer(self, message: Any, rpc: Rpc) -> bytes:
        """The encoded response to one JSON-RPC request, or :class:`RpcError`."""
        if type(message) is not dict:
            what = "a batch (batches are not supported)" if type(message) is list else (
                type(message).__name__)
            raise RpcError(INVALID_REQUEST, f"Invalid Request: expected one JSON-RPC request "
                                            f"object, got {what}")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or type(method) is not str:
            raise RpcError(INVALID_REQUEST, 'Invalid Request: a request is {"jsonrpc": "2.0", '
                                            '"id", "method", "params"?}')
        rid = _request_id(message)
        if rid is None and not (rpc.ws and message.get("id") is None):
            # MCP: "the ID MUST NOT be null"; OpenEnv's WebSocket clients may leave it out
            raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        params = message.get("params")
        if params is None:
            params = {}
        elif type(params) is not dict:
            raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
        if rpc.modern and not _routes(message, method, params, rpc.headers):
            verdict = classify_inbound_request(message, headers=rpc.headers)
            if isinstance(verdict, InboundLadderRejection):
                raise _rejection(verdict)
        try:
            result = await self._dispatch(method, params, rpc)
        except RpcError:
            raise
        except Problem as problem:
            if problem.status == 401:
                raise _unauthorized(problem) from None
            raise RpcError(SERVER_ERROR, problem.detail, problem.body()) from None
        except Exception:
            log.exception("JSON-RPC %s failed", method)
            raise RpcError(INTERNAL_ERROR, "Internal error") from None
        return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, default=repr)

    async def _dispatch(self, method: str, params: dict[str, Any], rpc: Rpc) -> Any:
        if method == "tools/call":
            served = self._session(params, rpc)
            name = params.get("name")
            arguments = params.get("arguments")
            if type(name) is not str:
                raise RpcError(INVALID_PARAMS, "Invalid params: tools/call needs params.name, "
                                               "a tool's name")
            if arguments is None:
                arguments = {}
            elif type(arguments) is not dict:
                raise RpcError(INVALID_PARAMS, "Invalid params: params.arguments must be an "
                                               "object")
            if rpc.modern:
                self._check_param_headers(served, name, arguments, rpc)
            payload, is_error = await call_tool(served, name, arguments)
            return call_result(payload, is_error, rpc.version if rpc.modern else None)
        if method == "tools/list":
            return session_catalog(self._session(params, rpc).session).listed(rpc.version)
        if method.startswith("openenv/session/"):
            return self._openenv_session(method, params, rpc)
        if rpc.modern:
            if method == "server/discover":
                self._session(params, rpc)
                return self._discover(rpc.version)
        elif method == "initialize":
            self._session(params, rpc)
            return self._initialize(params, rpc.version)
        elif method == "ping":
            self._session(params, rpc)
            return {}
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)

    def _session(self, params: dict[str, Any], rpc: Rpc) -> ServedSession:
        """The session a request speaks for: the path's or header's (already authorized), the
        WebSocket's, OpenEnv's ``params.session_id``, else the default sandbox."""
        if rpc.served is not None:
            return rpc.served
        if rpc.missing is not None:
            raise _unknown_session(rpc.missing)
        sid = params.get("session_id")
        if type(sid) is not str:
            sid = DEFAULT_SESSION
        served = self.manager.sessions.get(sid)
        if served is None:
            raise _unknown_session(sid)
        try:
            authorize(served, rpc.authorization)
        except Problem as problem:
            raise _unauthorized(problem) from None
        return served

    def _check_param_headers(
        self, served: ServedSession, name: str, arguments: dict[str, Any], rpc: Rpc
    ) -> None:
        schema = session_catalog(served.session).header_schemas.get(name)
        if schema is not None and rpc.headers is not None:
            rejection = validate_mcp_param_headers(schema, arguments, rpc.headers)
            if rejection is not None:
                raise _rejection(rejection)

    def _initialize(self, params: dict[str, Any], version: str) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if type(requested) is not str or type(params.get("capabilities", {})) is not dict:
            raise RpcError(INVALID_PARAMS, "Invalid params: initialize needs "
                                           "params.protocolVersion (a string) and capabilities")
        negotiated = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else (
            LATEST_HANDSHAKE_VERSION)
        key = (negotiated, version)
        result = self._initialized.get(key)
        if result is None:
            model = types.InitializeResult(
                protocol_version=negotiated,
                capabilities=_CAPABILITIES,
                server_info=types.Implementation(name=SERVER_NAME, version=SERVER_VERSION),
                instructions=INSTRUCTIONS,
            )
            dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
            result = methods.serialize_server_result("initialize", version, dumped)
            self._initialized[key] = result
        return result

    def _discover(self, version: str) -> dict[str, Any]:
        result = self._discovered.get(version)
        if result is None:
            model = types.DiscoverResult(
                supported_versions=[version],
                capabilities=_CAPABILITIES,
                instructions=INSTRUCTIONS,
            )
            dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
            result = stamp(version, methods.serialize_server_result("server/discover", version,
                                                                     dumped))
            self._discovered[version] = result
        return result

    # -- OpenEnv's session methods -------------------------------------------------------------

    def _require_token(self, method: str, rpc: Rpc) -> None:
        if rpc.ws or token_matches(rpc.authorization, self.token):
            return
        raise RpcError(
            UNAUTHORIZED,
            f"{method} needs the server's token: Authorization: Bearer <token>",
            status=401,
            http=True,
            headers=((b"www-authenticate", b'Bearer realm="simforge"'),),
        )

    def _openenv_session(self, method: str, params: dict[str, Any], rpc: Rpc) -> Any:
        if method == "openenv/session/create":
            self._require_token(method, rpc)
            if rpc.ws and rpc.served is not None:
                return {"session_id": rpc.served.id, "episode_id": rpc.served.episode_id}
            options = {k: params.get(k) for k in ("task", "faults", "episode_id")}
            for key, value in options.items():
                if value is not None and type(value) is not str:
                    raise RpcError(INVALID_PARAMS, f"Invalid params: {key} must be a string")
            seed = params.get("seed")
            if seed is not None and (type(seed) is not int or seed < 0):
                raise RpcError(INVALID_PARAMS, "Invalid params: seed must be a non-negative "
                                               "integer")
            try:
                served = self.manager.create(
                    seed=seed,
                    task=options["task"],
                    faults=options["faults"],
                    episode_id=options["episode_id"],
                )
            except Problem as problem:
                code = INVALID_PARAMS if problem.status == 422 else SERVER_ERROR
                raise RpcError(code, problem.detail, problem.body()) from None
            return {"session_id": served.id, "tool_token": served.tool_token,
                    "episode_id": served.episode_id}
        if method == "openenv/session/close":
            self._require_token(method, rpc)
            sid = params.get("session_id")
            if type(sid) is not str or not sid:
                raise RpcError(INVALID_PARAMS, "Invalid params - 'session_id' is required")
            if rpc.ws and rpc.served is not None and sid == rpc.served.id:
                raise RpcError(INVALID_REQUEST, "Cannot close active WebSocket-managed session "
                                                "via MCP method")
            if sid == DEFAULT_SESSION:
                raise RpcError(INVALID_PARAMS, "the default session cannot be closed")
            if sid not in self.manager.sessions:
                raise RpcError(INVALID_PARAMS, f"Unknown session_id: {sid}")
            self.manager.delete(sid)
            return {"session_id": sid, "closed": True}
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)


JSON_RPC_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One JSON-RPC 2.0 request (or notification).",
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer"]},
        "method": {
            "type": "string",
            "examples": ["initialize", "tools/list", "tools/call", "server/discover",
                         "openenv/session/create", "openenv/session/close"],
        },
        "params": {"type": "object"},
    },
    "required": ["jsonrpc", "method"],
}


def mcp_operation(path: str) -> dict[str, Any]:
    """``POST /mcp``'s OpenAPI operation (answered outside FastAPI, documented beside it)."""
    answer = {"application/json": {"schema": {"type": "object", "description":
                                              "A JSON-RPC 2.0 response."}}}
    operation: dict[str, Any] = {
        "operationId": "mcp" if path == "/mcp" else "session_mcp",
        "summary": "MCP (streamable HTTP) and OpenEnv's JSON-RPC",
        "description": (
            "tools/list and tools/call for a session (the path, `X-Simforge-Session`, "
            "OpenEnv's `params.session_id`, else the default sandbox), with its tool token; "
            "initialize, ping and notifications (handshake era), server/discover "
            "(2026-07-28); openenv/session/create and close with the server's token. "
            "See docs/serving.md."
        ),
        "tags": ["mcp"],
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": JSON_RPC_REQUEST_SCHEMA}}},
        "responses": {
            "200": {"description": "A JSON-RPC response (a result or an error).",
                    "content": answer},
            "202": {"description": "A notification, accepted."},
            "400": {"description": "Not one JSON-RPC request (streamable-HTTP clients).",
                    "content": answer},
            "401": {"description": "The session's tool token (or the server's) is missing.",
                    "content": answer},
            "404": {"description": "An unknown session (streamable-HTTP clients).",
                    "content": answer},
        },
    }
    if path != "/mcp":
        operation["parameters"] = [
            {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
        ]
    return {"post": operation}


def _routes(
    message: dict[str, Any], method: str, params: dict[str, Any], headers: dict[str, str] | None
) -> bool:
    """The 2026-07-28 ladder's verdict on the common request, taken in a few dict lookups: true
    only when every rung of ``classify_inbound_request`` passes (the envelope pair in
    ``params._meta``, the routing headers equal to the body, a version served). Anything else
    goes to the SDK's classifier, which says what is wrong in its own words."""
    meta = params.get("_meta")
    if headers is None or type(meta) is not dict or CAPABILITIES_KEY not in meta:
        return False
    version = meta.get(VERSION_KEY)
    if (
        version not in MODERN_PROTOCOL_VERSIONS
        or headers.get("mcp-protocol-version") != version
        or headers.get("mcp-method") != method
    ):
        return False
    name_key = NAME_BEARING_METHODS.get(method)
    if name_key is None:
        return True
    value = params.get(name_key)
    return value is None or headers.get("mcp-name") == value


def _request_id(message: dict[str, Any]) -> str | int | None:
    """The request's id when it is one JSON-RPC allows MCP to use (a string or an integer)."""
    rid = message.get("id")
    return rid if type(rid) is str or type(rid) is int else None


def _frame(rid: Any, error: RpcError) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error.error()}, default=repr)


async def _send(
    send: Send, status: int, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    headers = [_JSON, (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
