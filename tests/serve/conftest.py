"""Fixtures for the serve layer: the app in process (httpx ASGITransport) and a real uvicorn
server on 127.0.0.1 and a free port, for what needs a socket (resets, real delays, load,
OpenEnv, MCP, schemathesis)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from simforge.serve import sessions
from simforge.serve.app import SimforgeApp, create_app
from simforge.serve.server import server_config
from simforge.tools import Pack, ToolContext, tool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
MINI_PACK = str(FIXTURES / "packs" / "mini")
ACME = "acme/refund-damaged-order-v1"
TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Live:
    app: SimforgeApp
    url: str
    port: int


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_app() -> Callable[..., SimforgeApp]:
    def make(target: str = MINI, **kwargs: Any) -> SimforgeApp:
        kwargs.setdefault("time_scale", 0.0)
        kwargs.setdefault("token", TOKEN)
        return create_app(target, **kwargs)

    return make


@pytest.fixture
async def client(make_app: Callable[..., SimforgeApp]) -> AsyncIterator[httpx.AsyncClient]:
    app = make_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://simforge.test"
    ) as c:
        c.app = app  # type: ignore[attr-defined]
        yield c


def asgi_client(app: SimforgeApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://simforge.test"
    )


@pytest.fixture
def live_server() -> Iterator[Callable[..., Live]]:
    """Start uvicorn in a thread on 127.0.0.1; every server started is stopped at teardown."""
    started: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(target: str = MINI, **kwargs: Any) -> Live:
        kwargs.setdefault("time_scale", 0.0)
        kwargs.setdefault("token", TOKEN)
        ws_compression = kwargs.pop("ws_compression", False)  # `simforge serve --ws-compression`
        app = create_app(target, **kwargs)
        port = free_port()
        # the configuration `simforge serve` runs with (deadlines, keep-alive, ws limit)
        config = server_config(
            app, "127.0.0.1", port, app.state.manager.limits, ws_compression=ws_compression,
            log_level="error", lifespan="on",
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        started.append((server, thread))
        return Live(app, f"http://127.0.0.1:{port}", port)

    yield start
    for server, thread in started:
        server.should_exit = True
        thread.join(timeout=10)


async def create_session(c: httpx.AsyncClient, **body: Any) -> tuple[str, dict[str, str]]:
    """A session on the control plane: ``(its id, the headers its agent calls with)``. A short
    id of the test's own is marked ``insecure_id``."""
    if "session_id" in body:
        body.setdefault("insecure_id", True)
    r = await c.post("/sessions", json=body, headers=AUTH)
    assert r.status_code == 201, r.text
    data = r.json()
    return data["session"]["session_id"], {"Authorization": f"Bearer {data['tool_token']}"}


def mcp_client(url: str, headers: dict[str, str]) -> Any:
    """The official MCP client over streamable HTTP, sending ``headers`` (a tool token)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers)))


def devices_pack() -> Pack:
    """A pack whose tools are named like OpenEnv's reserved names (``reset``, ``state``), like
    their aliases (``reset_tool``) and like the message tool (``message_user``)."""
    @tool(kind="write")
    def reset(ctx: ToolContext, device: str) -> dict[str, Any]:
        """Power-cycle a device."""
        return {"device": device, "reset": True}

    @tool(name="state")
    def state_(ctx: ToolContext, device: str) -> dict[str, Any]:
        """A device's state."""
        return {"device": device, "state": "on"}

    @tool(kind="write")
    def reset_tool(ctx: ToolContext, device: str) -> dict[str, Any]:
        """Reset a device's toolbox."""
        return {"device": device, "toolbox": "reset"}

    @tool(kind="write")
    def message_user(ctx: ToolContext, text: str) -> dict[str, Any]:
        """Page the device's owner."""
        return {"paged": text}

    return Pack(name="devices", description="devices", entities=[],
                tools=[reset, state_, reset_tool, message_user], seed=lambda seed, scale: {})


class FakeClock:
    """The served sessions' idle clock, moved by hand (:func:`idle_clock`)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def idle_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(sessions, "clock", fake)
    return fake
