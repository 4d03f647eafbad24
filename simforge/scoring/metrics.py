"""Metrics over repeated trials of one task.

pass^k (tau-bench) is the chance that ``k`` trials drawn without replacement from ``n``, of
which ``c`` passed, all pass: ``C(c, k) / C(n, k)``. It is computed with exact integers (a
``Fraction``) before the one final float, so it is exact for any ``n`` that fits in memory,
where products of floating ratios drift.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

from simforge.errors import UsageError


def pass_hat_k_exact(n: int, c: int, k: int) -> Fraction:
    """``C(c, k) / C(n, k)`` as a fraction; ``0 <= c <= n`` and ``1 <= k <= n``."""
    if n < 1 or not 0 <= c <= n:
        raise UsageError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise UsageError(f"need 1 <= k <= n, got k={k}, n={n}")
    return Fraction(comb(c, k), comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k from ``n`` trials of which ``c`` passed (see the module docstring)."""
    return float(pass_hat_k_exact(n, c, k))
