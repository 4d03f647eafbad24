"""Matching an answer or a value against what was expected: numbers as numbers (a cent's
tolerance, thousands separators and currency signs ignored), text case- and space-insensitively,
``re:...`` as a regular expression. Shared by every validator that reads the final answer."""

from __future__ import annotations

import re
from typing import Any

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def values_equal(found: Any, want: Any) -> bool:
    if (
        isinstance(want, float | int)
        and not isinstance(want, bool)
        and isinstance(found, float | int)
    ):
        return abs(float(found) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
    return bool(found == want)


def answer_states(answer: str, fact: str) -> bool:
    if fact.startswith("re:"):
        return re.search(fact[3:], answer, flags=re.IGNORECASE) is not None
    numeric = _as_number(fact)
    if numeric is not None:
        return any(abs(n - numeric) < 0.005 for n in numbers(answer))
    return squash(fact) in squash(answer)


def _as_number(text: str) -> float | None:
    cleaned = text.strip().lstrip("$€£").replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def numbers(text: str) -> list[float]:
    out = []
    for match in _NUMBER.findall(text):
        try:
            out.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return out


def squash(text: str) -> str:
    return " ".join(text.casefold().split())
