"""The one quantile definition of simforge: :func:`statistics.quantiles` with
``method="inclusive"``.

The inclusive method treats the data as the whole population, so the quantile at probability
``p`` of ``n`` sorted values lies at position ``p * (n - 1)``, interpolated linearly between
neighbours (numpy's default, R's type 7): the median of ``[1, 2, 3, 4]`` is 2.5, the p0 and
p100 are the minimum and maximum, and no quantile lies outside the data. Every figure simforge
prints of a sample (``simforge ingest``'s per-tool latencies, ``simforge report``'s
distributions) and every empirical latency model it learns comes from here, so the same values
always give the same quantiles.

This module imports only :mod:`simforge.errors`: every layer may use it.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from fractions import Fraction

from simforge.errors import UsageError

MAX_DENOMINATOR = 10_000
"""Probabilities are read as fractions with at most this denominator (0.95 is 19/20, 0.999
is 999/1000): the cut points of :func:`statistics.quantiles` are at ``k / n``."""


def quantiles(values: Iterable[float], probs: Sequence[float]) -> list[float] | None:
    """The quantiles of ``values`` at each probability of ``probs`` (each in [0, 1]), or
    ``None`` for no values. One sort and one :func:`statistics.quantiles` call for all the
    probabilities, cut into ``n`` parts with ``n`` the least common denominator of them."""
    cuts = [Fraction(p).limit_denominator(MAX_DENOMINATOR) for p in probs]
    for p, cut in zip(probs, cuts, strict=True):
        if not 0 <= cut <= 1:
            raise UsageError(f"a quantile's probability is in [0, 1], not {p!r}")
    data = sorted(values)
    if not data:
        return None
    if len(data) == 1:  # statistics.quantiles wants two points before Python 3.13
        return [float(data[0])] * len(cuts)
    n = math.lcm(*(c.denominator for c in cuts)) if cuts else 1
    points = [data[0], *statistics.quantiles(data, n=n, method="inclusive"), data[-1]]
    # statistics' interpolation ``(a * (n - d) + b * d) / n`` can round outside [a, b] (it
    # underflows for subnormal values, and between two equal values it may land an ulp off
    # them, below the cut before): a running maximum keeps the cut points in order, and the
    # clamp keeps every quantile within the data
    points = list(itertools.accumulate(points, max))
    lo, hi = float(data[0]), float(data[-1])
    return [min(hi, max(lo, float(points[c.numerator * (n // c.denominator)]))) for c in cuts]


def quantile(values: Iterable[float], q: float) -> float | None:
    """The quantile of ``values`` at probability ``q`` (see :func:`quantiles`)."""
    out = quantiles(values, [q])
    return None if out is None else out[0]
