"""Byte and protocol faults (WireMock's and Toxiproxy's kind): the service did its work, and
the answer that reaches the client is broken on the wire.

Each renders truly on every surface:

- **HTTP** (``simforge serve``, harnesses): real bytes on the socket. A truncated body promises
  its full ``Content-Length`` and stops; garbage is random bytes and then the connection closes;
  a slow body is written in small chunks at the configured bandwidth (scaled by the server's
  time scale); a wrong content type is a real ``Content-Type`` header; a header patch is in
  the headers. :func:`render` writes them (the tool plane calls it).
- **env API, OpenEnv, MCP**: what an agent's HTTP library would report, as an error of the call:
  ``{"status": 200, "code": "malformed_body", "message": ..., "body": <the text received>}``.
  A wrong content type and a header patch leave the result as it is there (an in-process agent
  reads no headers) and say so in ``renders``.

A write whose answer is corrupted has still happened: the agent that retries it may apply it
twice, as against a real service.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from simforge.faults.effects import Wrapper
from simforge.faults.kinds import FaultKind, Stage

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_ENV_ONLY_HEADERS = "the result as it is (an in-process agent reads no headers)"


class Corrupt(Wrapper):
    """A wire fault's wrapper: the answer is delivered, then its bytes are what the fault makes
    of them (an in-process agent gets the error its HTTP library would report), unless an
    earlier rule's wire fault already has them."""

    __slots__ = ()

    def deliver(self, out: Any, result: Any) -> None:
        self.inner.deliver(out, result)
        if out.wire is not None:
            return
        wire: Any = self.fault
        out.wire = wire
        if not wire.keeps_result:
            out.error = wire.error(encode(result), self.call.rng())


class WireFault(FaultKind):
    """A fault that acts on the answer's bytes (the ``wire`` stage)."""

    stage: ClassVar[Stage] = "wire"
    wrapper: ClassVar[type[Wrapper] | None] = Corrupt
    keeps_result: ClassVar[bool] = False
    """Whether an in-process agent still gets the result (the fault is in headers only)."""

    def body(self, payload: bytes, rng: random.Random) -> bytes:
        """The bytes the client receives instead of ``payload``."""
        return payload

    def error(self, payload: bytes, rng: random.Random) -> dict[str, Any]:
        """What an agent's HTTP library reports for these bytes (env, OpenEnv, MCP)."""
        received = self.body(payload, rng)
        return {
            "status": 200,
            "code": self.kind,
            "message": self.describe(len(payload), len(received)),
            "body": received.decode("utf-8", "replace")[:2000],
        }

    def describe(self, sent: int, received: int) -> str:
        return "the response body could not be read"

    def content_type(self) -> bytes | None:
        return b"application/json"

    def headers(self) -> list[tuple[bytes, bytes]]:
        return []


class MalformedBody(WireFault):
    """The body is not valid JSON: a structural character dropped or replaced."""

    kind: Literal["malformed_body"] = "malformed_body"

    def body(self, payload: bytes, rng: random.Random) -> bytes:
        if len(payload) < 2:
            return b"{"
        marks = [i for i, c in enumerate(payload) if c in b'{}[]:,"']
        cut = marks[rng.randrange(len(marks))] if marks else len(payload) // 2
        return payload[:cut] + payload[cut + 1 :] + (b"" if marks else b"}")

    def describe(self, sent: int, received: int) -> str:
        return "the response body is not valid JSON"


class TruncatedBody(WireFault):
    """The body stops part way (at ``fraction`` of it, or a seeded point); over HTTP the full
    ``Content-Length`` is promised and the connection closes early."""

    kind: Literal["truncated_body"] = "truncated_body"
    fraction: float | None = Field(None, gt=0, lt=1)

    def body(self, payload: bytes, rng: random.Random) -> bytes:
        share = self.fraction if self.fraction is not None else rng.uniform(0.1, 0.9)
        return payload[: int(len(payload) * share)]

    def describe(self, sent: int, received: int) -> str:
        return f"the response ended after {received} of {sent} bytes"


class GarbageBody(WireFault):
    """Random bytes instead of the body, then the connection closes."""

    kind: Literal["garbage_body"] = "garbage_body"
    size: int = Field(64, ge=1, le=1 << 20)

    def body(self, payload: bytes, rng: random.Random) -> bytes:
        return rng.randbytes(self.size)

    def describe(self, sent: int, received: int) -> str:
        return f"{received} bytes of garbage, then the connection closed"


class SlowBody(WireFault):
    """The body is dribbled at ``bytes_per_second``: the call takes ``size / bandwidth`` longer
    (simulated), and over HTTP the bytes really arrive that slowly (scaled)."""

    kind: Literal["slow_body"] = "slow_body"
    keeps_result: ClassVar[bool] = True
    renders: ClassVar[dict[str, str]] = {"env": "the result, later by the transfer time"}
    bytes_per_second: float = Field(2048.0, gt=0)

    def transfer(self, size: int) -> float:
        return size / self.bytes_per_second


class WrongContentType(WireFault):
    """The right body under a wrong ``Content-Type`` (``text/html``), or none."""

    kind: Literal["wrong_content_type"] = "wrong_content_type"
    keeps_result: ClassVar[bool] = True
    renders: ClassVar[dict[str, str]] = {"env": _ENV_ONLY_HEADERS, "mcp": _ENV_ONLY_HEADERS}
    content: str | None = "text/html; charset=utf-8"

    def content_type(self) -> bytes | None:
        return self.content.encode() if self.content else None


class HeaderPatch(WireFault):
    """Response headers added or replaced (``{"Cache-Control": "no-store", "Retry-After":
    "0"}``): what a proxy in the way does."""

    kind: Literal["header_patch"] = "header_patch"
    keeps_result: ClassVar[bool] = True
    renders: ClassVar[dict[str, str]] = {"env": _ENV_ONLY_HEADERS, "mcp": _ENV_ONLY_HEADERS}
    set: dict[str, str] = Field(min_length=1)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(k.lower().encode(), v.encode()) for k, v in self.set.items()]


WIRE_KINDS: tuple[type[FaultKind], ...] = (
    MalformedBody,
    TruncatedBody,
    GarbageBody,
    SlowBody,
    WrongContentType,
    HeaderPatch,
)


def encode(result: Any) -> bytes:
    """The JSON body a result would have had (what the wire fault corrupts)."""
    if result == "":
        return b""
    return json.dumps(result, default=repr, separators=(",", ":"), ensure_ascii=False).encode()


async def render(
    send: Send,
    fault: WireFault,
    result: Any,
    rng_key: str,
    call_id: str,
    time_scale: float,
    abort: Callable[[], Awaitable[None]],
) -> None:
    """Write ``result``'s answer as ``fault`` corrupts it, on a real HTTP response."""
    payload = encode(result)
    rng = random.Random(rng_key)
    headers: list[tuple[bytes, bytes]] = []
    content_type = fault.content_type()
    if content_type is not None:
        headers.append((b"content-type", content_type))
    headers.append((b"x-simforge-call-id", call_id.encode()))
    headers.extend(fault.headers())
    if isinstance(fault, TruncatedBody | GarbageBody):
        body = fault.body(payload, rng)
        length = len(payload) if isinstance(fault, TruncatedBody) else len(body) + 1
        headers.append((b"content-length", str(max(length, len(body) + 1)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        await abort()  # the promised rest never comes
        return
    body = payload if fault.keeps_result else fault.body(payload, rng)
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if isinstance(fault, SlowBody) and time_scale > 0 and body:
        chunk = max(1, int(fault.bytes_per_second * 0.05))  # 50 ms of simulated transfer
        for start in range(0, len(body), chunk):
            piece = body[start : start + chunk]
            await send({"type": "http.response.body", "body": piece,
                        "more_body": start + chunk < len(body)})
            await asyncio.sleep(fault.transfer(len(piece)) * time_scale)
        return
    await send({"type": "http.response.body", "body": body})
