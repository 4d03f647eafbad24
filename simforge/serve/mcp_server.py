"""MCP over streamable HTTP at ``/mcp`` (or ``/s/{session}/mcp``), with the official ``mcp``
package's low-level server.

The MCP server is stateless (``stateless=True``, JSON answers): every HTTP request carries the
simforge session it speaks for (path prefix or ``X-Simforge-Session``), so an MCP connection
needs no server-side state of its own and a simforge session is shared by REST and MCP alike.
A tool's MCP form comes from its ToolSpec (input and output schema, a read-only hint); a call is
the same simulated call as ``POST /tools/{name}``, and an error comes back as an error result
(``isError``) carrying the problem body, so the model can read it and retry.

Beside the session's tools, MCP lists one more, :data:`MESSAGE_TOOL` (``message_user``, or
``simforge_message_user`` in a pack that has a tool of that name): the agent's message to the
user, answered with the user's reply, the same move as ``POST /s/{sid}/messages``. When the
reply says ``ended``, the conversation is over and that message was the agent's final answer.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from .control_plane import env_step
from .problems import Problem, tool_problem
from .sessions import DEFAULT_SESSION, SessionManager, authorize
from .tool_plane import invoke

SESSION_SCOPE_KEY = "simforge.session"
MESSAGE_TOOL = "message_user"
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "What you say to the user."},
    },
    "required": ["content"],
    "additionalProperties": False,
}


def message_tool_name(tools: Any) -> str:
    return MESSAGE_TOOL if MESSAGE_TOOL not in tools else f"simforge_{MESSAGE_TOOL}"


def _session_of(ctx: Any) -> str | None:
    request = getattr(ctx, "request", None)
    if request is None:
        return None
    scope = getattr(request, "scope", {})
    sid = scope.get(SESSION_SCOPE_KEY)
    if sid:
        return str(sid)
    header = request.headers.get("x-simforge-session")
    return str(header) if header else None


def _authorization(ctx: Any) -> str | None:
    request = getattr(ctx, "request", None)
    return None if request is None else request.headers.get("authorization")


def _text(data: Any) -> types.TextContent:
    return types.TextContent(type="text", text=orjson.dumps(data, default=repr).decode())


def mcp_tools(
    manager: SessionManager, session_id: str | None, authorization: str | None = None
) -> list[types.Tool]:
    served = manager.get(session_id or DEFAULT_SESSION)
    authorize(served, authorization)
    tools = []
    for spec in served.session.offered_specs():
        output = spec.output_schema if spec.output_schema.get("type") == "object" else None
        tools.append(
            types.Tool(
                name=spec.name,
                description=spec.description,
                input_schema=spec.input_schema,
                output_schema=output,
                annotations=types.ToolAnnotations(read_only_hint=spec.kind == "read"),
            )
        )
    tools.append(
        types.Tool(
            name=message_tool_name(served.session.tools),
            description=(
                "Send a message to the user you are helping and get their reply. When the "
                "reply says the conversation ended, your message was your final answer."
            ),
            input_schema=MESSAGE_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
        )
    )
    return tools


def build_mcp(manager: SessionManager) -> StreamableHTTPSessionManager:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        try:
            tools = mcp_tools(manager, _session_of(ctx), _authorization(ctx))
            return types.ListToolsResult(tools=tools)
        except Problem as problem:
            raise ValueError(problem.detail) from None

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        sid = _session_of(ctx)
        try:
            served = manager.get(sid or DEFAULT_SESSION)
            authorize(served, _authorization(ctx))
            if params.name == message_tool_name(served.session.tools):
                return await _message(served, params.arguments or {})
            outcome = await invoke(
                manager, sid, params.name, params.arguments or {}, _authorization(ctx)
            )
        except Problem as problem:
            return types.CallToolResult(content=[_text(problem.body())], is_error=True)
        if outcome.error is not None:
            body = tool_problem(outcome.error).body()
            if outcome.error.get("status") == 0:
                body["detail"] = "connection reset by peer"
            return types.CallToolResult(content=[_text(body)], is_error=True)
        result = outcome.result
        return types.CallToolResult(
            content=[_text(result)],
            structured_content=result if isinstance(result, dict) else None,
        )

    async def _message(served: Any, arguments: dict[str, Any]) -> types.CallToolResult:
        content = arguments.get("content")
        if not isinstance(content, str):
            problem = Problem(422, "invalid_argument", "content: expected a string",
                              errors=[{"field": "content", "expected": "string"}])
            return types.CallToolResult(content=[_text(problem.body())], is_error=True)
        answer = await env_step(served, {"message": content})
        reply = {
            "user": answer["observation"].get("user"),
            "ended": bool(answer["terminated"] or answer["truncated"]),
        }
        return types.CallToolResult(content=[_text(reply)], structured_content=reply)

    server: Server[Any] = Server(
        "simforge",
        version="1",
        instructions="Mocked enterprise tools served by simforge.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return StreamableHTTPSessionManager(
        app=server,
        stateless=True,
        json_response=True,
        max_request_body_size=manager.limits.max_body_bytes,
    )
