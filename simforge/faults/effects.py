"""What the faults that fired on one call do to it, gathered by stage for the call pipeline."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from simforge.faults.kinds import (
    ConnectionReset,
    DuplicateEffect,
    ErrorStatus,
    FaultKind,
    Flapping,
    Latency,
    Outage,
    RateLimit,
    SilentNoop,
    StaleRead,
    Timeout,
    WriteLag,
    status_body,
)
from simforge.tools.errors import ToolError
from simforge.trace.episode import InjectedFault


class CallFaults:
    """The decisions for one call. The first ``reject`` wins; latencies compose; lags take the
    largest; result rewrites apply in rule order."""

    __slots__ = (
        "_rng",
        "_rng_key",
        "duplicate",
        "hang",
        "latencies",
        "noop",
        "read_lag",
        "records",
        "reject",
        "reset",
        "results",
        "write_lag",
    )

    def __init__(self, rng_key: str) -> None:
        self._rng_key = rng_key
        self._rng: random.Random | None = None
        self.records: list[InjectedFault] = []
        self.reject: ToolError | None = None
        self.latencies: list[Latency] = []
        self.hang: Timeout | None = None
        self.reset: ConnectionReset | None = None
        self.read_lag: float | None = None
        self.write_lag: float | None = None
        self.duplicate = False
        self.noop = False
        self.results: list[Any] = []

    def add(
        self, record: InjectedFault, adder: Adder, fault: FaultKind, params: dict[str, Any]
    ) -> None:
        """A fault fired: keep its record and let ``adder`` (:func:`stage_of` the fault, which
        the plan finds once per rule) change the call's decisions."""
        self.records.append(record)
        adder(self, fault, params)

    def _reject(self, error: ToolError) -> None:
        if self.reject is None:
            self.reject = error

    def rng(self) -> random.Random:
        """The stream for this call's fault parameters, seeded only if a fault needs one."""
        if self._rng is None:
            self._rng = random.Random(self._rng_key)
        return self._rng

    def latency(self, base: float) -> float:
        for fault in self.latencies:
            base = fault.apply(base, self.rng)
        return base

    def transform(self, result: Any) -> Any:
        for fault in self.results:
            result = fault.apply(result, self.rng)
        return result

    @property
    def changes_writes(self) -> bool:
        return self.noop or self.write_lag is not None

    def observed(self, error: dict[str, Any] | None) -> None:
        """Note on every record what the agent saw: the error, or a (possibly rewritten) success."""
        seen: Any = error if error is not None else {"ok": True}
        for record in self.records:
            record.observed = seen


Adder = Callable[[CallFaults, Any, dict[str, Any]], None]
"""What a fired fault of one kind adds to a call's decisions: ``(decisions, fault, params)``."""


def _rate_limited(fx: CallFaults, fault: RateLimit, params: dict[str, Any]) -> None:
    fx._reject(
        ToolError(
            429,
            "rate_limited",
            f"rate limit exceeded; retry after {params['retry_after']:.3g} s",
            retry_after=params["retry_after"],
        )
    )


def _latency(fx: CallFaults, fault: Latency, params: dict[str, Any]) -> None:
    fx.latencies.append(fault)


def _hang(fx: CallFaults, fault: Timeout, params: dict[str, Any]) -> None:
    fx.hang = fx.hang or fault


def _reset(fx: CallFaults, fault: ConnectionReset, params: dict[str, Any]) -> None:
    fx.reset = fx.reset or fault


def _read_lag(fx: CallFaults, fault: StaleRead, params: dict[str, Any]) -> None:
    fx.read_lag = max(fx.read_lag or 0.0, fault.lag)


def _write_lag(fx: CallFaults, fault: WriteLag, params: dict[str, Any]) -> None:
    fx.write_lag = max(fx.write_lag or 0.0, fault.lag)


def _duplicate(fx: CallFaults, fault: DuplicateEffect, params: dict[str, Any]) -> None:
    fx.duplicate = True


def _noop(fx: CallFaults, fault: SilentNoop, params: dict[str, Any]) -> None:
    fx.noop = True


def _result(fx: CallFaults, fault: Any, params: dict[str, Any]) -> None:
    fx.results.append(fault)


def stage_of(fault: FaultKind) -> Adder:
    """How a fault of this kind changes a call's decisions: found once per rule (the plan
    keeps it), not once per fault that fires."""
    if isinstance(fault, RateLimit):
        return _rate_limited
    if isinstance(fault, ErrorStatus | Outage | Flapping):
        # the same answer every time: built once (it is only ever read, never raised)
        code, message = status_body(fault.status, getattr(fault, "message", None))
        error = ToolError(fault.status, code, message)

        def status(fx: CallFaults, fault: Any, params: dict[str, Any]) -> None:
            fx._reject(error)

        return status
    if isinstance(fault, Latency):
        return _latency
    if isinstance(fault, Timeout):
        return _hang
    if isinstance(fault, ConnectionReset):
        return _reset
    if isinstance(fault, StaleRead):
        return _read_lag
    if isinstance(fault, WriteLag):
        return _write_lag
    if isinstance(fault, DuplicateEffect):
        return _duplicate
    if isinstance(fault, SilentNoop):
        return _noop
    return _result
