"""``create_app``: one FastAPI application serving a scenario (or a pack) four ways.

::

    POST /tools/{name}, /s/{sid}/tools/{name}   tool plane (bare ASGI, hot path)   open
    POST /s/{sid}/messages, /s/{sid}/finish     the conversation (agent plane)     open
    POST /mcp, /s/{sid}/mcp                     MCP (streamable HTTP), OpenEnv's    open
                                                JSON-RPC (bare ASGI, hot path)
    /sessions/...                               control plane (FastAPI router)      token
    /ws, POST /reset, POST /step, GET /state    OpenEnv (WebSocket, HTTP)           token
    /health, /schema, /metadata                 OpenEnv discovery                   open
    /openapi.json, /docs                        every tool, from its ToolSpec       open

The open surfaces are what an agent under test may reach; none of them reads a score, a
trajectory, an expected state or a validator setting. Every request passes one ASGI gate
(:mod:`simforge.serve.guard`): the body limit, before any route reads or authenticates
anything, then the tool plane and MCP dispatched before FastAPI's routing, so the hot path pays
for no other middleware, and a connection reset can reach uvicorn's socket. ``info.version`` is the
version of the HTTP API (``1.0.0``: OpenEnv's validator reads it as its ``openenv-http/1.x``
profile).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from simforge.config import NotFound
from simforge.scenario.plugins import PluginError, load_pack
from simforge.scenario.registry import LoadedScenario, default_registry, sandbox_scenario
from simforge.tools.pack import Pack

from .agent_plane import agent_router
from .control_plane import control_router
from .guard import Gate, Refusal
from .jsonrpc import JsonRpc, mcp_operation
from .openenv import openenv_router
from .problems import install_handlers
from .sessions import Limits, SessionManager
from .tool_plane import Receive, Scope, Send, ToolPlane, tool_operations

API_VERSION = "1.0.0"


def resolve_target(target: str | Pack | LoadedScenario) -> LoadedScenario:
    """A scenario id or YAML path, a pack folder or name, or an already loaded one."""
    if isinstance(target, LoadedScenario):
        return target
    if isinstance(target, Pack):
        return sandbox_scenario(target)
    path = Path(target)
    if path.is_dir() and (path / "pack.py").is_file():
        return sandbox_scenario(load_pack(str(path)))
    try:
        return default_registry.get(target)
    except NotFound:
        try:
            return sandbox_scenario(load_pack(target))
        except PluginError:
            pass
        raise


class SimforgeApp(FastAPI):
    """FastAPI behind :class:`~.guard.Gate`: the body limit, then the tool plane and MCP
    answered before routing."""

    tool_plane: ToolPlane
    mcp: JsonRpc
    gate: Gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.gate(scope, receive, send)

    async def _routed(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own routing (everything the gate does not answer itself)."""
        await super().__call__(scope, receive, send)


def create_app(
    target: str | Pack | LoadedScenario,
    *,
    time_scale: float = 1.0,
    token: str | None = None,
    limits: Limits = Limits(),
    task: str | None = None,
    faults: str | None = None,
    seed: int | None = None,
    user: str | None = None,
    refuse: Refusal | None = None,
) -> SimforgeApp:
    """The server for ``target``. ``time_scale`` maps simulated seconds to wall seconds (0:
    answer at once); without ``token`` one is generated (``app.state.token``); ``user`` is the
    simulated user of every session (a spec: ``scripted``, ``llm:MODEL``); ``refuse`` is an
    access policy the gate applies before anything else (:data:`~.guard.Refusal`)."""
    loaded = resolve_target(target)
    token = token or secrets.token_urlsafe(24)
    manager = SessionManager(loaded, time_scale=time_scale, limits=limits, user=user)
    manager.create_default(task=task, seed=seed, faults=faults)
    rpc = JsonRpc(manager, token)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(manager.reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper

    scenario = loaded.scenario
    app = SimforgeApp(
        title=f"simforge: {scenario.id}",
        description=(
            f"Mocked tools of pack `{loaded.pack.name}` ({scenario.id}). Tools are open; "
            "`/sessions` needs `Authorization: Bearer <token>`. See docs/serving.md."
        ),
        version=API_VERSION,
        lifespan=lifespan,
    )
    app.tool_plane = ToolPlane(manager)
    app.mcp = rpc
    app.gate = Gate(app._routed, app.tool_plane, rpc, limits.max_body_bytes, refuse)
    app.state.manager = manager
    app.state.token = token
    install_handlers(app)
    app.include_router(control_router(manager, token))
    app.include_router(agent_router(manager))
    app.include_router(openenv_router(manager, token, rpc))
    _document_tools(app, manager)
    return app


def _document_tools(app: FastAPI, manager: SessionManager) -> None:
    """``/openapi.json`` = FastAPI's own routes + one operation per tool, built from each
    ToolSpec's JSON schemas as they are (see :func:`tool_operations`)."""
    catalog = manager.loaded.all_offered

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            paths, components = tool_operations(catalog)
            paths["/mcp"] = mcp_operation("/mcp")
            paths["/s/{session_id}/mcp"] = mcp_operation("/s/{session_id}/mcp")
            schema["paths"] = {**paths, **schema.get("paths", {})}
            schema.setdefault("components", {}).setdefault("schemas", {}).update(components)
            schema["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            for path, item in schema["paths"].items():
                if path.startswith("/sessions"):
                    for op in item.values():
                        op["security"] = [{"bearer": []}]
            schema["tags"] = [
                {"name": system, "description": f"Tools of the {system} system."}
                for system in sorted({t.spec.system or "tools" for t in catalog.values()})
            ] + [
                {"name": "control plane", "description": "Sessions; needs the token."},
                {"name": "mcp", "description": "MCP and OpenEnv's JSON-RPC."},
                {"name": "openenv", "description": "OpenEnv: discovery, simulation mode."},
            ]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
