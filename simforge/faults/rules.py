"""Fault rules and profiles as they are written in YAML.

A rule is ``{id, fault: {kind, ...params}, target, when, probability}``. A profile is a named set
of rules plus background processes (production load competing for capacity, drift of the world
while the agent thinks). Every model forbids unknown fields, so a typo is an error naming the
field and what is allowed.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simforge import predicates
from simforge.tools.spec import ToolSpec

if TYPE_CHECKING:
    from simforge.faults.kinds import FaultKind as Fault
else:  # pydantic validates against every registered kind, told apart by `kind`
    from simforge.faults.registry import Fault


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_Strict):
    """Which calls a rule may hit: tool-name globs, tool kind, entity, argument predicates
    (``args: {amount: {gt: 100}}`` or ``args: {order_id: O-1001}`` for equality; the language
    of :mod:`simforge.predicates`)."""

    tools: list[str] = Field(default_factory=lambda: ["*"])
    kind: Literal["read", "write"] | None = None
    entities: list[str] = Field(default_factory=list)
    args: dict[str, Any] = Field(default_factory=dict)

    def matches_tool(self, spec: ToolSpec) -> bool:
        if not any(fnmatch.fnmatchcase(spec.name, pattern) for pattern in self.tools):
            return False
        if self.kind is not None and spec.kind != self.kind:
            return False
        return not self.entities or bool(set(self.entities) & set(spec.entities))

    def matches_args(self, args: Any) -> bool:
        return predicates.matches(args, self.args)


class When(_Strict):
    """When a rule may fire: a simulated-time window, after N calls to the tool, on the k-th
    call (0-based, per tool)."""

    start: float = Field(0.0, ge=0)
    end: float | None = Field(None, gt=0)
    after_calls: int = Field(0, ge=0)
    on_call: int | None = Field(None, ge=0)

    def open(self, now: float, call_index: int) -> bool:
        if now < self.start or (self.end is not None and now >= self.end):
            return False
        if call_index < self.after_calls:
            return False
        return self.on_call is None or call_index == self.on_call


class FaultRule(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    fault: Fault
    target: Target = Field(default_factory=Target)
    when: When = Field(default_factory=When)
    probability: float = Field(1.0, ge=0.0, le=1.0)

    def applies_to(self, spec: ToolSpec) -> bool:
        only = type(self.fault).only_for
        if only is not None and spec.kind != only:
            return False
        return self.target.matches_tool(spec)


class ArgValue(_Strict):
    """An argument of a background call: a constant, or a random existing id of an entity."""

    value: Any = None
    entity: str | None = None


class BackgroundLoad(_Strict):
    """Calls from other users, arriving as a Poisson stream at ``rate`` per second (scaled per
    hour of simulated time by ``profile``), competing with the agent for tool capacity."""

    kind: Literal["load"] = "load"
    name: str = "load"
    tools: list[str] = Field(min_length=1)
    rate: float = Field(gt=0)
    profile: list[float] = Field(default_factory=lambda: [1.0])
    args: dict[str, ArgValue] = Field(default_factory=dict)
    start: float = Field(0.0, ge=0)


class Event(_Strict):
    """Another actor changes the world while the agent works (Gaia2's events): every ``every``
    seconds on average (a Poisson stream), ``tool`` is called on a random row of ``entity``
    matching ``where``, its ``args`` constants or ``"$field"`` of that row (``"$id"``: its
    key). The tool need not be one the agent is offered (an approver replies, a customer
    cancels, stock moves). What it changed is recorded as the world's own, so the agent is not
    blamed for it, and the agent must notice it to act on the world as it is."""

    kind: Literal["event"] = "event"
    name: str = "event"
    tool: str
    entity: str
    every: float = Field(gt=0)
    where: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)
    start: float = Field(0.0, ge=0)
    limit: int | None = Field(None, ge=1)


class Drift(_Strict):
    """The world changes while the agent thinks: every ``every`` seconds on average, a random
    row of ``entity`` matching ``where`` gets ``set``."""

    kind: Literal["drift"] = "drift"
    name: str = "drift"
    entity: str
    every: float = Field(gt=0)
    where: dict[str, Any] = Field(default_factory=dict)
    set: dict[str, Any] = Field(min_length=1)
    start: float = Field(0.0, ge=0)


class FaultProfile(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    description: str = ""
    rules: list[FaultRule] = Field(default_factory=list)
    background: list[BackgroundLoad | Drift | Event] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_rules(self) -> FaultProfile:
        ids = [r.id for r in self.rules]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate rule ids {dupes}")
        return self

    @property
    def empty(self) -> bool:
        return not self.rules and not self.background


NONE = FaultProfile(name="none", description="No faults: the paired baseline.")
