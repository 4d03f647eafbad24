"""Headless Chromium driven over the DevTools protocol, for the report tests: load a page,
collect console errors and uncaught exceptions, evaluate JavaScript, take a screenshot."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic", "--no-first-run", "--hide-scrollbars", "--remote-debugging-port=0"]


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One Chromium process and one page, closed on exit."""

    def __init__(self, width: int = 1280, height: int = 2400) -> None:
        from websockets.sync.client import connect

        exe = executable()
        assert exe is not None
        self.profile = tempfile.mkdtemp(prefix="simforge-chromium-")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        url = None
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while url is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            if "DevTools listening on " in line:
                url = line.split("DevTools listening on ", 1)[1].strip()
        assert url, "chromium did not open its DevTools endpoint"
        self._connection = connect(url, max_size=64 * 2**20, open_timeout=30)
        self.ws = self._connection.__enter__()
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False}, session=True)

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False, timeout: float = 60) -> dict[str, Any]:
        n = next(self.ids)
        message: dict[str, Any] = {"id": n, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv(timeout=timeout))
            if reply.get("id") == n:
                assert "error" not in reply, reply
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)
        raise TimeoutError(method)

    def open(self, path: Path, fragment: str = "") -> None:
        self.events.clear()
        started = self.call("Page.navigate", {"url": path.resolve().as_uri() + fragment},
                            session=True)
        if "loaderId" not in started:  # a move within the page (a fragment): nothing loads
            return
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, "the page did not load"
            self.events.append(json.loads(self.ws.recv(timeout=60)))

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads since the page was opened."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails", {}))[:300])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                                 "assert"):
                out.append(json.dumps(params.get("args", []))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", "")[:300])
        return out

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png",
                                                                    "captureBeyondViewport": True},
                                          session=True)["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self._connection.__exit__(None, None, None)
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
