"""The replay table: a tool's recorded responses, answered by exact arguments or else by the
nearest recorded call, with its score.

The fallback for what cannot be learned (calculators, search over text, ``think``) and for calls
whose learned handler does not apply. It stores responses to calls, which the agent could have
seen in production anyway, never a task's expected final state. Nearest match: the share of
argument keys with equal values, strings that differ counting by their similarity, so that
``{"query": "refund polcy"}`` still finds ``{"query": "refund policy"}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

import orjson

from simforge.jsonio import dumps


def canonical(args: Any) -> bytes:
    return dumps(args, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class Match:
    response: dict[str, Any]
    """``{"result": value}`` or ``{"error": text}``."""
    score: float


class ReplayTable:
    """Recorded ``(args, response)`` pairs of one tool."""

    def __init__(self, entries: list[dict[str, Any]] | None = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self._exact: dict[bytes, dict[str, Any]] = {}
        for entry in entries or []:
            self.add(entry["args"], entry["response"])

    def add(self, args: Any, response: dict[str, Any]) -> None:
        key = canonical(args)
        if key in self._exact:
            return
        self._exact[key] = response
        self.entries.append({"args": args, "response": response})

    def __len__(self) -> int:
        return len(self.entries)

    def lookup(self, args: Any) -> Match | None:
        exact = self._exact.get(canonical(args))
        if exact is not None:
            return Match(exact, 1.0)
        best: Match | None = None
        for entry in self.entries:
            score = similarity(args, entry["args"])
            if best is None or score > best.score:
                best = Match(entry["response"], score)
        return best


def similarity(a: Any, b: Any) -> float:
    """1.0 for equal values; for objects the mean over keys; strings by their edit ratio."""
    if a == b:
        return 1.0
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        if not keys:
            return 1.0
        return sum(
            similarity(a.get(k), b.get(k)) if k in a and k in b else 0.0 for k in keys
        ) / len(keys)
    if isinstance(a, str) and isinstance(b, str):
        return 0.9 * SequenceMatcher(None, a, b).ratio()
    if isinstance(a, list) and isinstance(b, list) and a and b:
        n = max(len(a), len(b))
        return sum(similarity(x, y) for x, y in zip(a, b, strict=False)) / n
    return 0.0
