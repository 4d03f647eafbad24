"""What the faults that fired on one call do to it: :class:`CallFaults`, the call's decisions,
which each fired fault changes through its own hook (:meth:`FaultKind.add_to
<simforge.faults.kinds.FaultKind.add_to>`) and which the call pipeline reads at each stage."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from simforge.tools.errors import ToolError
from simforge.trace.episode import InjectedFault

if TYPE_CHECKING:
    from simforge.faults.kinds import (
        ConnectionReset,
        FaultKind,
        Latency,
        Timeout,
        Where,
    )


class CallFaults:
    """The decisions for one call. The first ``reject`` wins; latencies compose; lags take the
    largest; result rewrites apply in rule order; the first ``wire`` fault corrupts the
    answer's bytes."""

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
        "wire",
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
        self.wire: Any = None

    def add(self, record: InjectedFault, fault: FaultKind, params: dict[str, Any]) -> None:
        """A fault fired: keep its record and let the fault change the call's decisions."""
        self.records.append(record)
        fault.add_to(self, params)

    def reject_with(self, error: ToolError) -> None:
        """Answer ``error`` instead of running the tool (the first rejection wins)."""
        if self.reject is None:
            self.reject = error

    def rng(self) -> random.Random:
        """The stream for this call's fault parameters, seeded only if a fault needs one."""
        if self._rng is None:
            self._rng = random.Random(self._rng_key)
        return self._rng

    def latency(self, base: float) -> float:
        for fault in self.latencies:
            base = fault.delay(base, self.rng)
        return base

    def transform(self, result: Any, where: Where) -> Any:
        for fault in self.results:
            result = fault.apply(result, self.rng, where)
        return result

    @property
    def changes_writes(self) -> bool:
        return self.noop or self.write_lag is not None

    def observed(self, error: dict[str, Any] | None) -> None:
        """Note on every record what the agent saw: the error, or a (possibly rewritten) success."""
        seen: Any = error if error is not None else {"ok": True}
        for record in self.records:
            record.observed = seen
