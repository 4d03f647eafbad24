"""Faults as wrappers around a call's stages, the way a transport wraps a transport in httpx.

A call's stages (:class:`simforge.sim.calls.Stages`) answer one hook per stage (:class:`Hooks`):
``gateway`` (refuse before the tool is reached), ``capacity`` (the tool's slots), ``draw`` (the
latency and the error model's draw), ``serve`` (wait for the answer: what a hang or a reset
does instead), ``invoke`` (the handler against the world), ``answer`` (the result it returns)
and ``deliver`` (the answer put on the wire). A fault that fires on a call is a
:class:`Wrapper` around the call's stages that overrides the hook of its kind's stage and hands
every other hook to what it wraps; the call runs on the outermost wrapper. The wrappers of one
call are composed in rule order, the first rule's innermost (nearest the service), so what a
wrapper does after the stages it wraps have answered happens in rule order: the first refusal
wins, latencies compose in order, results are rewritten in order, the first wire fault's bytes
reach the client.

:class:`FaultedCall` is what the plan decided for one call: the faults that fired (with the
parameters a gated kind fired with), their records, and the call's fault stream.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Protocol

from simforge.trace.episode import InjectedFault

if TYPE_CHECKING:
    from simforge.faults.kinds import FaultKind, Where
    from simforge.tools.errors import ToolError
    from simforge.tools.spec import ToolSpec


class Hooks(Protocol):
    """A call's stages, one hook each: what a :class:`Wrapper` wraps (the kernel's ``Stages``,
    or another wrapper). ``tool`` is a :class:`~simforge.tools.tool.Tool`, ``out`` the call's
    ``CallOutcome``, ``ctx`` its :class:`~simforge.tools.context.ToolContext`, ``stages`` the
    session's ``Stages`` (which runs the call) and ``top`` the outermost wrapper (what the call
    runs on)."""

    def gateway(self, tool: Any, out: Any) -> ToolError | None: ...

    def capacity(self, spec: ToolSpec) -> Any: ...

    def draw(self, tool: Any, out: Any) -> tuple[float, ToolError | None]: ...

    def serve(
        self, stages: Any, top: Any, tool: Any, out: Any, latency: float,
        natural: ToolError | None, deadline: float | None, timeout: float | None,
    ) -> Generator[Any, Any, bool]: ...

    def invoke(self, tool: Any, ctx: Any, args: Any) -> Any: ...

    def answer(self, result: Any, where: Where) -> Any: ...

    def deliver(self, out: Any, result: Any) -> None: ...


class FaultedCall:
    """The faults that fired on one call, in rule order, with their records and the call's
    fault stream (seeded only if a fault draws from it)."""

    __slots__ = ("_rng", "_rng_key", "fired", "records", "rewrites", "stages")

    def __init__(self, rng_key: str) -> None:
        self.stages: Any = None
        """The session's stages the call runs on (set by :meth:`wrap`): a wrapper that needs
        the session (a write lag commits to it) reaches it here."""
        self._rng_key = rng_key
        self._rng: random.Random | None = None
        self.records: list[InjectedFault] = []
        self.fired: list[tuple[FaultKind, dict[str, Any]]] = []
        self.rewrites = False
        """Whether a fault that fired rewrites the result (a ``result`` kind: the one stage
        whose hook needs the world, the tool and the time, built only then)."""

    def add(self, record: InjectedFault, fault: FaultKind, params: dict[str, Any]) -> None:
        """A fault fired: keep its record; it wraps the call's stages when the call starts."""
        self.records.append(record)
        self.fired.append((fault, params))
        if fault.stage == "result":
            self.rewrites = True

    def wrap(self, stages: Hooks) -> Wrapper:
        """The call's stages wrapped by every fault that fired, the first rule's innermost."""
        self.stages = stages
        hooks: Any = stages
        for fault, params in self.fired:
            hooks = fault.wrap(hooks, self, params)
        return hooks

    def rng(self) -> random.Random:
        """The stream for this call's fault parameters, seeded only if a fault needs one."""
        if self._rng is None:
            self._rng = random.Random(self._rng_key)
        return self._rng

    def observed(self, error: dict[str, Any] | None) -> None:
        """Note on every record what the agent saw: the error, or a (possibly rewritten) success."""
        seen: Any = error if error is not None else {"ok": True}
        for record in self.records:
            record.observed = seen


class Wrapper:
    """One fired fault around a call's stages: every hook is handed to ``inner`` (the stages,
    or the wrapper of an earlier rule) unless the subclass overrides it. A kind's wrapper
    overrides the hook of its kind's stage (:data:`HOOKS`) and nothing else (the registry
    checks it when it loads a kind); ``call`` is the
    call's :class:`FaultedCall` (its records and fault stream), ``fault`` the kind's instance
    and ``params`` what a gated kind fired with."""

    __slots__ = ("call", "fault", "inner", "params")

    def __init__(
        self, inner: Hooks, call: FaultedCall, fault: FaultKind, params: dict[str, Any]
    ) -> None:
        self.inner = inner
        self.call = call
        self.fault = fault
        self.params = params

    def gateway(self, tool: Any, out: Any) -> ToolError | None:
        return self.inner.gateway(tool, out)

    def capacity(self, spec: ToolSpec) -> Any:
        return self.inner.capacity(spec)

    def draw(self, tool: Any, out: Any) -> tuple[float, ToolError | None]:
        return self.inner.draw(tool, out)

    def serve(
        self, stages: Any, top: Any, tool: Any, out: Any, latency: float,
        natural: ToolError | None, deadline: float | None, timeout: float | None,
    ) -> Generator[Any, Any, bool]:
        return self.inner.serve(stages, top, tool, out, latency, natural, deadline, timeout)

    def invoke(self, tool: Any, ctx: Any, args: Any) -> Any:
        return self.inner.invoke(tool, ctx, args)

    def answer(self, result: Any, where: Where) -> Any:
        return self.inner.answer(result, where)

    def deliver(self, out: Any, result: Any) -> None:
        self.inner.deliver(out, result)


HOOKS: dict[str, str] = {
    "reject": "gateway",
    "capacity": "capacity",
    "latency": "draw",
    "hang": "serve",
    "handler": "invoke",
    "result": "answer",
    "wire": "deliver",
}
"""The hook each stage's wrappers override (``surface`` kinds change the tools an episode
offers, not a call: :mod:`simforge.faults.surface`)."""
