"""What the faults that fired on one call do to it, gathered by stage for the call pipeline."""

from __future__ import annotations

import random
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

    def add(self, fault: FaultKind, record: InjectedFault, params: dict[str, Any]) -> None:
        self.records.append(record)
        if isinstance(fault, RateLimit):
            self._reject(
                ToolError(
                    429,
                    "rate_limited",
                    f"rate limit exceeded; retry after {params['retry_after']:.3g} s",
                    retry_after=params["retry_after"],
                )
            )
        elif isinstance(fault, ErrorStatus | Outage | Flapping):
            code, message = status_body(fault.status, getattr(fault, "message", None))
            self._reject(ToolError(fault.status, code, message))
        elif isinstance(fault, Latency):
            self.latencies.append(fault)
        elif isinstance(fault, Timeout):
            self.hang = self.hang or fault
        elif isinstance(fault, ConnectionReset):
            self.reset = self.reset or fault
        elif isinstance(fault, StaleRead):
            self.read_lag = max(self.read_lag or 0.0, fault.lag)
        elif isinstance(fault, WriteLag):
            self.write_lag = max(self.write_lag or 0.0, fault.lag)
        elif isinstance(fault, DuplicateEffect):
            self.duplicate = True
        elif isinstance(fault, SilentNoop):
            self.noop = True
        else:
            self.results.append(fault)

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
