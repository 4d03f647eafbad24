"""The FaultPlan: for each call, which rules fire, decided from keyed draws.

Whether a rule fires on the k-th call to a tool is a function of ``(session seed, rule id, tool,
k)`` alone: the schedule of one tool does not shift when the agent calls another tool more or
less often, a rule ablated alone fires exactly where it fired among the others, and the same
seed with the plan switched off is the paired baseline. A rule's draw is ``u < probability``
and ``window``/argument predicates are checked only after it, so they never move a draw.

The draws are counter-based (:func:`simforge.keyed.uniform`, the mechanism the session's named
streams share): splitmix64's finaliser over integers, the session seed's and each (rule, tool)
pair's worked out once, then nothing but integer arithmetic. Deciding every call from its own
uniform is Bernoulli(p) per call; the plan walks the same independent Bernoulli sequence by its
gaps instead (the number of calls to the next firing is geometric, drawn from the j-th uniform
of the pair), so a call that no rule's next firing has reached costs one comparison, and a rule
costs a draw only when it fires. No ``random.Random`` is seeded per key: stable across processes
and Python versions and unaffected by hash randomisation, at a fraction of the cost of a seeded
Mersenne Twister on a tool's first call (issue 24: short episodes pay that on most calls).

What a rule needs to be checked against a tool (whether it applies at all, its window, its
argument predicates, its parameters, its key) depends on the profile and the tool alone, so it
is worked out once per profile and tool and shared by every session that plays the profile
(:func:`_static_of`); a session adds only its seed's key and each pair's position.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from simforge.faults.data import TokenExpiry
from simforge.faults.effects import FaultedCall
from simforge.faults.rules import FaultProfile, FaultRule, When
from simforge.keyed import M64 as _M64
from simforge.keyed import key_of, seed_key, uniform
from simforge.tools.spec import ToolSpec
from simforge.trace.episode import InjectedFault, trusted

_ALWAYS_OPEN = When()
_record = trusted(InjectedFault)
_NO_PARAMS: dict[str, Any] = {}  # the parameters a fault adds to its rule's: most add none


class _Compiled:
    """A rule as it is checked against one tool: which checks it needs at all. Shared by every
    session of the profile; where a session is in the rule's schedule is the session's."""

    __slots__ = ("args", "fault", "gated", "kind", "log_q", "params", "probability", "rule",
                 "when")

    def __init__(self, rule: FaultRule) -> None:
        self.rule = rule
        self.probability = rule.probability
        self.log_q = math.log1p(-rule.probability) if rule.probability < 1.0 else 0.0
        """``log(1 - p)``: the gap to the next firing is ``floor(log(u) / log_q)``."""
        self.when = None if rule.when == _ALWAYS_OPEN else rule.when
        self.args = rule.target if rule.target.args else None
        self.fault = rule.fault
        self.params = rule.fault.model_dump(exclude={"kind"})
        self.kind = rule.fault.kind
        self.gated = type(rule.fault).gated
        """Whether the rule, once drawn and open, still asks its kind whether it fires."""


_PerTool = tuple[list[_Compiled], list[float], list[tuple[int, int, int]]]
"""A tool's rules, each rule's ``log(1 - p)``, and each (rule, tool) pair's key with the least
keys that fire on call 0 and on call 1 (``-1``: every call)."""


class _Static:
    """What a profile's rules are against each tool, shared by every session of the profile."""

    __slots__ = ("by_tool", "rules", "surface_rules", "view_rules")

    def __init__(self, profile: FaultProfile) -> None:
        live = [r for r in profile.rules if r.probability > 0]
        self.rules = [r for r in live if r.fault.stage != "surface"]
        self.surface_rules = [r for r in live if r.fault.stage == "surface"]
        self.view_rules = [r for r in profile.rules
                           if r.fault.stage == "surface" or isinstance(r.fault, TokenExpiry)]
        """The rules that change the episode's tools (surface kinds, and the refresh tool of
        a token that expires): :func:`~simforge.faults.surface.build_view` reads these."""
        self.by_tool: dict[tuple[str, str, tuple[str, ...]], _PerTool] = {}
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


class _Tool:
    """A tool's rules in one session, in rule order: for each, the index of the tool's next
    call it fires on (``-1``: every call), its key and how many of its uniforms it has used;
    and the first call any of them fires on, so that calls before it are decided by one
    comparison.

    A rule's first gap ``floor(log(u) / log(1 - p))``, ``u`` the top 53 bits of its key, is only
    worked out when it matters: it is 0 if ``u > 1 - p``, 1 if ``u > (1 - p) ** 2`` (integer
    comparisons of the key, thresholds worked out once per profile), else at least 2, and then
    the logarithm waits until the tool's third call (``drawn`` still 0), which most tools of a
    short episode never get."""

    __slots__ = ("compiled", "drawn", "keys", "log_qs", "next", "nexts")

    def __init__(self, seed: int, static: _PerTool) -> None:
        self.compiled, self.log_qs, thresholds = static
        keys: list[int] = []
        nexts: list[int] = []
        for pair, once, twice in thresholds:
            # keyed.mix(seed ^ pair), inlined: a tool's first call in a short episode pays this per
            # rule
            x = seed ^ pair
            x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
            x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
            x ^= x >> 31
            keys.append(x)
            nexts.append(-1 if once < 0 else 0 if x >= once else 1 if x >= twice else 2)
        self.keys, self.nexts = keys, nexts
        self.drawn = [0 if n == 2 else 1 for n in nexts]
        self.next = min(nexts, default=1 << 62)

    def _gap(self, i: int) -> int:
        """Calls rule ``i`` skips before its next firing: geometric, from its next uniform."""
        j = self.drawn[i]
        self.drawn[i] = j + 1
        return int(math.log(uniform(self.keys[i], j)) / self.log_qs[i])

    def fires(self, i: int, index: int) -> bool:
        """Whether rule ``i``'s draw fires on call ``index`` (calls are asked in order; a
        skipped index, a call answered before the plan was asked, is passed over)."""
        nxt = self.nexts[i]
        if nxt < 0:
            return True
        if not self.drawn[i]:  # the first gap, known to be at least 2
            self.drawn[i] = 1
            u = ((self.keys[i] >> 11) + 1) * 2.0**-53
            nxt = max(2, int(math.log(u) / self.log_qs[i]))
        while nxt < index:
            nxt += 1 + self._gap(i)
        if nxt == index:
            self.nexts[i] = nxt + 1 + self._gap(i)
            return True
        self.nexts[i] = nxt
        return False


def _threshold(q: float) -> int:
    """The least key whose uniform ``((key >> 11) + 1) * 2**-53`` is above ``q``."""
    return int(q * 2.0**53) << 11


class FaultPlan:
    """A profile bound to one session: compiled rules per tool, token buckets, keyed draws."""

    def __init__(self, profile: FaultProfile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        self._key = seed_key(seed)
        self._static = _static_of(profile)
        self.rules = self._static.rules
        self.surface_rules = self._static.surface_rules
        self.view_rules = self._static.view_rules
        self._by_tool: dict[str, _Tool] = {}
        self.state: dict[str, dict[str, Any]] = {}
        """Each gated rule's own state for the session (by rule id): token buckets, tokens."""

    def rules_for(self, spec: ToolSpec) -> list[FaultRule]:
        return [c.rule for c in self._compiled(spec).compiled]

    def _compiled(self, spec: ToolSpec) -> _Tool:
        """The rules that can hit the tool, in rule order, each with where the session is in its
        schedule."""
        compiled = self._by_tool.get(spec.name)
        if compiled is None:
            key = (spec.name, spec.kind, tuple(spec.entities))
            static = self._static.by_tool.get(key)
            if static is None:
                rules = [_Compiled(r) for r in self.rules if r.applies_to(spec)]
                static = self._static.by_tool[key] = (
                    rules,
                    [c.log_q for c in rules],
                    [(key_of(c.rule.id, spec.name), -1, -1) if c.probability >= 1.0 else
                     (key_of(c.rule.id, spec.name), _threshold(1.0 - c.probability),
                      _threshold((1.0 - c.probability) ** 2)) for c in rules],
                )
            compiled = _Tool(self._key, static)
            self._by_tool[spec.name] = compiled
        return compiled

    def decide(
        self, spec: ToolSpec, call_id: str, call_index: int, args: Any, now: float
    ) -> FaultedCall | None:
        compiled = self._by_tool.get(spec.name)
        if compiled is None:
            compiled = self._compiled(spec)
        if call_index < compiled.next:
            return None  # no rule's next firing is this call: nothing drawn, nothing fires
        faults: FaultedCall | None = None
        nexts = compiled.nexts
        for i, c in enumerate(compiled.compiled):
            # Draw first, always: the firing belongs to (seed, rule, tool, call index) alone.
            if nexts[i] > call_index or not compiled.fires(i, call_index):
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
                faults = FaultedCall(f"{self.seed}\x1ffault\x1f{spec.name}\x1f{call_index}")
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
        compiled.next = min(nexts)
        return faults
