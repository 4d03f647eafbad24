"""Faults of credentials, clocks and data: answers that are wrong in ways an agent must notice.

- **Auth** (LitmusChaos / Harness API faults): a token that expires mid-episode (401 with
  ``token_expired``, until the agent follows the refresh flow the error names: a call to the
  refresh tool the fault offers, :mod:`simforge.faults.surface`); a permission revoked during
  the episode (403, not transient: retrying does not help, asking for help does).
- **Clock** (Chaos Mesh TimeChaos, Gremlin time travel): every timestamp a tool returns is
  skewed by a fixed offset.
- **Plausible but wrong data** (tau2 issue #167: 0 of 439 runs recovered from corrupted tool
  data): a read returns a consistent, well-typed value that belongs to another entity (another
  order's status, another customer's email), detectable only by cross-checking a second tool;
  a body patched as a misbehaving proxy or a stale cache would; an answer padded to a length
  that crowds out the rest of the agent's context.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

from pydantic import Field

from simforge.faults.effects import Wrapper
from simforge.faults.kinds import FaultKind, Refuse, Rejecting, Rng, Stage, Where
from simforge.tools.errors import ToolError

REFRESH_TOOL = "refresh_session"


class TokenExpiry(FaultKind):
    """The session's token expires ``after`` seconds into the episode (and every ``lifetime``
    seconds after each refresh): calls answer 401 ``token_expired`` until the agent calls the
    refresh tool (``tool``, offered for the episode), then work again."""

    stage: ClassVar[Stage] = "reject"
    gated: ClassVar[bool] = True
    kind: Literal["token_expiry"] = "token_expiry"
    after: float = Field(120.0, ge=0)
    lifetime: float = Field(600.0, gt=0)
    tool: str = Field(REFRESH_TOOL, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")

    def gate(self, state: dict[str, Any], tool: str, now: float) -> dict[str, Any] | None:
        if tool == self.tool:
            return None  # the refresh flow itself always works
        expires = state.setdefault("expires_at", self.after)
        return {} if now >= expires else None

    wrapper: ClassVar[type[Wrapper] | None] = Refuse

    def refusal(self, params: dict[str, Any]) -> ToolError:
        return ToolError(
            401, "token_expired",
            f"the session token has expired; call {self.tool} to get a new one, then retry",
        )

    def refreshed(self, state: dict[str, Any], now: float) -> float:
        """The refresh tool was called: the next expiry."""
        state["expires_at"] = now + self.lifetime
        return float(state["expires_at"])


class PermissionRevoked(Rejecting):
    """The agent's permission on the target tools is revoked (set the time with ``when.start``):
    403 ``permission_denied``, not transient."""

    stage: ClassVar[Stage] = "reject"
    transient: ClassVar[bool] = False
    kind: Literal["permission_revoked"] = "permission_revoked"
    message: str = "your access to this operation was revoked; ask an administrator"

    def error(self) -> ToolError:
        return ToolError(403, "permission_denied", self.message)


_ISO = re.compile(
    r"^(\d{4}-\d{2}-\d{2})([T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)


def _skew(value: str, seconds: float) -> str:
    match = _ISO.match(value)
    if match is None:
        return value
    date, clock, zone = match.groups()
    try:
        if clock is None:
            moved = datetime.fromisoformat(date) + timedelta(seconds=seconds)
            return moved.date().isoformat()
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    text = (parsed + timedelta(seconds=seconds)).isoformat(sep=clock[0])
    if zone == "Z" and text.endswith("+00:00"):
        text = text[:-6] + "Z"
    return text


def _walk(value: Any, fn: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    return fn(value)


class ClockSkew(FaultKind):
    """Every ISO-8601 date and timestamp in results is off by ``seconds`` (a server whose clock
    drifted): dates near a deadline land on the wrong side of it."""

    stage: ClassVar[Stage] = "result"
    kind: Literal["clock_skew"] = "clock_skew"
    seconds: float = Field(-86400.0)

    def apply(self, result: Any, rng: Rng, where: Where) -> Any:
        return _walk(result, lambda v: _skew(v, self.seconds) if isinstance(v, str) else v)


class WrongValue(FaultKind):
    """A read returns, for ``field`` (default: a seeded choice of the result's plain fields,
    ids excepted), the value another row of the same entity has: consistent, well typed, and
    wrong; only a second source shows it."""

    stage: ClassVar[Stage] = "result"
    only_for: ClassVar[Literal["read", "write"] | None] = "read"
    transient: ClassVar[bool] = False
    kind: Literal["wrong_value"] = "wrong_value"
    field: str | None = None

    def apply(self, result: Any, rng: Rng, where: Where) -> Any:
        if not isinstance(result, dict) or not where.spec.entities:
            return result
        entity = where.spec.entities[0]
        if entity not in where.world.schemas:
            return result
        candidates = [self.field] if self.field else sorted(
            k for k, v in result.items()
            if k != "id" and not k.endswith("_id") and isinstance(v, str | int | float | bool)
            and v is not None
        )
        candidates = [k for k in candidates if k in result]
        if not candidates:
            return result
        stream = rng()
        name = candidates[stream.randrange(len(candidates))]
        current = result[name]
        others = sorted(
            {repr(row.get(name)): row.get(name) for row in where.world.rows(entity)
             if row.get(name) is not None and row.get(name) != current}.items()
        )
        if not others:
            return result
        return {**result, name: others[stream.randrange(len(others))][1]}


def _merge(value: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (``null`` removes a key)."""
    if not isinstance(patch, dict):
        return patch
    base = dict(value) if isinstance(value, dict) else {}
    for key, sub in patch.items():
        if sub is None:
            base.pop(key, None)
        else:
            base[key] = _merge(base.get(key), sub)
    return base


class BodyPatch(FaultKind):
    """The result as a proxy or a stale cache rewrote it: a JSON merge patch (``{"status":
    "pending", "total": null}``); on a list of rows, applied to each row."""

    stage: ClassVar[Stage] = "result"
    kind: Literal["body_patch"] = "body_patch"
    patch: dict[str, Any] = Field(min_length=1)

    def apply(self, result: Any, rng: Rng, where: Where) -> Any:
        if isinstance(result, list):
            return [_merge(r, self.patch) if isinstance(r, dict) else r for r in result]
        for key in ("items", "results", "data", "records"):
            if isinstance(result, dict) and isinstance(result.get(key), list):
                rows = [_merge(r, self.patch) if isinstance(r, dict) else r for r in result[key]]
                return {**result, key: rows}
        return _merge(result, self.patch)


class LongOutput(FaultKind):
    """The answer padded to about ``chars`` characters: a verbose ``field`` of log text (a
    dict result), or filler rows after the real ones (a list): the facts the agent needs are
    still there, buried."""

    stage: ClassVar[Stage] = "result"
    kind: Literal["long_output"] = "long_output"
    chars: int = Field(20_000, ge=100, le=2_000_000)
    field: str = "debug_log"

    def apply(self, result: Any, rng: Rng, where: Where) -> Any:
        stream = rng()
        words = ("request", "upstream", "cache", "replica", "ok", "retry", "span", "trace",
                 "shard", "latency", "token", "queue", "flush", "index", "commit")
        lines = []
        size = 0
        n = 0
        while size < self.chars:
            line = (f"{n:06d} " + " ".join(words[stream.randrange(len(words))]
                                          for _ in range(8)))
            lines.append(line)
            size += len(line) + 1
            n += 1
        text = "\n".join(lines)
        if isinstance(result, dict):
            return {**result, self.field: text}
        if isinstance(result, list):
            return [*result, {self.field: text}]
        return f"{result}\n{text}" if isinstance(result, str) else result


DATA_KINDS: tuple[type[FaultKind], ...] = (
    TokenExpiry,
    PermissionRevoked,
    ClockSkew,
    WrongValue,
    BodyPatch,
    LongOutput,
)
