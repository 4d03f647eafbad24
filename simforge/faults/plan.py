"""The FaultPlan: for each call, which rules fire, decided from keyed draws.

Each decision is a uniform number derived from ``(session seed, rule id, tool, call index on
that tool)`` by hashing, so the schedule of one tool does not shift when the agent calls
another tool more or less often, and the same seed with the plan switched off is the paired
baseline. Hashing (BLAKE2b) costs about a microsecond, where seeding a ``random.Random`` per
decision would cost ten; a ``random.Random`` is only created for the parameters of a fault that
actually fires.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from simforge.faults.effects import CallFaults
from simforge.faults.kinds import Flapping, RateLimit
from simforge.faults.rules import FaultProfile, FaultRule
from simforge.tools.spec import ToolSpec
from simforge.trace.episode import InjectedFault

_SCALE = float(2**64)


def keyed_uniform(seed: int, *key: object) -> float:
    digest = hashlib.blake2b("\x1f".join(map(str, (seed, *key))).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / _SCALE


class _Bucket:
    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, burst: int, rate: float) -> None:
        self.tokens = float(burst)
        self.burst = burst
        self.rate = rate
        self.stamp = 0.0

    def take(self, now: float) -> float | None:
        """``None`` when a token was taken, else the seconds until one is available."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / self.rate


class FaultPlan:
    """A profile bound to one session: matching cache, token buckets, keyed draws."""

    def __init__(self, profile: FaultProfile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        self.rules = [r for r in profile.rules if r.probability > 0]
        self._by_tool: dict[str, list[FaultRule]] = {}
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def rules_for(self, spec: ToolSpec) -> list[FaultRule]:
        rules = self._by_tool.get(spec.name)
        if rules is None:
            rules = [r for r in self.rules if r.applies_to(spec)]
            self._by_tool[spec.name] = rules
        return rules

    def decide(
        self, spec: ToolSpec, call_id: str, call_index: int, args: Any, now: float
    ) -> CallFaults | None:
        rules = self.rules_for(spec)
        if not rules:
            return None
        faults: CallFaults | None = None
        for rule in rules:
            if not rule.when.open(now, call_index) or not rule.target.matches_args(args):
                continue
            if (
                rule.probability < 1.0
                and keyed_uniform(self.seed, rule.id, spec.name, call_index) >= rule.probability
            ):
                continue
            fault = rule.fault
            params: dict[str, Any] = {}
            if isinstance(fault, RateLimit):
                wait = self._bucket(rule, spec.name).take(now)
                if wait is None:
                    continue
                params["retry_after"] = round(wait, 6)
            elif isinstance(fault, Flapping) and not fault.is_down(now):
                continue
            if faults is None:
                faults = CallFaults(
                    random.Random(f"{self.seed}\x1ffault\x1f{spec.name}\x1f{call_index}")
                )
            record = InjectedFault(
                kind=fault.kind,
                tool=spec.name,
                call_id=call_id,
                call_index=call_index,
                sim_time=now,
                rule=rule.id,
                params={**fault.model_dump(exclude={"kind"}), **params},
            )
            faults.add(fault, record, params)
        return faults

    def _bucket(self, rule: FaultRule, tool: str) -> _Bucket:
        fault = rule.fault
        assert isinstance(fault, RateLimit)
        key = (rule.id, tool if fault.scope == "tool" else "*")
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(fault.burst, fault.per_second)
        return bucket
