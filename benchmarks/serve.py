"""HTTP benchmark of `simforge serve`, side by side with bare FastAPI and Starlette.

Measured the way ``../shared/peers/run_bench.py`` measures the peer mock servers: each server
pinned to CPU 1 (``taskset -c 1``, one uvicorn worker), ``wrk -t1 -c32 -d10s --latency`` pinned to
CPU 0 after a 3 s warm-up, loopback only. simforge serves ``acme/refund-damaged-order-v1`` with
``--time-scale 0`` (answers at once; the simulated latency is still drawn and recorded).

    .venv/bin/python benchmarks/serve.py                 # everything (about 2 minutes)
    .venv/bin/python benchmarks/serve.py --only simforge --duration 5
    .venv/bin/python benchmarks/serve.py --skip-load      # no 500-session run
    .venv/bin/python benchmarks/serve.py --only load --load-processes 4   # the 500-session run alone

Also: memory per idle session (in process: tracemalloc and RSS over 2,000 sessions) and 500
concurrent sessions x 20 calls against the pinned server (errors, cross-session leaks), over 64
keep-alive connections of a minimal HTTP/1.1 client (:class:`RawConnection`), with the
server's CPU and the client's beside the wall time.
Prints a markdown table and writes the figures as JSON (``--out``, default in the temp dir).

**MCP beside REST and a bare mcp server** (``--only mcp``, part of everything): one server,
pinned as above and configured as ``simforge serve`` is, answers the REST tool plane, MCP
``tools/call`` at ``/mcp`` (the hand-written handler, on the handshake-era wire and on
2026-07-28's) and, at ``/mcp-sdk``, the official SDK's stateless streamable-HTTP manager over
the same sessions (``sdk_manager``: how ``/mcp`` was served before); a second server, pinned
the same way, is a bare ``MCPServer`` of the SDK answering constant bodies
(:data:`BARE_MCP_SERVER`). The same read (``get_customer``) and write
(``apply_account_credit``) go through each, every request is checked once before it is
measured (:func:`probe`), ``wrk`` runs interleaved in ``--rounds`` rounds (order rotated each
round) with the answering server's CPU seconds, and each figure is the median over rounds
with its min-max; the ratios to REST and to the bare server are taken per round. Then in process
(no sockets, gc off, CPU 1): microseconds per request on each path, the SDK's manager around a
handler that calls nothing (its framing alone), and the pieces of a request timed one by one.

    .venv/bin/python benchmarks/serve.py --only mcp --rounds 5 --duration 5

**REST beside Starlette** (``--only rest``): ``simforge serve``'s read and write and bare
Starlette's GET and POST, both servers up at once, ``wrk`` interleaved over ``--rounds`` rounds
with each server's CPU seconds beside each run (requests per server CPU second).

**OpenEnv ``/ws``** (``--only openenv``): episodes (a reset, then ten tool-call steps) over 32
connections of a raw-frame client (:class:`WsLoad`, pinned to CPU 0, its CPU reported) against
``simforge serve`` (frames uncompressed, the default, and with ``--ws-compression``) and a bare
Starlette WebSocket echo of the same messages (without permessage-deflate, and with it as
uvicorn's default accepts it); rotated rounds, messages per second and per server CPU second.

    .venv/bin/python benchmarks/serve.py --only rest,openenv --rounds 5 --duration 5

**The ``/ws`` handler alone** (``--only openenv-handler``): the direct path's handler in
process, no socket, CPU microseconds per message of the same episodes over 32 sessions, in a
fresh process per round pinned to the server's CPU, alternating with ``--baseline-root``.

    .venv/bin/python benchmarks/serve.py --only openenv-handler --rounds 7 --baseline-root DIR

**``/ws`` under connection churn** (``--only ws-churn``): rounds of 32 concurrent connections,
each a reset and 30 steps, then closed, against ``simforge serve`` (and ``--baseline-root``):
the server's RSS before and after, what a closed connection leaves behind.

    .venv/bin/python benchmarks/serve.py --only ws-churn --baseline-root DIR

**The tool plane through the HTTP protocol alone** (``--only rest-handler``): the read and the
write of ``--only rest`` fed as bytes to the server's own HTTP protocol (uvicorn's, with the
direct path) in process, no socket, CPU microseconds per request, a fresh process per round
pinned to the server's CPU, alternating with ``--baseline-root``.

    .venv/bin/python benchmarks/serve.py --only rest-handler --rounds 7 --baseline-root DIR

``--baseline-root DIR`` adds, to both parts, ``simforge serve`` run from another checkout (the
commit before a change: ``git archive <commit> | tar -x -C DIR``), interleaved with the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT.parent / "shared" / "peers" / "apps"
PY = Path(sys.executable)
UVICORN = PY.parent / "uvicorn"
SCENARIO = "acme/refund-damaged-order-v1"
TOKEN = "bench-token"
SERVER_CPU, CLIENT_CPU = "1", "0"

READ = ("/tools/get_customer", {"customer_id": "C-9001"})
WRITE = (  # an update and a new ledger row; the same body succeeds every time
    "/tools/apply_account_credit",
    {"customer_id": "C-9001", "amount": 5.0, "reason": "Printer on fire"},
)
"""Writes were ``create_ticket`` until the scenario stopped offering the support tools (then
every write was a 404, unnoticed: :func:`probe` now checks each request before it is
measured)."""
PEER_GET = "/tools/get_customer?id=42"
PEER_POST = (
    "/tools/create_ticket",
    {"customer_id": 42, "subject": "Printer on fire", "priority": "high"},
)


def lua(body: dict[str, object], folder: Path, name: str) -> Path:
    path = folder / f"{name}.lua"
    payload = json.dumps(body, separators=(",", ":")).replace("'", "\\'")
    path.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = '{payload}'\n"
    )
    return path


def wrk(
    url: str, script: Path | None, seconds: int, latency: bool = True
) -> dict[str, float | None]:
    cmd = ["taskset", "-c", CLIENT_CPU, "wrk", "-t1", "-c32", f"-d{seconds}s"]
    if latency:
        cmd.append("--latency")
    if script is not None:
        cmd += ["-s", str(script)]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=seconds + 30).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res: dict[str, float | None] = {
        "rps": float(rps.group(1)) if rps else None,
        "non2xx": float(non2xx.group(1)) if non2xx else 0.0,
    }
    for q in ("50", "99"):
        m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)$", out, re.M)
        res[f"p{q}_ms"] = (
            float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)] if m else None
        )
    return res


def start(cmd: list[str], port: int, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    with socket.socket() as taken:  # else /health would be another sitting's server's
        try:
            taken.bind(("127.0.0.1", port))
        except OSError:
            raise RuntimeError(f"port {port} is in use (another sitting? --port-offset)") from None
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CPU, *cmd],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    stop(proc)
    raise RuntimeError(f"{cmd[0]} did not start on port {port}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def probe(url: str, script: Path | None) -> None:
    """One request as wrk will send it: it must succeed (a 2xx, and for MCP a result that is not
    an error), or the benchmark would measure error answers."""
    if script is None:
        return
    text = script.read_text()
    headers = dict(re.findall(r'wrk\.headers\["([^"]+)"\] = "([^"]*)"', text))
    body = re.search(r"wrk\.body = '(.*)'", text)
    assert body is not None
    r = httpx.post(url, content=body.group(1).replace("\\'", "'"), headers=headers, timeout=30)
    ok = r.is_success and not (r.headers.get("content-type", "").startswith("application/json")
                               and '"isError":true' in r.text.replace(" ", ""))
    if not ok:
        raise RuntimeError(f"{url}: the benchmarked request fails: {r.status_code} {r.text[:300]}")


def bench(
    name: str,
    cmd: list[str],
    port: int,
    endpoints: list[tuple[str, str, Path | None]],
    args: argparse.Namespace,
    cwd: Path | None = None,
) -> dict[str, object]:
    proc = start(cmd, port, cwd)
    record: dict[str, object] = {
        "server": name,
        "cmd": " ".join(["taskset", "-c", SERVER_CPU, *cmd]),
    }
    try:
        for label, path, script in endpoints:
            url = f"http://127.0.0.1:{port}{path}"
            if name == "simforge serve":
                probe(url, script)
            wrk(url, script, args.warmup, latency=False)
            record[label] = wrk(url, script, args.duration)
        record["rss_mb"] = round(rss_mb(proc.pid), 1)
    finally:
        stop(proc)
    return record


def simforge_cmd(port: int) -> list[str]:
    return [
        str(PY),
        "-c",
        "from simforge.cli import main; main()",
        "serve",
        SCENARIO,
        "--port",
        str(port),
        "--time-scale",
        "0",
        "--token",
        TOKEN,
    ]


# -- MCP beside REST ------------------------------------------------------------------------

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def mcp_request(tool: str, arguments: dict[str, object], era: str) -> tuple[dict, dict]:
    """``(body, headers)`` of a ``tools/call`` as the official client sends it in ``era``
    (``legacy``: after the initialize handshake; ``modern``: the 2026-07-28 envelope)."""
    params: dict[str, object] = {"name": tool, "arguments": arguments}
    if era == "legacy":
        headers = {**ACCEPT, "Mcp-Protocol-Version": "2025-11-25"}
    else:
        params["_meta"] = ENVELOPE
        headers = {**ACCEPT, "Mcp-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                   "Mcp-Name": tool}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers


def lua_request(body: dict[str, object], headers: dict[str, str], folder: Path, name: str) -> Path:
    path = folder / f"{name}.lua"
    payload = json.dumps(body, separators=(",", ":")).replace("'", "\\'")
    lines = ['wrk.method = "POST"', 'wrk.headers["Content-Type"] = "application/json"']
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    path.write_text("\n".join([*lines, f"wrk.body = '{payload}'", ""]))
    return path


SIDE_BY_SIDE_SERVER = """
import asyncio, contextlib, sys, uvicorn
from simforge.serve.app import create_app
from simforge.serve.cli import tune_gc
from simforge.serve.mcp_server import SESSION_SCOPE_KEY, sdk_manager
from simforge.serve.server import server_config

app = create_app(sys.argv[1], time_scale=0, token=sys.argv[2])
sdk = sdk_manager(app.state.manager)
inner = app.router.lifespan_context


@contextlib.asynccontextmanager
async def lifespan(a):
    async with inner(a), sdk.run():
        yield


app.router.lifespan_context = lifespan


async def both(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/mcp-sdk":
        await sdk.handle_request({**scope, SESSION_SCOPE_KEY: None}, receive, send)
    else:
        await app(scope, receive, send)


both.gate = app.gate  # the configuration `simforge serve` runs with, direct paths included
tune_gc()
config = server_config(both, "127.0.0.1", int(sys.argv[3]), app.state.manager.limits,
                       log_level="warning")
asyncio.run(uvicorn.Server(config).serve())
"""
"""``simforge serve``'s application and configuration, with the SDK's stateless manager over
the same sessions at ``/mcp-sdk`` (how ``/mcp`` was served before)."""

BARE_MCP_SERVER = """
import sys, uvicorn
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from mcp.server.mcpserver import MCPServer

READ = {read}
WRITE = {write}
server = MCPServer("bare")


@server.tool()
def get_customer(customer_id: str) -> dict:
    return READ


@server.tool()
def apply_account_credit(customer_id: str, amount: float, reason: str) -> dict:
    return WRITE


app = server.streamable_http_app(json_response=True, stateless_http=True)


async def health(request):
    return PlainTextResponse("ok")


app.router.routes.append(Route("/health", health))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""
"""A bare server of the official ``mcp`` SDK (``MCPServer``, stateless streamable HTTP with
JSON answers, the SDK's own defaults otherwise) whose two tools answer constant bodies of the
size simforge answers: what the SDK costs with no simulation behind it."""

BARE_READ = {"id": "C-9001", "name": "Maya Lindqvist", "email": "maya.lindqvist@fastmail.example",
             "phone": "+1-503-555-0142", "tier": "standard", "status": "active",
             "address": "2210 NE Alberta St, Portland, OR 97211", "created_at": "2023-04-18",
             "account_credit": 0.0}
BARE_WRITE = {"customer_id": "C-9001", "account_credit": 5.0, "ledger_entry": {
    "order_id": None, "reference": "Printer on fire", "customer_id": "C-9001",
    "kind": "account_credit", "amount": 5.0, "created_at": "2026-01-15T09:00:00Z",
    "id": "LE-000030"}}


def mcp_paths(folder: Path) -> list[tuple[str, str, str, Path]]:
    """``(label, server, path, wrk script)``: REST, ours (both eras), the SDK's manager over
    simforge's sessions and a bare ``mcp`` server, read and write."""
    out = []
    for kind, (path, args) in (("read", READ), ("write", WRITE)):
        tool = path.rsplit("/", 1)[1]
        out.append((f"REST {kind}", "simforge", path, lua(args, folder, f"rest_{kind}")))
        for era in ("legacy", "modern"):
            body, headers = mcp_request(tool, args, era)
            script = lua_request(body, headers, folder, f"mcp_{era}_{kind}")
            out.append((f"MCP {era} {kind}", "simforge", "/mcp", script))
            out.append((f"SDK {era} {kind}", "simforge", "/mcp-sdk", script))
            out.append((f"bare mcp {era} {kind}", "bare mcp", "/mcp", script))
    return out


def mcp_side_by_side(args: argparse.Namespace, folder: Path, port: int = 18195) -> dict:
    """MCP ``tools/call`` beside REST and beside a bare ``mcp`` server: both servers pinned to
    the server's CPU, ``wrk`` pinned to the client's, the paths interleaved over
    ``--rounds`` rounds (order rotated each round), each run with its server's CPU seconds.
    Per path the median over rounds (min-max) of requests per second and per server CPU
    second, and within each round the ratio to REST and to the bare server (same era and
    call)."""
    bare = BARE_MCP_SERVER.format(read=repr(BARE_READ), write=repr(BARE_WRITE))
    servers = {"simforge": ([str(PY), "-c", SIDE_BY_SIDE_SERVER, SCENARIO, TOKEN, str(port)],
                            port),
               "bare mcp": ([str(PY), "-c", bare, str(port + 1)], port + 1)}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    paths = mcp_paths(folder)
    rounds: list[dict[str, dict[str, float | None]]] = []
    try:
        for name, (cmd, at) in servers.items():
            procs[name] = start(cmd, at, cwd=ROOT)
        for label, name, path, script in paths:  # each path once before the clock runs
            url = f"http://127.0.0.1:{servers[name][1]}{path}"
            probe(url, script)
            seconds = 1 if label.startswith("SDK modern") else args.warmup
            wrk(url, script, seconds, latency=False)
        for r in range(args.rounds):
            order = paths[r % len(paths):] + paths[:r % len(paths)]
            got = {}
            for label, name, path, script in order:
                pid = procs[name].pid
                c0 = cpu_seconds(pid)
                res = wrk(f"http://127.0.0.1:{servers[name][1]}{path}", script, args.duration)
                cpu = cpu_seconds(pid) - c0
                res["per_server_cpu_s"] = (float(res["rps"] or 0) * args.duration / cpu
                                           if cpu else None)
                res["server_cpu_share"] = cpu / args.duration
                got[label] = res
            rounds.append(got)
        rss = {name: round(rss_mb(proc.pid), 1) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            stop(proc)
    rates = ("rps", "per_server_cpu_s")
    summary: dict[str, dict[str, Any]] = {}
    for label, *_ in paths:
        kind = label.rsplit(" ", 1)[1]
        summary[label] = {
            **over_rounds(rounds, label, (*rates, "p50_ms", "p99_ms", "server_cpu_share")),
            **over_rounds(rounds, label, rates, base=f"REST {kind}", suffix="_vs_rest"),
            "non2xx": sum(float(x[label]["non2xx"] or 0) for x in rounds),
        }
        if label.startswith(("MCP", "SDK", "bare")):
            era = label.split(" ")[-2]
            summary[label].update(over_rounds(
                rounds, label, rates, base=f"bare mcp {era} {kind}", suffix="_vs_bare"))
    return {"rounds": args.rounds, "duration_s": args.duration, "rss_mb": rss,
            "summary": summary, "raw": rounds}


def median_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(median(known), 2) if known else None


def median(values: list[float]) -> float:
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def mcp_in_process(repeats: int = 30, batch: int = 200) -> dict[str, object]:
    """Where the time of one ``tools/call`` goes, in process (the ASGI apps called directly: no
    sockets; gc off; pinned to the server's CPU; paths interleaved, ``repeats`` batches each).

    Whole requests: REST, ours (both eras), the SDK's manager (both eras), and the SDK's manager
    with a handler that answers a constant result without calling anything (what the SDK's
    framing costs on its own). Pieces, each timed alone: the simulated call, the session lookup,
    and the SDK's pydantic steps of one request (the envelope against the JSON-RPC message
    union, the params against the protocol's request model, the result through its
    serializer)."""
    import asyncio
    import gc
    import timeit

    import mcp_types as types
    import orjson
    from mcp.server.lowlevel.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp_types import methods

    from simforge.serve.app import create_app
    from simforge.serve.mcp_server import SESSION_SCOPE_KEY, call_result, sdk_manager

    app = create_app(SCENARIO, time_scale=0, token=TOKEN)
    manager = app.state.manager
    sdk = sdk_manager(manager)
    tool = READ[0].rsplit("/", 1)[1]
    served = manager.sessions["default"]
    payload = served.call_now(tool, READ[1]).result

    async def constant(ctx: object, params: object) -> types.CallToolResult:
        return types.CallToolResult.model_validate(call_result(payload, False))

    noop = StreamableHTTPSessionManager(app=Server("noop", on_call_tool=constant),
                                        stateless=True, json_response=True)

    def through(mgr: StreamableHTTPSessionManager) -> object:
        async def handler(scope: dict, receive: object, send: object) -> None:
            await mgr.handle_request({**scope, SESSION_SCOPE_KEY: None}, receive, send)

        return handler

    def scope(path: str, headers: dict[str, str]) -> dict[str, object]:
        raw = [(k.lower().encode(), v.encode()) for k, v in
               {"Content-Type": "application/json", **headers}.items()]
        return {"type": "http", "method": "POST", "path": path, "headers": raw,
                "query_string": b"", "http_version": "1.1", "scheme": "http",
                "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 9), "root_path": ""}

    legacy_body, legacy_headers = mcp_request(tool, READ[1], "legacy")
    cases: list[tuple[str, object, dict, bytes]] = [
        ("REST", app, scope(READ[0], {}), json.dumps(READ[1]).encode())
    ]
    for era in ("legacy", "modern"):
        body, headers = mcp_request(tool, READ[1], era)
        raw = json.dumps(body).encode()
        cases.append((f"MCP {era}", app, scope("/mcp", headers), raw))
        cases.append((f"SDK {era}", through(sdk), scope("/mcp", headers), raw))
    cases.append(("SDK legacy, constant handler", through(noop),
                  scope("/mcp", legacy_headers), json.dumps(legacy_body).encode()))

    async def run(handler: object, sc: dict, body: bytes, n: int) -> float:
        statuses = []

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        t0 = time.perf_counter()
        for _ in range(n):
            await handler(dict(sc), receive, send)  # type: ignore[operator]
        elapsed = time.perf_counter() - t0
        assert set(statuses) == {200}, statuses[:3]
        return elapsed / n * 1e6

    async def measure() -> dict[str, list[float]]:
        async with sdk.run(), noop.run():
            per: dict[str, list[float]] = {name: [] for name, *_ in cases}
            for _, handler, sc, body in cases:
                await run(handler, sc, body, 50)
            for _ in range(repeats):
                for name, handler, sc, body in cases:
                    n = max(5, batch // 20) if name == "SDK modern" else batch
                    per[name].append(await run(handler, sc, body, n))
        return per

    def us(fn: object, n: int = 20_000) -> float:
        return round(min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6, 2)  # type: ignore[arg-type]

    raw_legacy = json.dumps(legacy_body).encode()
    params = legacy_body["params"]
    wire = call_result(payload, False)
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(SERVER_CPU)})
    gc.collect()
    gc.disable()
    try:
        per = asyncio.run(measure())
        pieces = {
            "the simulated call (served.call_now)": us(lambda: served.call_now(tool, READ[1])),
            "the session lookup": us(lambda: manager.sessions.get("default"), 200_000),
            "SDK: envelope vs the JSON-RPC message union": us(
                lambda: types.jsonrpc_message_adapter.validate_json(raw_legacy)),
            "SDK: params vs the tools/call request model": us(
                lambda: methods.validate_client_request("tools/call", "2025-11-25", params)),
            "SDK: result through CallToolResult and its serializer": us(
                lambda: methods.serialize_server_result(
                    "tools/call", "2025-11-25",
                    types.CallToolResult.model_validate(wire).model_dump(
                        by_alias=True, mode="json", exclude_none=True))),
            "ours: the result dict and its JSON": us(
                lambda: orjson.dumps(call_result(payload, False))),
        }
    finally:
        gc.enable()
        os.sched_setaffinity(0, cpus)
    return {
        "us_per_request": {k: {"median": round(median(v), 1), "min": round(min(v), 1),
                               "max": round(max(v), 1)} for k, v in per.items()},
        "us_per_piece": pieces,
    }


def idle_session_memory(n: int = 2000) -> dict[str, float]:
    """Bytes per idle session, measured in a fresh process (tracemalloc and RSS)."""
    code = f"""
import gc, json, tracemalloc
from simforge.serve.app import create_app
from simforge.serve.sessions import Limits
app = create_app({SCENARIO!r}, time_scale=0, token="t", limits=Limits(max_sessions={n} + 100))
m = app.state.manager
for _ in range(20): m.create()
gc.collect()
def rss():
    return int([l for l in open("/proc/self/status") if l.startswith("VmRSS:")][0].split()[1]) * 1024
tracemalloc.start(); r0 = rss(); t0 = tracemalloc.get_traced_memory()[0]
for _ in range({n}): m.create()
gc.collect()
t1 = tracemalloc.get_traced_memory()[0]; r1 = rss()
print(json.dumps({{"tracemalloc_kb": (t1 - t0) / {n} / 1024, "rss_kb": (r1 - r0) / {n} / 1024}}))
"""
    out = subprocess.run(
        [str(PY), "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawConnection:
    """One keep-alive HTTP/1.1 connection, a request at a time: what the load needs of a
    client and no more. Written here because the load must measure the server: an
    ``httpx.AsyncClient`` spent 11.9 s of CPU on the 10,000 requests the server answered in
    1.8 s, so the figure was the client's. The server is simforge's own (uvicorn, h11): answers
    carry ``Content-Length`` and no chunking, which is all this parses."""

    def __init__(self, reader: Any, writer: Any, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        import asyncio

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, f"127.0.0.1:{port}")

    async def post(self, path: str, body: dict[str, object],
                   headers: dict[str, str]) -> tuple[int, Any]:
        data = json.dumps(body, separators=(",", ":")).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{head}\r\n".encode() + data
        )
        status_line = await self.reader.readuntil(b"\r\n")
        length = 0
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length) if length else b""
        return int(status_line.split()[1]), json.loads(payload) if payload else None

    def close(self) -> None:
        self.writer.close()


async def _load_sessions(port: int, ids: list[int], connections: int) -> list[str]:
    """Sessions ``ids`` over ``connections`` keep-alive connections, each playing its share
    one after another: a session writes ten contacts, reads nine times and must then see
    exactly its own ten contacts. The problems found (errors, leaks, losses)."""
    import asyncio

    async def one(conn: RawConnection, i: int) -> list[str]:
        sid = f"load-{i}"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, data = await conn.post(
            "/sessions",
            {"session_id": sid, "max_steps": 1000, "max_sim_seconds": 1e9, "insecure_id": True},
            auth,
        )
        if status != 201:
            return [f"{sid}: create {status}"]
        tools = {"Authorization": f"Bearer {data['tool_token']}"}
        bad = []
        for k in range(19):
            if k < 10:
                body = {"customer_id": "C-9001", "name": f"{sid}/{k}",
                        "email": f"{sid}.{k}@example.com"}
                status, _ = await conn.post(f"/s/{sid}/tools/create_contact", body, tools)
            else:
                status, _ = await conn.post(f"/s/{sid}/tools/get_customer",
                                            {"customer_id": "C-9001"}, tools)
            if status != 200:
                bad.append(f"{sid}: call {k}: {status}")
        status, data = await conn.post(
            f"/s/{sid}/tools/list_contacts", {"customer_id": "C-9001", "limit": 100}, tools
        )
        items = data.get("items", []) if isinstance(data, dict) else []
        mine = {t["name"] for t in items if t["name"].startswith("load-")}
        if mine != {f"{sid}/{k}" for k in range(10)}:
            bad.append(f"{sid}: leak or loss: {sorted(mine)[:5]}")
        return bad

    async def lane(share: list[int]) -> list[str]:
        conn = await RawConnection.open(port)
        try:
            return [p for i in share for p in await one(conn, i)]
        finally:
            conn.close()

    shares = [ids[k::connections] for k in range(connections)]
    results = await asyncio.gather(*[lane(share) for share in shares if share])
    return [p for r in results for p in r]


def _load_worker(port: int, ids: list[int], connections: int, cpus: set[int],
                 start_at: float, out: Any) -> None:
    """One load process: waits for ``start_at`` (so that all start together), plays its
    sessions, sends back ``(problems, its CPU seconds, when it finished)``."""
    import asyncio

    os.sched_setaffinity(0, cpus)
    time.sleep(max(0.0, start_at - time.time()))
    c0 = time.process_time()
    problems = asyncio.run(_load_sessions(port, ids, connections))
    out.put((problems, time.process_time() - c0, time.time()))


def load_500(port: int, connections: int = 64, processes: int = 4,
             client_cpus: str = CLIENT_CPU) -> dict[str, object]:
    """500 concurrent sessions x 20 calls against the pinned server, from ``processes`` load
    processes (``connections`` keep-alive connections in all, :class:`RawConnection`),
    pinned to ``client_cpus``: the server's CPU seconds and share of its core beside the
    clients', so that the figure says whether the server was the one busy (it is the
    server's figure when the server is near 100% of its core and the clients are not)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    cpus = {int(c) for c in client_cpus.split(",")}
    proc = start(simforge_cmd(port), port)
    try:
        out = ctx.Queue()
        start_at = time.time() + 0.5
        workers = [ctx.Process(target=_load_worker, args=(
            port, list(range(k, 500, processes)), max(1, connections // processes), cpus,
            start_at, out)) for k in range(processes)]
        server0 = cpu_seconds(proc.pid)
        for w in workers:
            w.start()
        results = [out.get(timeout=600) for _ in workers]
        for w in workers:
            w.join(timeout=60)
        seconds = max(r[2] for r in results) - start_at
        server_cpu = cpu_seconds(proc.pid) - server0
        rss = rss_mb(proc.pid)
    finally:
        stop(proc)
    problems = [p for r in results for p in r[0]]
    client_cpu = sum(r[1] for r in results)
    return {
        "sessions": 500,
        "calls": 500 * 20,
        "connections": connections,
        "load_processes": processes,
        "client_cpus": client_cpus,
        "seconds": round(seconds, 2),
        "requests_per_s": round(500 * 21 / seconds),
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_share": round(server_cpu / seconds, 2),
        "requests_per_server_cpu_s": round(500 * 21 / server_cpu) if server_cpu else None,
        "client_cpu_s": round(client_cpu, 2),
        "errors_or_leaks": len(problems),
        "examples": problems[:5],
        "rss_mb_after": round(rss, 1),
    }


# -- OpenEnv /ws beside a bare Starlette WebSocket echo ------------------------------------

WS_ECHO_SERVER = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute


async def echo(websocket):
    await websocket.accept()
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        await websocket.send_text(message["text"])


async def health(request):
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/health", health), WebSocketRoute("/ws", echo)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False, ws_per_message_deflate=sys.argv[2] == "on")
"""
"""A bare Starlette WebSocket echo under uvicorn (one worker, the same ws implementation and
event loop as ``simforge serve``): the ceiling of one message and its reply on one core."""

WS_STEPS = 10
"""Steps per episode of the load: ``reset`` then this many tool calls (the scenario's budget is
15 steps)."""


STATE_FRAME = b'{"type":"state"}'
STATE_ONLY = "simforge /ws, state messages only"
"""A contender of :func:`openenv_side_by_side`: ``simforge serve``'s ``/ws`` answering
``state`` messages, which go the whole way a step goes (the frame parsed, the message read and
triaged on the direct path, a reply built with orjson and framed) but simulate nothing. Its
cost per message beside the echo's is what serving adds; the episodes' beyond it is the
simulation (the reset and the simulated calls)."""


def openenv_frames() -> list[bytes]:
    """One episode as a trainer sends it over ``/ws``: a reset, then steps that each call a
    tool (the same read the REST benchmark makes)."""
    path, args = READ
    step = {"type": "step", "data": {"tool_calls": [
        {"name": path.rsplit("/", 1)[1], "arguments": args}]}}
    reset = json.dumps({"type": "reset", "data": {}}, separators=(",", ":")).encode()
    return [reset] + [json.dumps(step, separators=(",", ":")).encode()] * WS_STEPS


class WsLoad:
    """A WebSocket load of raw frames (RFC 6455, client side) over ``connections`` connections,
    one message in flight on each: what a trainer's env workers do, at a client cost of a few
    microseconds a message, so that the figure is the server's. The handshake offers
    permessage-deflate as ``websockets`` (and so OpenEnv's client) does; a reply the server
    compressed is inflated before it is checked. Every reply is checked: it must start with
    ``expect`` (or, for an echo, be the message sent)."""

    OFFER = "permessage-deflate; client_max_window_bits"

    def __init__(self, port: int, frames: list[bytes], expect: bytes | None,
                 headers: dict[str, str], connections: int = 32) -> None:
        self.port, self.frames, self.expect = port, frames, expect
        self.headers, self.connections = headers, connections
        self.replies = 0
        self.bad: list[bytes] = []
        self.compressed = False
        self.stopping = False

    @staticmethod
    def masked(payload: bytes) -> bytes:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        key = (mask * (n // 4 + 1))[:n]
        body = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        return head + mask + body

    async def lane(self) -> None:
        import asyncio
        import base64
        import zlib

        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Extensions: {self.OFFER}\r\n{extra}\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"/ws handshake refused: {head[:200]!r}")
        deflate = b"permessage-deflate" in head.lower()
        self.compressed |= deflate
        inflate = zlib.decompressobj(-15)
        no_takeover = b"server_no_context_takeover" in head.lower()
        frames = [self.masked(f) for f in self.frames]
        i = 0
        try:
            while not self.stopping:
                writer.write(frames[i])
                b0, b1 = await reader.readexactly(2)
                n = b1 & 0x7F
                if n == 126:
                    n = int.from_bytes(await reader.readexactly(2), "big")
                elif n == 127:
                    n = int.from_bytes(await reader.readexactly(8), "big")
                payload = await reader.readexactly(n)
                if b0 & 0x40:  # RSV1: a compressed message
                    if no_takeover:
                        inflate = zlib.decompressobj(-15)
                    payload = inflate.decompress(payload + b"\x00\x00\xff\xff")
                want = self.frames[i] if self.expect is None else self.expect
                if b0 & 0x0F != 1 or not payload.startswith(want[:64]):
                    self.bad.append(payload[:200])
                self.replies += 1
                i = (i + 1) % len(frames)
        finally:
            writer.close()

    async def run(self, windows: list[tuple[str, float]],
                  server_cpu: Any) -> dict[str, dict[str, float]]:
        """Run the load through ``windows`` (``(label, seconds)``, one after another: a warm-up
        is a window whose figures are not used). Per window: replies, wall seconds, this
        client's CPU seconds and the server's (``server_cpu()``: its CPU seconds so far)."""
        import asyncio

        lanes = [asyncio.ensure_future(self.lane()) for _ in range(self.connections)]
        out: dict[str, dict[str, float]] = {}
        try:
            for label, seconds in windows:
                n0, c0, s0 = self.replies, time.process_time(), server_cpu()
                t0 = time.monotonic()
                await asyncio.sleep(seconds)
                for lane in lanes:
                    if lane.done():
                        lane.result()  # a lane that died: its error, now
                out[label] = {"replies": self.replies - n0, "wall_s": time.monotonic() - t0,
                              "client_cpu_s": time.process_time() - c0,
                              "server_cpu_s": server_cpu() - s0}
        finally:
            self.stopping = True
            await asyncio.gather(*lanes, return_exceptions=True)
        if self.bad:
            raise RuntimeError(f"{len(self.bad)} replies were not what the load expected, "
                               f"e.g. {self.bad[0]!r}")
        return out


def ws_window(port: int, pid: int, expect: bytes | None, headers: dict[str, str],
              args: argparse.Namespace, frames: list[bytes] | None = None
              ) -> dict[str, float | bool]:
    """A warm-up and one measured window of the load (``frames``, by default the episodes of
    :func:`openenv_frames`) against the server ``pid`` on ``port``: messages answered per
    second of wall time and per second of the server's CPU, the server's and the client's CPU
    shares, and whether permessage-deflate was negotiated."""
    import uvloop

    load = WsLoad(port, frames or openenv_frames(), expect, headers,
                  connections=args.ws_connections)
    windows = [("warmup", 1.0), ("run", float(args.duration))]
    got = uvloop.run(load.run(windows, lambda: cpu_seconds(pid)))["run"]
    return {
        "messages_per_s": got["replies"] / got["wall_s"],
        "messages_per_server_cpu_s": got["replies"] / got["server_cpu_s"]
        if got["server_cpu_s"] else 0.0,
        "server_cpu_share": got["server_cpu_s"] / got["wall_s"],
        "client_cpu_share": got["client_cpu_s"] / got["wall_s"],
        "compressed": load.compressed,
    }


def openenv_side_by_side(args: argparse.Namespace, port: int = 18196) -> dict[str, object]:
    """``/ws`` of ``simforge serve`` (default: no compression; and with ``--ws-compression``)
    beside the bare Starlette echo (uvicorn's default, permessage-deflate, and without it):
    the servers are started once, pinned to the server's CPU, and loaded in turn, the order
    rotated every round, the load pinned to the client's CPU. Per contender the median over
    rounds (min-max), and the ratio to the echo without deflate taken within each round."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    episodes, observation = openenv_frames(), b'{"type":"observation"'
    contenders: list[tuple[str, list[str], bytes | None, dict[str, str], list[bytes]]] = [
        ("Starlette echo", [str(PY), "-c", WS_ECHO_SERVER, str(port), "off"], None, {},
         episodes),
        ("Starlette echo, deflate (uvicorn's default)",
         [str(PY), "-c", WS_ECHO_SERVER, str(port + 1), "on"], None, {}, episodes),
        ("simforge /ws", simforge_cmd(port + 2), observation, auth, episodes),
        ("simforge /ws --ws-compression", [*simforge_cmd(port + 3), "--ws-compression"],
         observation, auth, episodes),
        # the same server's path around the env: a message read, triaged, answered from the
        # session's state (no simulation) and framed, as every step's is
        (STATE_ONLY, simforge_cmd(port + 4), b'{"type":"state"', auth, [STATE_FRAME]),
    ]
    if args.baseline_root:  # its own default compression (before: uvicorn's, deflate)
        contenders.append(("simforge /ws (baseline)", simforge_cmd(port + 5), observation, auth,
                           episodes))
    procs = []
    try:
        for k, (label, cmd, *_) in enumerate(contenders):
            root = Path(args.baseline_root) if label.endswith("(baseline)") else ROOT
            procs.append(start(cmd, port + k, cwd=root))
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
        rounds: list[dict[str, dict[str, float | bool]]] = []
        for r in range(args.rounds):
            order = list(enumerate(contenders))
            order = order[r % len(order):] + order[:r % len(order)]
            rounds.append({label: ws_window(port + k, procs[k].pid, expect, headers, args,
                                            frames)
                           for k, (label, _, expect, headers, frames) in order})
        rss = {label: round(rss_mb(p.pid), 1) for (label, *_), p in zip(contenders, procs, strict=True)}
    finally:
        for p in procs:
            stop(p)
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    rates = ("messages_per_s", "messages_per_server_cpu_s")
    summary = {label: {
        "compressed": rounds[0][label]["compressed"], "rss_mb": rss[label],
        **over_rounds(rounds, label, (*rates, "server_cpu_share", "client_cpu_share")),
        **over_rounds(rounds, label, rates, base=contenders[0][0], suffix="_vs_echo"),
    } for label, *_ in contenders}
    return {"rounds": args.rounds, "duration_s": args.duration,
            "connections": args.ws_connections, "steps_per_episode": WS_STEPS,
            "summary": summary, "raw": rounds}


WS_HANDLER_LOOP = r"""
import gc, json, sys, time
from simforge.serve.app import create_app
from simforge.serve import openenv

frames, batches, episodes = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
manager = create_app("acme/refund-damaged-order-v1", time_scale=0.0, token="t").state.manager
sessions = [(manager.create(), set()) for _ in range(32)]

def batch(n):
    count, t0 = 0, time.process_time()
    for _ in range(n):
        for served, sent in sessions:
            for frame in frames:
                reply = openenv._message_now(manager, served, sent, frame)
                if reply is None or not reply.startswith(b'{"type":"observation"'):
                    raise SystemExit(f"not answered on the direct path: {reply!r:.300}")
                count += 1
    return (time.process_time() - t0) / count * 1e6

batch(2)
print(json.dumps([batch(episodes) for _ in range(batches)]))
"""
"""The ``/ws`` direct path's handler alone (``openenv._message_now``, no socket): 32 sessions
played round robin with :func:`openenv_frames`, CPU microseconds per message, per batch."""


def alternating(args: argparse.Namespace, script: str, argv: list[str]) -> tuple[
        dict[str, Path], list[dict[str, Any]]]:
    """``script`` run in a fresh process per checkout and round (this one and, with
    ``--baseline-root``, the other, alternating, the order rotated), pinned to the server's
    CPU: per round, what each printed (JSON)."""
    roots = {"this checkout": ROOT}
    if args.baseline_root:
        roots["baseline"] = Path(args.baseline_root).resolve()
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = list(roots.items())
        order = order[r % len(order):] + order[:r % len(order)]
        got = {}
        for label, root in order:
            out = subprocess.run(
                ["taskset", "-c", SERVER_CPU, str(PY), "-c", script, *argv],
                cwd=tempfile.gettempdir(), env={**os.environ, "PYTHONPATH": str(root)},
                capture_output=True, text=True, check=True)
            got[label] = json.loads(out.stdout)
        rounds.append(got)
    return roots, rounds


def spread(rounds: list[dict[str, float]], label: str, key: str) -> dict[str, Any]:
    """``label``'s median over rounds and min-max under ``key``, and (beside a baseline) its
    ratio to the baseline taken within each round."""
    values = [r[label] for r in rounds]
    out: dict[str, Any] = {key: median(values), "min": min(values), "max": max(values)}
    if label != "baseline" and "baseline" in rounds[0]:
        ratios = [r[label] / r["baseline"] for r in rounds]
        out["vs_baseline"] = {"median": median(ratios), "min": min(ratios),
                              "max": max(ratios)}
    return out


def openenv_handler(args: argparse.Namespace, batches: int = 5,
                    episodes: int = 10) -> dict[str, object]:
    """The ``/ws`` handler's cost per message in process, this checkout and (with
    ``--baseline-root``) the other one alternating, ``--rounds`` rounds of a fresh process each
    (pinned to the server's CPU, the collector as Python leaves it): per round the median of
    ``batches`` batches; per checkout the median over rounds and min-max, and the ratio to the
    baseline taken within each round."""
    frames = json.dumps([f.decode() for f in openenv_frames()])
    roots, printed = alternating(args, WS_HANDLER_LOOP, [frames, str(batches), str(episodes)])
    rounds = [{label: median(batch) for label, batch in r.items()} for r in printed]
    summary = {label: spread(rounds, label, "us_per_message") for label in roots}
    return {"rounds": rounds, "summary": summary, "load_average": os.getloadavg()}


# -- /ws under connection churn: what closed connections leave behind ------------------------

CHURN_STEPS = 30
CHURN_CONNECTIONS = 32


def ws_churn(args: argparse.Namespace, port: int = 18210) -> dict[str, object]:
    """``simforge serve``'s resident memory while trainers reconnect: ``--churn-rounds`` rounds
    of :data:`CHURN_CONNECTIONS` concurrent ``/ws`` connections, each a reset and
    :data:`CHURN_STEPS` steps, then closed; the servers' RSS before and after (this checkout,
    and ``--baseline-root`` if given, one after the other, the load pinned to the client's
    CPU). A server that keeps what closed connections leave grows with every round."""
    import asyncio

    from websockets.asyncio.client import connect

    auth = {"Authorization": f"Bearer {TOKEN}"}
    reset, step = openenv_frames()[:2]

    async def lane(at: int, seed: int) -> None:
        async with connect(f"ws://127.0.0.1:{at}/ws", additional_headers=auth,
                           compression=None) as ws:
            await ws.send(reset.replace(b'"data":{}', b'"data":{"seed":%d}' % seed))
            await ws.recv()
            for _ in range(CHURN_STEPS):
                await ws.send(step)
                await ws.recv()

    async def rounds(at: int) -> None:
        for r in range(args.churn_rounds):
            await asyncio.gather(*(lane(at, r * CHURN_CONNECTIONS + i)
                                   for i in range(CHURN_CONNECTIONS)))

    roots = [("this checkout", ROOT)]
    if args.baseline_root:
        roots.append(("baseline", Path(args.baseline_root)))
    out: dict[str, object] = {"rounds": args.churn_rounds, "connections_per_round":
                              CHURN_CONNECTIONS, "steps": CHURN_STEPS}
    os.sched_setaffinity(0, {int(CLIENT_CPU)})
    try:
        for k, (label, root) in enumerate(roots):
            proc = start(simforge_cmd(port + k), port + k, cwd=root)
            try:
                before = rss_mb(proc.pid)
                t0 = time.monotonic()
                asyncio.run(rounds(port + k))
                time.sleep(0.5)  # the last closes handled
                after = rss_mb(proc.pid)
            finally:
                stop(proc)
            connections = args.churn_rounds * CHURN_CONNECTIONS
            out[label] = {"rss_mb_before": round(before, 1), "rss_mb_after": round(after, 1),
                          "connections": connections,
                          "kb_per_connection": round((after - before) * 1024 / connections, 1),
                          "seconds": round(time.monotonic() - t0, 1)}
    finally:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return out


REST_HANDLER_LOOP = """
import asyncio, json, sys, time
import uvloop
from uvicorn.server import ServerState
from simforge.serve.app import create_app
from simforge.serve.cli import tune_gc
from simforge.serve.server import server_config

requests = {k: v.encode() for k, v in json.loads(sys.argv[1]).items()}
batches, n = int(sys.argv[2]), int(sys.argv[3])
app = create_app("acme/refund-damaged-order-v1", time_scale=0, token="t")
config = server_config(app, "127.0.0.1", 9, app.state.manager.limits, log_level="warning")
config.load()


class Transport(asyncio.Transport):
    last = b""

    def write(self, data):
        self.last = data

    def is_closing(self):
        return False

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 9), "peername": ("127.0.0.1", 10)}.get(name, default)


async def main():
    loop = asyncio.get_running_loop()
    proto = config.http_protocol_class(config=config, server_state=ServerState(),
                                       app_state={}, _loop=loop)
    transport = Transport()
    proto.connection_made(transport)

    async def batch(request, k):
        t0 = time.process_time()
        for i in range(k):
            proto.data_received(request)
            if i % 64 == 63:
                await asyncio.sleep(0)  # the loop turns, as between a server's reads
        if not transport.last.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"not answered: {transport.last!r:.300}")
        return (time.process_time() - t0) / k * 1e6

    out = {}
    for kind, request in requests.items():  # reads first: the writes grow the world
        await batch(request, 500)
        out[kind] = [await batch(request, n) for _ in range(batches)]
    print(json.dumps(out))


tune_gc()
uvloop.install()
asyncio.run(main())
"""
"""A tool-plane request whole, as ``simforge serve`` handles it, without the socket: uvicorn's
HTTP protocol as the server configures it (the direct path) fed the request's bytes, a
transport that keeps the answer, the collector tuned as ``serve`` tunes it: CPU microseconds
per request, per batch."""


def rest_handler(args: argparse.Namespace, batches: int = 5, n: int = 4000) -> dict[str, object]:
    """The read and the write of ``--only rest`` through the server's HTTP protocol in process
    (:data:`REST_HANDLER_LOOP`), this checkout and the ``--baseline-root`` alternating in
    fresh processes over ``--rounds`` rounds: per kind and checkout the median over rounds
    (each round's the median of ``batches`` batches of ``n`` requests) and min-max, and the
    ratio to the baseline taken within each round."""
    requests = {}
    for kind, (path, body) in (("read", READ), ("write", WRITE)):
        raw = json.dumps(body, separators=(",", ":"))
        requests[kind] = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(raw)}"
                          f"\r\n\r\n{raw}")
    roots, printed = alternating(args, REST_HANDLER_LOOP,
                                 [json.dumps(requests), str(batches), str(n)])
    summary = {}
    for kind in requests:
        rounds = [{label: median(got[kind]) for label, got in r.items()} for r in printed]
        summary[kind] = {label: spread(rounds, label, "us_per_request") for label in roots}
    return {"rounds": printed, "summary": summary, "load_average": os.getloadavg()}


def print_openenv(ws: dict[str, Any]) -> None:
    table(f"OpenEnv /ws beside a Starlette WebSocket echo ({ws['rounds']} rotated rounds "
          f"of {ws['duration_s']} s, {ws['connections']} connections, episodes of a reset "
          f"and {ws['steps_per_episode']} steps; median, min-max)",
          ["server", "messages/s", "min-max", "/ echo", "min-max", "per server CPU s",
           "/ echo", "min-max", "server CPU", "client CPU", "deflate"],
          ws["summary"],
          [("messages_per_s", ",.0f", True), ("messages_per_s_vs_echo", ".2f", True),
           ("messages_per_server_cpu_s", ",.0f", False),
           ("messages_per_server_cpu_s_vs_echo", ".2f", True),
           ("server_cpu_share", ".0%", False), ("client_cpu_share", ".0%", False),
           ("compressed", "", False)])


def over_rounds(rounds: list[dict[str, Any]], label: str, keys: tuple[str, ...],
                base: str | None = None, suffix: str = "") -> dict[str, dict[str, float]]:
    """Per key, ``label``'s median and min-max over ``rounds``; with ``base``, of its ratio to
    ``base`` within each round (under ``key + suffix``)."""
    out = {}
    for key in keys:
        values = sorted(
            float(r[label][key] or 0) / (float(r[base][key] or 1) if base else 1.0)
            for r in rounds
        )
        out[key + suffix] = {"median": median(values), "min": values[0], "max": values[-1]}
    return out


def table(title: str, columns: list[str], summary: dict[str, dict[str, Any]],
          cells: list[tuple[str, str, bool]]) -> None:
    """A markdown table: a row per label of ``summary``, then per ``(key, format, spread)`` the
    median of ``row[key]`` (with its min-max over rounds, in a cell of its own, if ``spread``;
    a plain value as it is)."""
    print(f"\n{title}:\n")
    print("| " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * (len(columns) - 1))
    for label, row in summary.items():
        out = [label]
        for key, fmt, with_spread in cells:
            stat = row[key]
            if not isinstance(stat, dict):
                out += [str(stat), ""] if with_spread else [str(stat)]
                continue
            out.append(f"{stat['median']:{fmt}}")
            if with_spread:
                out.append(f"{stat['min']:{fmt}}-{stat['max']:{fmt}}")
        print("| " + " | ".join(out) + " |")


# -- REST beside bare Starlette, interleaved ------------------------------------------------


def rest_side_by_side(args: argparse.Namespace, folder: Path, port: int = 18200) -> dict:
    """``simforge serve``'s read and write beside bare Starlette's GET and POST: both servers
    started once, pinned to the server's CPU, ``wrk`` runs interleaved in ``--rounds`` rounds
    (order rotated each round), each with the server's CPU seconds over the run beside it
    (requests per server CPU second: what a machine shared with other work disturbs least).
    Medians over rounds with min-max; ratios to Starlette taken within each round."""
    peer_cmd = [str(UVICORN), "starlette_app:app", "--host", "127.0.0.1", "--port",
                str(port + 1), "--workers", "1", "--log-level", "warning", "--no-access-log"]
    servers = [("simforge", simforge_cmd(port), port, ROOT), ("Starlette", peer_cmd, port + 1,
                                                              PEERS)]
    if args.baseline_root:
        servers.append(("simforge (baseline)", simforge_cmd(port + 2), port + 2,
                        Path(args.baseline_root)))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    runs = []
    reads, writes = lua(READ[1], folder, "r"), lua(WRITE[1], folder, "w")
    for name, _, at, _ in servers:
        if name == "Starlette":
            runs += [("Starlette read", name, f"http://127.0.0.1:{at}{PEER_GET}", None),
                     ("Starlette write", name, f"http://127.0.0.1:{at}{PEER_POST[0]}",
                      lua(PEER_POST[1], folder, "pw"))]
        else:
            runs += [(f"{name} read", name, f"http://127.0.0.1:{at}{READ[0]}", reads),
                     (f"{name} write", name, f"http://127.0.0.1:{at}{WRITE[0]}", writes)]
    rounds: list[dict[str, dict[str, float | None]]] = []
    try:
        for name, cmd, at, cwd in servers:
            procs[name] = start(cmd, at, cwd=cwd)
        for label, _, url, script in runs:
            if label.startswith("simforge"):
                probe(url, script)
            wrk(url, script, args.warmup, latency=False)
        for r in range(args.rounds):
            order = runs[r % len(runs):] + runs[:r % len(runs)]
            got = {}
            for label, name, url, script in order:
                pid = procs[name].pid
                c0 = cpu_seconds(pid)
                res = wrk(url, script, args.duration)
                cpu = cpu_seconds(pid) - c0
                res["per_server_cpu_s"] = (float(res["rps"] or 0) * args.duration / cpu
                                           if cpu else None)
                got[label] = res
            rounds.append(got)
        rss = {name: round(rss_mb(proc.pid), 1) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            stop(proc)
    rates = ("rps", "per_server_cpu_s")
    summary = {label: {
        **over_rounds(rounds, label, (*rates, "p50_ms", "p99_ms")),
        **over_rounds(rounds, label, rates, base=f"Starlette {label.rsplit(' ', 1)[1]}",
                      suffix="_vs_starlette"),
        "non2xx": sum(float(x[label]["non2xx"] or 0) for x in rounds),
    } for label, *_ in runs}
    return {"rounds": args.rounds, "duration_s": args.duration, "rss_mb": rss,
            "summary": summary, "raw": rounds}


def print_rest(rest: dict[str, Any]) -> None:
    table(f"REST beside Starlette ({rest['rounds']} rotated rounds of {rest['duration_s']} s, "
          "wrk -t1 -c32; median, min-max)",
          ["path", "req/s", "min-max", "/ Starlette", "min-max", "per server CPU s",
           "/ Starlette", "min-max", "p50 ms", "p99 ms", "p99 min-max"],
          rest["summary"],
          [("rps", ",.0f", True), ("rps_vs_starlette", ".2f", True),
           ("per_server_cpu_s", ",.0f", False), ("per_server_cpu_s_vs_starlette", ".2f", True),
           ("p50_ms", ".2f", False), ("p99_ms", ".2f", True)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only",
                    default="simforge,fastapi,fastapi-model,starlette,mcp,rest,openenv")
    ap.add_argument("--baseline-root", default=None,
                    help="REST and OpenEnv parts: also serve simforge from this checkout (a "
                         "worktree of the commit before), interleaved with the others")
    ap.add_argument("--ws-connections", type=int, default=32,
                    help="OpenEnv /ws: concurrent connections of the load")
    ap.add_argument("--rounds", type=int, default=5,
                    help="MCP beside REST, REST beside Starlette, OpenEnv: interleaved rounds")
    ap.add_argument("--port-offset", type=int, default=0,
                    help="MCP, REST and OpenEnv parts: added to their ports (18195, 18196, "
                         "18200-18202), so that two sittings on one machine do not meet")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--churn-rounds", type=int, default=180,
                    help="--only ws-churn: rounds of 32 connections, each a reset and 30 steps")
    ap.add_argument("--load-processes", type=int, default=4,
                    help="the 500-session load: processes of the load generator")
    ap.add_argument("--load-cpus", default=CLIENT_CPU,
                    help="the 500-session load: CPUs its processes are pinned to")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "simforge-serve-bench.json"))
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed (apt-get install wrk)")
    names = args.only.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="simforge-bench-"))
    records = []
    if "simforge" in names:
        records.append(
            bench(
                "simforge serve",
                simforge_cmd(18190),
                18190,
                [
                    ("read", READ[0], lua(READ[1], tmp, "read")),
                    ("write", WRITE[0], lua(WRITE[1], tmp, "write")),
                ],
                args,
            )
        )
    peers = {
        "fastapi": ("fastapi_plain", 18191),
        "fastapi-model": ("fastapi_model", 18192),
        "starlette": ("starlette_app", 18193),
    }
    post = lua(PEER_POST[1], tmp, "peer_post")
    for name in names:
        if name in peers:
            module, port = peers[name]
            cmd = [
                str(UVICORN),
                f"{module}:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
                "--log-level",
                "warning",
                "--no-access-log",
            ]
            # the peers answer 404 on /health, which is enough to know they are up
            records.append(
                bench(
                    name,
                    cmd,
                    port,
                    [("read", PEER_GET, None), ("write", PEER_POST[0], post)],
                    args,
                    cwd=PEERS,
                )
            )
    report: dict[str, object] = {"servers": records}
    if "mcp" in names:
        report["mcp"] = mcp_side_by_side(args, tmp, 18195 + args.port_offset)
        report["mcp_in_process"] = mcp_in_process()
    if "rest" in names:
        report["rest"] = rest_side_by_side(args, tmp, 18200 + args.port_offset)
    if "openenv" in names:
        report["openenv"] = openenv_side_by_side(args, 18196 + args.port_offset)
    if "ws-churn" in names:
        report["ws_churn"] = churn = ws_churn(args, 18210 + args.port_offset)
        print("/ws under connection churn:", json.dumps(churn))
    if "openenv-handler" in names:
        report["openenv_handler"] = handler = openenv_handler(args)
        print("/ws handler in process, us per message (median over rounds, min-max):",
              json.dumps(handler["summary"]), "load average", handler["load_average"])
    if "rest-handler" in names:
        report["rest_handler"] = rest = rest_handler(args)
        print("tool plane through the HTTP protocol in process, us per request (median over "
              "rounds, min-max):", json.dumps(rest["summary"]), "load average",
              rest["load_average"])
    if "load" in names:
        report["load_500x20"] = load_500(18194, processes=args.load_processes,
                                         client_cpus=args.load_cpus)
    if "simforge" in names:
        report["idle_session"] = idle_session_memory()
        if not args.skip_load and "load" not in names:
            report["load_500x20"] = load_500(18194, processes=args.load_processes,
                                             client_cpus=args.load_cpus)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print_table(report)


def print_mcp(report: dict[str, object]) -> None:
    mcp = report.get("mcp")
    if isinstance(mcp, dict):
        rows = {label: {"vs_bare": row.get("per_server_cpu_s_vs_bare", "-"), **row}
                for label, row in mcp["summary"].items()}
        table(f"MCP tools/call beside REST and a bare mcp server ({mcp['rounds']} rotated "
              f"rounds of {mcp['duration_s']} s, wrk -t1 -c32; median, min-max)",
              ["path", "req/s", "min-max", "per server CPU s", "min-max", "/ REST (CPU)",
               "min-max", "/ bare mcp (CPU)", "min-max", "p50 ms", "p99 ms", "server CPU"],
              rows,
              [("rps", ",.0f", True), ("per_server_cpu_s", ",.0f", True),
               ("per_server_cpu_s_vs_rest", ".2f", True), ("vs_bare", ".2f", True),
               ("p50_ms", ".2f", False), ("p99_ms", ".2f", False),
               ("server_cpu_share", ".0%", False)])
    inproc = report.get("mcp_in_process")
    if isinstance(inproc, dict):
        print("\nIn process, us per request (best batch, median batch; best is what a "
              "shared machine disturbs least):")
        for label, row in inproc["us_per_request"].items():
            print(f"  {label}: {row['min']} (median {row['median']})")
        print("Pieces, us:", json.dumps(inproc["us_per_piece"]))


def print_table(report: dict[str, object]) -> None:
    print_mcp(report)
    for key, show in (("rest", print_rest), ("openenv", print_openenv)):
        part = report.get(key)
        if isinstance(part, dict):
            show(part)
    for key in ("idle_session", "load_500x20"):
        if key in report:
            print(f"{key}: {json.dumps(report[key])}")
    servers = report["servers"]
    assert isinstance(servers, list)
    if not servers:
        return
    print(
        "| server | read req/s | read p50 ms | read p99 ms | write req/s | write p50 ms | write p99 ms | RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in servers:
        rd, wr = r["read"], r["write"]
        print(
            f"| {r['server']} | {rd['rps']:,.0f} | {rd['p50_ms']} | {rd['p99_ms']} | "
            f"{wr['rps']:,.0f} | {wr['p50_ms']} | {wr['p99_ms']} | {r['rss_mb']} |"
        )
    by = {r["server"]: r for r in servers}
    if "simforge serve" in by:
        me = by["simforge serve"]
        for peer in ("fastapi", "fastapi-model", "starlette"):
            if peer in by:
                print(
                    f"simforge / {peer}: read {me['read']['rps'] / by[peer]['read']['rps']:.2f}x, "
                    f"write {me['write']['rps'] / by[peer]['write']['rps']:.2f}x"
                )


if __name__ == "__main__":
    main()
