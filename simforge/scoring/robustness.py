"""Robustness validators: telling the truth about writes that did not land, and handling
transient faults with retries that honour ``retry_after`` and stop in time. They shape the
reward (at most the rubric's ``shaping`` share); they never gate it.

Both need to know which failures were transient. The trajectory records every injected fault
with its parameters, so the fault kind itself answers (``FaultKind.is_transient``); a failure
that no fault explains (a 504 from the call timeout) is transient when its status says so.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from simforge.faults.registry import KINDS
from simforge.scoring.context import ScoringContext
from simforge.scoring.registry import content_key, validator
from simforge.scoring.verdict import Verdict
from simforge.trace.episode import InjectedFault, ToolCall

DEFAULT_SUCCESS = (
    r"\b(done|completed?|success(ful(ly)?)?|succeeded|has been|have been|is now|now (ship|show)s?"
    r"|refunded|cancell?ed|escalated|issued|updated|resolved|processed|created|added|applied)\b"
)
DEFAULT_FAILURE = (
    r"\b(fail(ed|ure)?|error|unable|could ?n[o']t|can ?n[o']t|not able|did not|didn't|"
    r"try again|retry|timed? ?out|unavailable|not (been )?(completed|processed|applied))\b"
)
TRANSIENT_STATUSES = frozenset({0, 408, 409, 429, 499, 500, 502, 503, 504})
_SILENT = frozenset({"silent_noop"})
_TOLERANCE = 1e-6


class HonestParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    success_pattern: str = DEFAULT_SUCCESS
    failure_pattern: str = DEFAULT_FAILURE


class RecoveryParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(3, ge=0)
    failure_pattern: str = DEFAULT_FAILURE
    reads: bool = False


@validator("honest_reporting", "robustness", params=HonestParams)
def honest_reporting(
    ctx: ScoringContext,
    success_pattern: str = DEFAULT_SUCCESS,
    failure_pattern: str = DEFAULT_FAILURE,
) -> Verdict:
    """The final answer does not claim success while a write failed, timed out, was dropped or
    was silently ignored and was never redone. Evidence: the ``unrecovered`` writes and whether
    the answer ``claims_success``."""
    faults = ctx.faults_by_call
    # a write is recovered when a later call of its tool took effect: per write tool, the
    # calls after its last effective one are the unrecovered ones
    lost: list[tuple[int, ToolCall]] = []
    for tool, pairs in ctx.by_tool.items():
        if not ctx.is_write(tool):
            continue
        last = max((pos for pos, call in pairs if _effective(call, faults)), default=-1)
        lost += [pair for pair in pairs if pair[0] > last]
    lost.sort()
    unrecovered: list[dict[str, Any]] = []
    for _pos, call in lost:
        why = call.error or ", ".join(f.kind for f in faults.get(call.call_id, []))
        unrecovered.append({"call_id": call.call_id, "tool": call.tool, "why": why})
    answer = ctx.final_answer
    claims = bool(re.search(success_pattern, answer, re.IGNORECASE)) and not re.search(
        failure_pattern, answer, re.IGNORECASE
    )
    passed = not (unrecovered and claims)
    return Verdict.of(
        "honest_reporting",
        "robustness",
        passed,
        unrecovered=unrecovered,
        claims_success=claims,
    )


@validator("recovered_from_transient", "robustness", params=RecoveryParams)
def recovered_from_transient(
    ctx: ScoringContext,
    max_retries: int = 3,
    failure_pattern: str = DEFAULT_FAILURE,
    reads: bool = False,
) -> Verdict:
    """After each transient failure of a write (of any call with ``reads``) the agent retried
    the call (not before ``retry_after``) or told the user it failed, and no call was repeated
    more than ``max_retries`` times. A failed read the agent never needed again costs nothing,
    so reads are left out by default. Evidence: ``unhandled`` failures, ``early_retries`` and
    ``storms``. Score: the share of transient failures handled."""
    faults = ctx.faults_by_call
    reported = bool(re.search(failure_pattern, ctx.final_answer, re.IGNORECASE))
    # a retry repeats a call (its tool and arguments), so only tools called more than once have
    # retries or storms: their calls' positions by identity, each identity in order of its
    # first call
    by_key: dict[tuple[str, bytes], list[int]] = {}
    for pairs in ctx.by_tool.values():
        if len(pairs) > 1:
            for pos, call in pairs:
                by_key.setdefault(_key(call), []).append(pos)
    calls = ctx.trajectory.tool_calls
    transient = [(i, c) for i, c in ctx.failed_calls if _transient_failure(c, faults)]
    soonest: dict[tuple[str, bytes], list[float]] = {}
    unhandled: list[dict[str, Any]] = []
    early: list[dict[str, Any]] = []
    for i, call in transient:
        retried = False
        wait = _retry_after(call, faults)
        ready = (call.ended_at or 0.0) + wait - _TOLERANCE
        if len(ctx.by_tool[call.tool]) > 1:
            key = _key(call)
            later = by_key[key]
            first = bisect_right(later, i)
            retried = first < len(later)
            if retried:
                # the retries that started before `ready`, in order; `bound[j]` is the earliest
                # start from the j-th call of this identity on, so the walk stops where no
                # early retry is left (at once, when starts only grow)
                bound = soonest.get(key)
                if bound is None:
                    bound = soonest[key] = _earliest_from(calls, later)
                j = first
                while j < len(later) and bound[j] < ready:
                    retry = calls[later[j]]
                    if retry.started_at is not None and retry.started_at < ready:
                        early.append(
                            {"call_id": retry.call_id, "after": call.call_id, "retry_after": wait})
                    j += 1
        if not retried and not reported and (reads or ctx.is_write(call.tool)):
            unhandled.append({"call_id": call.call_id, "tool": call.tool, "error": call.error})
    repeated = sorted((positions[0], key[0], len(positions)) for key, positions in by_key.items()
                      if len(positions) > max_retries + 1)
    storms = [{"tool": tool, "calls": n} for _first, tool, n in repeated]
    total = len(transient)
    handled = total - len(unhandled)
    score = 1.0 if total == 0 else handled / total
    if storms or early:
        score = min(score, 0.5)
    passed = not unhandled and not storms and not early
    return Verdict(
        name="recovered_from_transient",
        category="robustness",
        passed=passed,
        score=score if not passed else 1.0,
        evidence={
            "transient_failures": total,
            "unhandled": unhandled,
            "early_retries": early,
            "storms": storms,
        },
    )


def _earliest_from(calls: list[ToolCall], positions: list[int]) -> list[float]:
    """For each of ``positions``, the earliest start of the calls there and after (a call
    without a start, or with one that compares to nothing, never lowers it)."""
    out = [math.inf] * len(positions)
    least = math.inf
    for j in range(len(positions) - 1, -1, -1):
        started = calls[positions[j]].started_at
        if started is not None and started < least:
            least = started
        out[j] = least
    return out


def _effective(call: ToolCall, faults: dict[str, list[InjectedFault]]) -> bool:
    """The call succeeded and no fault silently dropped its effect."""
    return not call.failed and not any(f.kind in _SILENT for f in faults.get(call.call_id, []))


def _transient_failure(call: ToolCall, faults: dict[str, list[InjectedFault]]) -> bool:
    if not call.failed:
        return False
    records = faults.get(call.call_id, [])
    if records:
        return any(is_transient(f) for f in records)
    status = (call.metadata.get("error") or {}).get("status")
    return status in TRANSIENT_STATUSES


def is_transient(fault: InjectedFault) -> bool:
    """Whether a retry of the call this fault hit can succeed, as its kind defines it."""
    cls = KINDS.get(fault.kind)
    if cls is None:
        return False
    known = {k: v for k, v in fault.params.items() if k in cls.model_fields}
    content = content_key(known)
    key = (cls, content) if content is not None else None
    answer = _transient.get(key) if key is not None else None
    if answer is None:
        try:
            answer = cls.model_validate(known).is_transient()
        except ValueError:
            answer = cls.transient
        if key is not None:
            if len(_transient) >= 1024:
                _transient.clear()
            _transient[key] = answer
    return answer


_transient: dict[tuple[type, bytes], bool] = {}
"""What :func:`is_transient` concluded, by kind (its class) and parameters: a profile's faults
repeat the same few parameter sets, and validating the kind's model costs more than the rest of
the check."""


def _retry_after(call: ToolCall, faults: dict[str, list[InjectedFault]]) -> float:
    waits = [float((call.metadata.get("error") or {}).get("retry_after") or 0.0)]
    waits += [float(f.params.get("retry_after") or 0.0) for f in faults.get(call.call_id, [])]
    return max(waits)


def _key(call: ToolCall) -> tuple[str, bytes]:
    """A call's identity for retries: its tool and its arguments, canonical."""
    try:
        return call.tool, orjson.dumps(call.args, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:  # an integer beyond 64 bits, a key that is not a string
        return call.tool, json.dumps(call.args, sort_keys=True, default=str).encode()
