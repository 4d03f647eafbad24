"""HTTP benchmark of `simforge serve`, side by side with bare FastAPI and Starlette.

Measured the way ``../shared/peers/run_bench.py`` measures the peer mock servers: each server
pinned to CPU 1 (``taskset -c 1``, one uvicorn worker), ``wrk -t1 -c32 -d10s --latency`` pinned to
CPU 0 after a 3 s warm-up, loopback only. simforge serves ``acme/refund-damaged-order-v1`` with
``--time-scale 0`` (answers at once; the simulated latency is still drawn and recorded).

    .venv/bin/python benchmarks/serve.py                 # everything (about 2 minutes)
    .venv/bin/python benchmarks/serve.py --only simforge --duration 5
    .venv/bin/python benchmarks/serve.py --skip-load      # no 500-session run

Also: memory per idle session (in process: tracemalloc and RSS over 2,000 sessions) and 500
concurrent sessions x 20 calls against the pinned server (errors, cross-session leaks).
Prints a markdown table and writes the figures as JSON (``--out``, default in the temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT.parent / "shared" / "peers" / "apps"
PY = Path(sys.executable)
UVICORN = PY.parent / "uvicorn"
SCENARIO = "acme/refund-damaged-order-v1"
TOKEN = "bench-token"
SERVER_CPU, CLIENT_CPU = "1", "0"

READ = ("/tools/get_customer", {"customer_id": "C-9001"})
WRITE = (
    "/tools/create_ticket",
    {"customer_id": "C-9001", "subject": "Printer on fire", "description": "It is on fire."},
)
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


def load_500(port: int) -> dict[str, object]:
    """500 concurrent sessions x 20 calls against the pinned server; each session writes ten
    tickets and must see exactly its own ten."""
    import asyncio

    async def one(c: httpx.AsyncClient, i: int) -> list[str]:
        sid = f"load-{i}"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = await c.post(
            "/sessions",
            json={"session_id": sid, "max_steps": 1000, "max_sim_seconds": 1e9,
                  "insecure_id": True},
            headers=auth,
        )
        if r.status_code != 201:
            return [f"{sid}: create {r.status_code}"]
        tools = {"Authorization": f"Bearer {r.json()['tool_token']}"}
        bad = []
        for k in range(19):
            if k < 10:
                body = {"customer_id": "C-9001", "subject": f"{sid}/{k}", "description": "x"}
                r = await c.post(f"/s/{sid}/tools/create_ticket", json=body, headers=tools)
            else:
                r = await c.post(f"/s/{sid}/tools/get_customer", json={"customer_id": "C-9001"},
                                 headers=tools)
            if r.status_code != 200:
                bad.append(f"{sid}: call {k}: {r.status_code}")
        r = await c.post(
            f"/s/{sid}/tools/list_tickets", json={"customer_id": "C-9001", "limit": 100},
            headers=tools,
        )
        mine = {t["subject"] for t in r.json().get("items", []) if t["subject"].startswith("load-")}
        if mine != {f"{sid}/{k}" for k in range(10)}:
            bad.append(f"{sid}: leak or loss: {sorted(mine)[:5]}")
        return bad

    async def run() -> tuple[list[str], float]:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120
        ) as c:
            t0 = time.monotonic()
            results = await asyncio.gather(*[one(c, i) for i in range(500)])
            return [p for r in results for p in r], time.monotonic() - t0

    os.sched_setaffinity(0, {int(CLIENT_CPU)})
    proc = start(simforge_cmd(port), port)
    try:
        problems, seconds = asyncio.run(run())
        rss = rss_mb(proc.pid)
    finally:
        stop(proc)
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return {
        "sessions": 500,
        "calls": 500 * 20,
        "seconds": round(seconds, 2),
        "errors_or_leaks": len(problems),
        "examples": problems[:5],
        "rss_mb_after": round(rss, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="simforge,fastapi,fastapi-model,starlette")
    ap.add_argument("--skip-load", action="store_true")
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
    if "simforge" in names:
        report["idle_session"] = idle_session_memory()
        if not args.skip_load:
            report["load_500x20"] = load_500(18194)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print_table(report)


def print_table(report: dict[str, object]) -> None:
    servers = report["servers"]
    assert isinstance(servers, list)
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
    for key in ("idle_session", "load_500x20"):
        if key in report:
            print(f"{key}: {json.dumps(report[key])}")


if __name__ == "__main__":
    main()
