"""The FaultPlan: for each call, which rules fire, decided from keyed draws.

Each (rule, tool) pair has its own stream, seeded from ``(session seed, rule id, tool)``; the
decision for the k-th call to that tool is the k-th number of that stream. Every call to a tool
draws from each of its rules' streams, in call order, whether or not the rule's window or
argument predicate applies, so the number belongs to ``(seed, rule, tool, call index)`` alone:
the schedule of one tool does not shift when the agent calls another tool more or less often,
and the same seed with the plan switched off is the paired baseline. A draw costs about 50 ns
(a hash per decision would cost a microsecond); a ``random.Random`` for a fault's own parameters
is only created when it fires.

What a rule needs to be checked against a tool (whether it applies at all, its window, its
argument predicates, its parameters) depends on the profile and the tool alone, so it is worked
out once per profile and tool and shared by every session that plays the profile
(:func:`_static_of`); a session adds only the streams. Seeding those streams is what is left
of a plan's cost on a tool's first call in a session (a Mersenne Twister's state per rule and
tool, a few microseconds each), which short episodes that call many tools once or twice pay on
most calls: see BENCHMARKS.md's fault plans on the realistic mix.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable
from typing import Any

from simforge.faults.effects import CallFaults
from simforge.faults.rules import FaultProfile, FaultRule, When
from simforge.tools.spec import ToolSpec
from simforge.trace.episode import InjectedFault, trusted

_ALWAYS_OPEN = When()
_record = trusted(InjectedFault)
_NO_PARAMS: dict[str, Any] = {}  # the parameters a fault adds to its rule's: most add none


class _Compiled:
    """A rule as it is checked against one tool: which checks it needs at all. Shared by every
    session of the profile; the stream it draws from is the session's."""

    __slots__ = ("args", "fault", "gated", "kind", "params", "probability", "rule", "when")

    def __init__(self, rule: FaultRule) -> None:
        self.rule = rule
        self.probability = rule.probability
        self.when = None if rule.when == _ALWAYS_OPEN else rule.when
        self.args = rule.target if rule.target.args else None
        self.fault = rule.fault
        self.params = rule.fault.model_dump(exclude={"kind"})
        self.kind = rule.fault.kind
        self.gated = type(rule.fault).gated
        """Whether the rule, once drawn and open, still asks its kind whether it fires."""


class _Static:
    """What a profile's rules are against each tool, shared by every session of the profile."""

    __slots__ = ("by_tool", "rules", "surface_rules")

    def __init__(self, profile: FaultProfile) -> None:
        live = [r for r in profile.rules if r.probability > 0]
        self.rules = [r for r in live if r.fault.stage != "surface"]
        self.surface_rules = [r for r in live if r.fault.stage == "surface"]
        self.by_tool: dict[tuple[str, str, tuple[str, ...]], list[_Compiled]] = {}
        """The rules that can hit a tool, by what ``applies_to`` reads of it (name, kind,
        entities)."""


_STATIC: dict[int, tuple[weakref.ref[FaultProfile], _Static]] = {}
"""Per live profile, by identity (a profile is not hashable); an entry goes with its profile."""


def _static_of(profile: FaultProfile) -> _Static:
    key = id(profile)
    hit = _STATIC.get(key)
    if hit is not None and hit[0]() is profile:
        return hit[1]
    static = _Static(profile)
    _STATIC[key] = (weakref.ref(profile, lambda _ref: _STATIC.pop(key, None)), static)
    return static


_Entry = tuple[Callable[[], float] | None, float, _Compiled]
"""A compiled rule as the per-call loop reads it: ``(draw, probability, rule)``."""


class FaultPlan:
    """A profile bound to one session: compiled rules per tool, token buckets, keyed draws."""

    def __init__(self, profile: FaultProfile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        self._static = _static_of(profile)
        self.rules = self._static.rules
        self.surface_rules = self._static.surface_rules
        self._by_tool: dict[str, list[_Entry]] = {}
        self.state: dict[str, dict[str, Any]] = {}
        """Each gated rule's own state for the session (by rule id): token buckets, tokens."""

    def rules_for(self, spec: ToolSpec) -> list[FaultRule]:
        return [c.rule for _, _, c in self._compiled(spec)]

    def _compiled(self, spec: ToolSpec) -> list[_Entry]:
        """The rules that can hit the tool, in rule order, each as ``(draw, probability, rule)``:
        the loop over them runs on every call, and unpacking a tuple into locals is about half
        the cost of reading the same three attributes."""
        compiled = self._by_tool.get(spec.name)
        if compiled is None:
            key = (spec.name, spec.kind, tuple(spec.entities))
            static = self._static.by_tool.get(key)
            if static is None:
                static = self._static.by_tool[key] = [
                    _Compiled(r) for r in self.rules if r.applies_to(spec)
                ]
            seed, tool = self.seed, spec.name
            compiled = [
                (random.Random(f"{seed}\x1frule\x1f{c.rule.id}\x1f{tool}").random
                 if c.probability < 1.0 else None, c.probability, c)
                for c in static
            ]
            self._by_tool[spec.name] = compiled
        return compiled

    def decide(
        self, spec: ToolSpec, call_id: str, call_index: int, args: Any, now: float
    ) -> CallFaults | None:
        compiled = self._by_tool.get(spec.name)
        if compiled is None:
            compiled = self._compiled(spec)
        faults: CallFaults | None = None
        for draw, probability, c in compiled:
            # Draw first, always: the k-th number of the stream belongs to the k-th call.
            if draw is not None and draw() >= probability:
                continue
            if c.when is not None and not c.when.open(now, call_index):
                continue
            if c.args is not None and not c.args.matches_args(args):
                continue
            rule = c.rule
            fault = c.fault
            params = _NO_PARAMS
            if c.gated:
                state = self.state.get(rule.id)
                if state is None:
                    state = self.state[rule.id] = {}
                gate = fault.gate(state, spec.name, now)
                if gate is None:
                    continue
                params = gate or _NO_PARAMS
            if faults is None:
                faults = CallFaults(f"{self.seed}\x1ffault\x1f{spec.name}\x1f{call_index}")
            # built from validated parts, so not validated again (hot path)
            record = _record({
                "kind": c.kind,
                "tool": spec.name,
                "call_id": call_id,
                "call_index": call_index,
                "sim_time": now,
                "rule": rule.id,
                "params": {**c.params, **params} if params else dict(c.params),
                "observed": None,
            })
            faults.add(record, fault, params)
        return faults
