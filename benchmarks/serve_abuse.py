"""HTTP abuse figures against a real `simforge serve` process with its default limits (see
RELIABILITY.md): 200 MB bodies to every route, 300 slowloris connections, integers beyond 64
bits, fault profiles given as paths. Prints JSON.

    python benchmarks/serve_abuse.py [PORT]
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serve.test_abuse import ROUTES, push  # noqa: E402

SID = "abuse-session-0123456789"


def _status(pid: int, key: str) -> int:
    """A line of /proc/PID/status, in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) // 1024
    raise KeyError(key)


def slowloris(port: int, connections: int = 300, patience: float = 60.0) -> dict[str, Any]:
    """Connections that dribble their headers a byte every 0.5 s: when each is dropped."""
    socks = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /tools/get_customer HTTP/1.1\r\nHost: t\r\n")
        s.setblocking(False)
        socks.append(s)
    start = time.monotonic()
    dropped: dict[int, float] = {}
    while len(dropped) < connections and time.monotonic() - start < patience:
        for i, s in enumerate(socks):
            if i in dropped:
                continue
            try:
                data = s.recv(4096)
                if not data or b" 408 " in data:
                    dropped[i] = time.monotonic() - start
            except BlockingIOError:
                try:
                    s.send(b"X")
                except OSError:
                    dropped[i] = time.monotonic() - start
            except OSError:
                dropped[i] = time.monotonic() - start
        time.sleep(0.5)
    for s in socks:
        s.close()
    times = sorted(dropped.values())
    return {"connections": connections, "dropped": len(times),
            "first_drop_s": round(times[0], 1) if times else None,
            "last_drop_s": round(times[-1], 1) if times else None}


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    server = subprocess.Popen(
        [sys.executable, "-m", "simforge", "serve", "tests/fixtures/scenarios/mini.yaml",
         "--port", str(port), "--token", "secret", "--time-scale", "0"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": "Bearer secret", "content-type": "application/json"}
    out: dict[str, Any] = {}
    try:
        for _ in range(300):
            try:
                httpx.get(f"{url}/health")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        out["rss_before_mib"] = _status(server.pid, "VmRSS")
        bodies = {}
        for chunked in (False, True):
            for path in ROUTES:
                status, sent = push(port, path, 200 << 20, chunked=chunked)
                framing = "chunked" if chunked else "content-length"
                bodies[f"{framing} {path}"] = {"status": status.decode(), "sent_mib": sent >> 20}
        out["200mb_bodies"] = bodies
        out["peak_rss_after_bodies_mib"] = _status(server.pid, "VmHWM")
        out["slowloris"] = slowloris(port)
        r = httpx.post(f"{url}/sessions", content=b'{"seed": 18446744073709551616}', headers=auth)
        out["wide_int_seed"] = [r.status_code, r.json()["errors"][0]["field"]]
        httpx.post(f"{url}/sessions", json={"session_id": SID}, headers=auth)
        step = (b'{"action": {"tool_calls": [{"name": "get_customer", "arguments": '
                b'{"customer_id": 99999999999999999999}}]}}')
        r = httpx.post(f"{url}/sessions/{SID}/step", content=step, headers=auth)
        out["wide_int_step"] = [r.status_code, r.json()["errors"][0]["field"]]
        r = httpx.get(f"{url}/sessions/{SID}/trajectory", headers=auth)
        out["trajectory_after"] = r.status_code
        faults = {}
        for path in (ROOT / "simforge/faults/profiles/flaky-network.yaml", ROOT / "pyproject.toml",
                     ROOT / "scenarios/missing.yaml", Path("/etc/passwd")):
            r = httpx.post(f"{url}/sessions", json={"faults": str(path)}, headers=auth)
            faults[path.name] = [r.status_code, r.json().get("code")]
        out["faults_as_paths"] = faults
        out["peak_rss_end_mib"] = _status(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(10)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
