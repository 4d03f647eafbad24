"""A session's tools as MCP sees them, the calls behind ``tools/call``, and the official SDK's
server over the same sessions.

:class:`McpCatalog` is one tool catalog as MCP and OpenEnv list it: each tool's input and output
schema and its annotations (:mod:`.annotations`), under a name that collides with nothing. Beside
the pack's tools it lists :data:`MESSAGE_TOOL` (``message_user``, or ``simforge_message_user`` in
a pack that has a tool of that name): the agent's message to the user, answered with the user's
reply, the same move as ``POST /s/{sid}/messages``; when the reply says ``ended``, the
conversation is over and that message was the agent's final answer. A pack tool named like one
of OpenEnv's reserved names (``reset``, ``step``, ``state``, ``close``: an OpenEnv client's own
methods) is listed as ``<name>_tool``; the REST tool plane and the env API keep the pack's names.

:func:`call_tool` is a ``tools/call``: the same simulated call as ``POST /tools/{name}``; an error
is an error result (``isError``) carrying the problem body, so the model can read it and retry.

``/mcp`` is answered by :mod:`.jsonrpc` (by hand: see there why). :func:`sdk_server` builds the
official SDK's low-level server over the same catalog and calls: the reference the tests hold
the hand-written handler to (the same answer to the same request, in both protocol eras), and
what ``benchmarks/serve.py`` measures the SDK's cost per request with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from simforge.sim.calls import CallOutcome
from simforge.tools.tool import Tool
from simforge.version import __version__

from .annotations import MESSAGE_ANNOTATIONS, tool_annotations
from .control_plane import env_step
from .problems import Problem, tool_problem
from .sessions import DEFAULT_SESSION, ServedSession, SessionManager, authorize, episode_ended

SESSION_SCOPE_KEY = "simforge.session"
MESSAGE_TOOL = "message_user"
RESERVED_NAMES = frozenset({"reset", "step", "state", "close"})
"""OpenEnv's ``RESERVED_TOOL_NAMES``: its clients' own methods, never a tool's name."""
SERVER_NAME = "simforge"
SERVER_VERSION = __version__
SERVER_INFO: dict[str, Any] = {"name": SERVER_NAME, "version": SERVER_VERSION}
INSTRUCTIONS = "Mocked enterprise tools served by simforge."
MESSAGE_DESCRIPTION = (
    "Send a message to the user you are helping and get their reply. When the reply says the "
    "conversation ended, your message was your final answer."
)
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "What you say to the user."},
    },
    "required": ["content"],
    "additionalProperties": False,
}
X_MCP_HEADER = "x-mcp-header"


def message_tool_name(tools: Any) -> str:
    return MESSAGE_TOOL if MESSAGE_TOOL not in tools else f"simforge_{MESSAGE_TOOL}"


class McpCatalog:
    """One catalog as MCP lists it. ``to_pack`` maps each listed name to the pack's tool;
    ``message`` is the message tool's name."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self.tools = tools
        taken = set(tools)
        self.message = message_tool_name(tools)
        while self.message in taken:
            self.message = f"simforge_{self.message}"
        taken.add(self.message)
        self.to_pack: dict[str, str] = {}
        for name in tools:
            listed = name
            if name in RESERVED_NAMES:
                listed = f"{name}_tool"
                while listed in taken:
                    listed += "_"
                taken.add(listed)
            self.to_pack[listed] = name
        self.header_schemas: dict[str, dict[str, Any]] = {
            listed: tools[name].spec.input_schema
            for listed, name in self.to_pack.items()
            if X_MCP_HEADER in orjson.dumps(tools[name].spec.input_schema).decode()
        }
        """Input schemas that carry ``x-mcp-header`` annotations (2026-07-28's ``Mcp-Param``
        headers are checked against them); none in simforge's own packs."""
        self._listed: dict[str, dict[str, Any]] = {}
        self._openenv: list[dict[str, Any]] | None = None

    def sdk_tools(self) -> list[types.Tool]:
        """The listing as the SDK's ``Tool`` models."""
        out = []
        for listed, name in self.to_pack.items():
            spec = self.tools[name].spec
            output = spec.output_schema if spec.output_schema.get("type") == "object" else None
            out.append(
                types.Tool(
                    name=listed,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    output_schema=output,
                    annotations=types.ToolAnnotations.model_validate(tool_annotations(spec)),
                )
            )
        out.append(
            types.Tool(
                name=self.message,
                description=MESSAGE_DESCRIPTION,
                input_schema=MESSAGE_SCHEMA,
                annotations=types.ToolAnnotations.model_validate(MESSAGE_ANNOTATIONS),
            )
        )
        return out

    def listed(self, version: str) -> dict[str, Any]:
        """The ``tools/list`` result at protocol ``version``, as the SDK serializes it (built
        once per version: the SDK's models, its per-version serializer, and on 2026-07-28 the
        ``serverInfo`` stamp)."""
        result = self._listed.get(version)
        if result is None:
            dumped = types.ListToolsResult(tools=self.sdk_tools()).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            result = stamp(version, methods.serialize_server_result("tools/list", version, dumped))
            self._listed[version] = result
        return result

    def openenv_tools(self) -> list[dict[str, Any]]:
        """The listing as OpenEnv's ``ListToolsObservation`` carries it (built once)."""
        if self._openenv is None:
            self._openenv = [
                {"name": t.name, "description": t.description or "",
                 "input_schema": t.input_schema}
                for t in self.sdk_tools()
            ]
        return self._openenv


_CATALOGS: dict[int, tuple[Mapping[str, Tool], McpCatalog]] = {}


def mcp_catalog(tools: Mapping[str, Tool]) -> McpCatalog:
    """The (cached) MCP view of ``tools``. Catalogs are shared by every session of a task, so
    there are a handful; the cache holds each catalog it is keyed by, so an id is never reused."""
    hit = _CATALOGS.get(id(tools))
    if hit is None or hit[0] is not tools:
        hit = (tools, McpCatalog(tools))
        _CATALOGS[id(tools)] = hit
    return hit[1]


class _Offered:
    """A tool as an episode's surface offers it: what a listing reads (its spec)."""

    __slots__ = ("spec",)

    def __init__(self, spec: Any) -> None:
        self.spec = spec


_SURFACED: dict[int, tuple[Any, int, McpCatalog]] = {}


def session_catalog(session: Any) -> McpCatalog:
    """The MCP view of what ``session`` offers now: its task's catalog, or, under tool-surface
    faults, the episode's own (renamed, paraphrased, delayed tools: ``faults/surface.py``),
    rebuilt when the surface changes."""
    surface = session.surface
    if surface is None:
        return mcp_catalog(session.tools)
    version = surface.version(session.now)
    hit = _SURFACED.get(id(surface))
    if hit is None or hit[0] is not surface or hit[1] != version:
        offered = {name: _Offered(spec) for name, spec in surface.offered(session.now).items()}
        hit = (surface, version, McpCatalog(offered))  # type: ignore[arg-type]
        if len(_SURFACED) > 1024:
            _SURFACED.clear()
        _SURFACED[id(surface)] = hit
    return hit[2]


def mcp_tools(
    manager: SessionManager, session_id: str | None, authorization: str | None = None
) -> list[types.Tool]:
    """What ``tools/list`` lists for a session (the default one without an id), as the SDK's
    models."""
    served = manager.get(session_id or DEFAULT_SESSION)
    authorize(served, authorization)
    return session_catalog(served.session).sdk_tools()


def stamp(version: str, result: dict[str, Any]) -> dict[str, Any]:
    """A result as the 2026-07-28 wire requires it: ``resultType`` and the ``serverInfo`` stamp
    (what the SDK's runner adds); unchanged on handshake-era versions."""
    if version in MODERN_PROTOCOL_VERSIONS:
        result.setdefault("resultType", "complete")
        result["_meta"] = {types.SERVER_INFO_META_KEY: SERVER_INFO}
    return result


def call_result(payload: Any, is_error: bool, version: str | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` on the wire: the payload as JSON text, and as structured content
    when it is an object and not an error."""
    text = orjson.dumps(payload, default=repr).decode()
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if not is_error and type(payload) is dict:
        result["structuredContent"] = payload
    return stamp(version, result) if version is not None else result


def outcome_payload(outcome: CallOutcome) -> tuple[Any, bool]:
    """What a call answered, for an MCP result: the result, or the problem body of its error."""
    error = outcome.error
    if error is None:
        return outcome.result, False
    body = tool_problem(error).body()
    if error.get("status") == 0:
        body["detail"] = "connection reset by peer"
    return body, True


def unknown_tool(name: str, catalog: McpCatalog) -> Problem:
    return Problem(
        404,
        "unknown_tool",
        f"no tool named {name!r}; {len(catalog.to_pack)} tools are available",
        errors=[{"field": "path.name", "received": name, "expected": "a tool name"}],
    )


async def message_user(served: ServedSession, arguments: Any) -> tuple[Any, bool]:
    """The message tool: ``{"content"}`` said to the user; ``{"user", "ended"}`` back."""
    content = arguments.get("content") if isinstance(arguments, dict) else None
    if not isinstance(content, str):
        problem = Problem(422, "invalid_argument", "content: expected a string",
                          errors=[{"field": "content", "expected": "string"}])
        return problem.body(), True
    try:
        answer = await env_step(served, {"message": content})
    except Problem as problem:
        return problem.body(), True
    reply = {
        "user": answer["observation"].get("user"),
        "ended": bool(answer["terminated"] or answer["truncated"]),
    }
    return reply, False


async def call_tool(served: ServedSession, name: str, arguments: Any) -> tuple[Any, bool]:
    """One ``tools/call`` on ``served`` (authorized by the caller): ``(payload, is_error)``."""
    catalog = session_catalog(served.session)
    tool = catalog.to_pack.get(name)
    if tool is None:
        if name == catalog.message:
            return await message_user(served, arguments)
        return unknown_tool(name, catalog).body(), True
    try:
        outcome = await served.call(tool, arguments)
    except Problem as problem:
        return problem.body(), True
    if outcome is None:
        return episode_ended(served).body(), True
    return outcome_payload(outcome)


# -- the official SDK's server over the same sessions: the reference -------------------------


def _session_of(ctx: Any) -> str | None:
    request = getattr(ctx, "request", None)
    if request is None:
        return None
    sid = getattr(request, "scope", {}).get(SESSION_SCOPE_KEY)
    if sid:
        return str(sid)
    header = request.headers.get("x-simforge-session")
    return str(header) if header else None


def _served(manager: SessionManager, ctx: Any) -> ServedSession:
    request = getattr(ctx, "request", None)
    try:
        served = manager.get(_session_of(ctx) or DEFAULT_SESSION)
        authorize(served, None if request is None else request.headers.get("authorization"))
    except Problem as problem:
        raise MCPError(code=types.INVALID_PARAMS, message=problem.detail) from None
    return served


def sdk_server(manager: SessionManager) -> Server[Any]:
    """The official SDK's low-level server answering ``tools/list`` and ``tools/call`` over
    ``manager``'s sessions exactly as :mod:`.jsonrpc` does."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        catalog = session_catalog(_served(manager, ctx).session)
        return types.ListToolsResult(tools=catalog.sdk_tools())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        payload, is_error = await call_tool(
            _served(manager, ctx), params.name, params.arguments or {}
        )
        return types.CallToolResult.model_validate(call_result(payload, is_error))

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
    )


def sdk_manager(manager: SessionManager) -> StreamableHTTPSessionManager:
    """:func:`sdk_server` behind the SDK's stateless streamable-HTTP manager (JSON answers), as
    ``/mcp`` was served before :mod:`.jsonrpc`; run it inside ``async with ....run()`` and give
    requests a scope whose :data:`SESSION_SCOPE_KEY` names the session."""
    return StreamableHTTPSessionManager(
        app=sdk_server(manager),
        stateless=True,
        json_response=True,
        max_request_body_size=manager.limits.max_body_bytes,
    )
