"""Timing learned from traces: latency per tool, the agent's think time, natural error rates.

Only span and run formats (OTLP, LangSmith, Langfuse) time real tool executions; tau2-bench's
tools were in-process mocks answering in 0.2 ms, so their durations would teach an environment
that production is instant. Tools without real durations get a documented default instead:
a log-normal with a 150 ms median for reads and 400 ms for writes (sigma 0.5, capped), the
order of magnitude of a service call inside one data centre.
Think time is the gap before each assistant turn, from message timestamps where they exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from simforge.tools.spec import Constant, Empirical, ErrorModel, LogNormal
from simforge.trace.episode import Episode

REAL_LATENCY_FORMATS = frozenset({"otlp", "langsmith", "langfuse"})
DEFAULT_READ = LogNormal(median=0.15, sigma=0.5, cap=5.0)
DEFAULT_WRITE = LogNormal(median=0.4, sigma=0.5, cap=10.0)
DEFAULT_THINK = Constant(seconds=2.0)
MIN_SAMPLES = 5

_INFRA = re.compile(
    r"(timed? ?out|timeout|unavailable|\b5\d\d\b|rate.?limit|too many requests|connection "
    r"(reset|refused)|internal server error)",
    re.IGNORECASE,
)


def is_infrastructure(text: str) -> bool:
    """An error of the infrastructure (timeout, 5xx, rate limit), not of the business logic."""
    return bool(_INFRA.search(text))


def latency_model(durations: list[float], kind: str) -> Empirical | LogNormal:
    """Quantiles of the real durations when there are enough, else the default."""
    clean = [d for d in durations if d >= 0]
    if len(clean) >= MIN_SAMPLES:
        return Empirical.from_samples(clean)
    return DEFAULT_WRITE if kind == "write" else DEFAULT_READ


def think_time(episodes: Iterable[Episode], cap: int = 20000) -> Empirical | Constant:
    """Seconds between the message before an assistant turn and the turn itself."""
    gaps: list[float] = []
    for episode in episodes:
        previous = None
        for message in episode.messages:
            if message.timestamp is None:
                continue
            if message.role == "assistant" and previous is not None:
                gap = message.timestamp - previous
                if 0 <= gap < 600:
                    gaps.append(gap)
            previous = message.timestamp
        if len(gaps) >= cap:
            break
    return Empirical.from_samples(gaps) if len(gaps) >= MIN_SAMPLES else DEFAULT_THINK


PRIOR_CALLS = 10
"""Error-free calls assumed before the observed ones: one timeout in one call is not a tool that
always fails (the estimate is ``errors / (calls + PRIOR_CALLS)``)."""


def error_model(errors: dict[str, int], calls: int) -> ErrorModel:
    """The rate of infrastructure-looking errors (timeouts, 5xx, rate limits), shrunk towards
    zero when a tool was seen only a few times. Business errors ("order not found") are learned
    as conditions instead, never as random draws."""
    infra = {text: n for text, n in errors.items() if _INFRA.search(text)}
    total = sum(infra.values())
    if not total or not calls:
        return ErrorModel()
    message = max(infra, key=lambda t: infra[t])
    status = 429 if re.search(r"rate.?limit|too many", message, re.I) else 503
    rate = min(1.0, total / (calls + PRIOR_CALLS))
    return ErrorModel(rate=rate, status=status, message=message[:200])


def to_json(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json")
    return dumped
