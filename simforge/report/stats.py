"""Noise, power and paired differences: how far one run's numbers can be trusted, and whether two
runs differ by more than chance.

The design of a run is nested: a *group* is a (scenario, task, fault profile), fixed by the
scenario set; a *cell* is a group at one seed (a sampled world); a cell is played ``K`` times
(trials, the policy reseeded). Two sources of chance move a run's pass rate:

- **trial noise** (``within``): the variance of a verdict across trials of one cell, pooled over
  cells (the one-way ANOVA mean square within cells). A deterministic policy has none;
- **seed-to-seed variance** (``between_seeds``): the variance of the cells' true pass rates
  within a group, estimated from the variance of cell means within groups minus the trial noise
  it contains (the ANOVA method-of-moments estimator; in a balanced design it is the REML
  estimate of a random seed intercept whenever that is positive).

Groups are strata, not samples: a claim is about *this* scenario set, so differences between
tasks or profiles are never counted as noise. The standard error of a mean over ``N`` cells is
then ``sqrt(cell_var / N)`` with ``cell_var = between_seeds + within / K`` (Miller, "Adding error
bars to evals", 2024, section 3, with tasks as fixed strata).

Power: a difference is detectable (two-sided ``alpha`` 0.05, power 0.8) when it is at least the
non-centrality a t test on ``df`` degrees of freedom needs, times its standard error
(:func:`required_noncentrality`, the non-central t of ``scipy``); and never smaller than
what McNemar's exact test can see at all: with ``n`` paired verdicts, fewer than
:func:`mcnemar_floor` flips in one direction are never significant.

The tests pin every figure against ``scipy``, ``statsmodels`` (OLS, MixedLM, TTestPower) or a
value worked by hand.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import numpy as np

ALPHA = 0.05
POWER = 0.8
LEVEL = 0.95
TARGET = 0.02
"""The default target of a recommendation: a minimum detectable difference of 2 points."""
MAX_DF = 5000
"""Beyond this, the t distribution is the normal to four decimals (2.8023 against 2.8016 in
standard errors): larger ``df`` are computed at it, conservatively, and cached."""


# -- tests and power ---------------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact test: the two-sided p-value of ``b`` pairs that went one way and ``c``
    that went the other (the pairs that agree carry no information), a binomial test of
    ``b`` in ``b + c`` at 1/2."""
    from scipy.stats import binomtest

    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5).pvalue)


@cache
def mcnemar_floor(alpha: float = ALPHA) -> int:
    """The fewest discordant pairs, all in one direction, that McNemar's exact test calls
    significant (6 at 0.05): below that, no difference can be detected whatever its size."""
    m = 1
    while mcnemar_exact(m, 0) >= alpha:
        m += 1
    return m


@cache
def required_noncentrality(df: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The effect, in standard errors, that a two-sided t test on ``df`` degrees of freedom
    detects with ``power``: the non-centrality at which the non-central t puts ``power`` beyond
    the critical values (what ``statsmodels``' ``TTestPower`` solves, here with ``scipy``'s
    root finder, which never lands on the mirror root); about 2.80 for large ``df``."""
    from scipy.optimize import brentq
    from scipy.stats import nct, t

    df = max(1, min(int(df), MAX_DF))
    crit = float(t.ppf(1 - alpha / 2, df))

    def short(nc: float) -> float:
        # the far tail is below 1e-15 wherever scipy cannot evaluate it (nan): count it as 0
        far = float(np.nan_to_num(nct.cdf(-crit, df, nc), nan=0.0))
        return float(nct.sf(crit, df, nc)) + far - power

    return float(brentq(short, 0.0, 40.0, xtol=1e-10))


def detectable(se: float | None, df: int, *, pairs: int = 0, alpha: float = ALPHA,
               power: float = POWER) -> float | None:
    """The minimum detectable difference of an estimate with standard error ``se`` on ``df``
    degrees of freedom, and at least what McNemar's exact test needs of ``pairs`` paired
    verdicts (:func:`mcnemar_floor` of them flipped)."""
    if se is None or df < 1:
        return None
    mdd = required_noncentrality(min(df, MAX_DF), alpha, power) * se
    if pairs:
        mdd = max(mdd, mcnemar_floor(alpha) / pairs)
    return min(1.0, mdd)


def t_interval(mean: float, se: float, df: int, level: float = LEVEL) -> tuple[float, float]:
    from scipy.stats import t

    if se == 0 or df < 1:
        return (mean, mean)
    half = float(t.ppf(0.5 + level / 2, df)) * se
    return (mean - half, mean + half)


def z_quantile(level: float = LEVEL) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def fdr(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (the false discovery rate over the rows of a table,
    ``scipy``'s ``false_discovery_control``): with many tasks, some small p-values are luck."""
    if not pvalues:
        return []
    from scipy.stats import false_discovery_control

    return [float(p) for p in false_discovery_control(list(pvalues), method="bh")]


# -- flips -------------------------------------------------------------------------------------


def flip_rate(verdicts: Sequence[bool | float]) -> float | None:
    """The chance that two trials of one cell disagree: over all pairs of its trials, the share
    that differ, ``2c(n-c) / (n(n-1))`` for ``c`` passes in ``n``; it is twice the sample
    variance of the 0/1 verdicts (an unbiased estimate of ``2p(1-p)``). ``None`` under 2."""
    if len(verdicts) < 2:
        return None
    return float(2 * np.var(np.asarray(verdicts, dtype=float), ddof=1))


# -- variance components -----------------------------------------------------------------------


@dataclass(frozen=True)
class Components:
    """Variance components of a run (see the module's docstring); ``None`` where the run's
    shape cannot tell (no cell with two trials, no group with two seeds)."""

    cells: int
    groups: int
    trials: float
    """The harmonic mean of the trials per cell (``K``)."""
    mean: float | None
    within: float | None
    cell_var: float | None
    """Variance of cell means within groups (``between_seeds + within / K``); when no group
    varies at all but groups differ, the variance of all cell means (see :func:`components`)."""
    between_seeds: float | None
    df: int
    """Degrees of freedom of ``cell_var`` (cells minus groups with two or more cells)."""

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 8) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def components(cells: Mapping[tuple[Hashable, Hashable], Sequence[float]]) -> Components:
    """Variance components of outcomes keyed ``(group, seed) -> [trial outcomes]``."""
    cells = {k: v for k, v in cells.items() if len(v)}
    if not cells:
        return Components(0, 0, 0.0, None, None, None, None, 0)
    sizes = np.array([len(v) for v in cells.values()], dtype=float)
    means = {k: float(np.mean(v)) for k, v in cells.items()}
    repeated = [np.asarray(v, dtype=float) for v in cells.values() if len(v) > 1]
    within = None
    if repeated:
        ssw = sum(float(np.sum((v - v.mean()) ** 2)) for v in repeated)
        within = ssw / sum(len(v) - 1 for v in repeated)
    by_group: dict[Hashable, list[float]] = defaultdict(list)
    for (group, _seed), m in means.items():
        by_group[group].append(m)
    multi = [np.asarray(ms) for ms in by_group.values() if len(ms) > 1]
    cell_var = between = None
    df = 0
    if multi:
        df = sum(len(ms) - 1 for ms in multi)
        cell_var = sum(float(np.sum((ms - ms.mean()) ** 2)) for ms in multi) / df
        flat = list(means.values())
        if cell_var == 0 and len(set(flat)) > 1:
            # every seed of every group agreed: too few seeds to see their spread, not a
            # spread of zero; the variance of all cell means stands in (larger, conservative)
            df, cell_var = len(flat) - 1, float(np.var(flat, ddof=1))
    harmonic = float(len(sizes) / np.sum(1.0 / sizes))
    if cell_var is not None:
        between = max(0.0, cell_var - within / harmonic) if within is not None else None
    return Components(
        cells=len(cells), groups=len(by_group), trials=harmonic,
        mean=float(np.mean(list(means.values()))), within=within, cell_var=cell_var,
        between_seeds=between, df=df,
    )


def stratified_mean(values: Mapping[Hashable, Sequence[float]]) -> tuple[float, float | None, int]:
    """The mean of per-cell values grouped by stratum, its standard error and degrees of
    freedom: the pooled within-stratum variance over the number of cells (the residual mean
    square of a one-way ANOVA, as OLS on stratum dummies gives it). When no stratum holds two
    cells, or when the strata show no variation at all while the values differ between them
    (every seed of a task agreed: too few seeds to see their spread, not a spread of zero),
    the strata are pooled instead: the ordinary one-sample standard error, which is larger."""
    flat = [float(x) for v in values.values() for x in v]
    n = len(flat)
    if n == 0:
        return (0.0, None, 0)
    mean = float(np.mean(flat))
    multi = [np.asarray(v, dtype=float) for v in values.values() if len(v) > 1]
    var = 0.0
    if multi:
        df = sum(len(v) - 1 for v in multi)
        var = sum(float(np.sum((v - v.mean()) ** 2)) for v in multi) / df
    if not multi or (var == 0 and len(set(flat)) > 1):
        if n < 2:
            return (mean, None, 0)
        df, var = n - 1, float(np.var(flat, ddof=1))
    return (mean, math.sqrt(var / n), df)


# -- the noise and power of one run ------------------------------------------------------------

Episode = dict[str, Any]


def _cells(episodes: Iterable[Episode]) -> dict[tuple[tuple[str, str, str], int], list[Episode]]:
    cells: dict[tuple[tuple[str, str, str], int], list[Episode]] = defaultdict(list)
    for e in episodes:
        if e["reward"] is not None:
            cells[((e["scenario"], e["task"], e["profile"]), e["seed"])].append(e)
    return cells


def flips_by_task(episodes: Iterable[Episode]) -> dict[str, dict[str, Any]]:
    """Per ``scenario|task``: the verdict flip rate across trials of the same cell (mean of
    :func:`flip_rate` over its cells with two or more trials) and how many of those cells
    flip at all."""
    per_task: dict[str, list[list[bool]]] = defaultdict(list)
    for (group, _seed), eps in _cells(episodes).items():
        if len(eps) > 1:
            per_task[f"{group[0]}|{group[1]}"].append([bool(e["passed"]) for e in eps])
    out = {}
    for key in sorted(per_task):
        rates = [flip_rate(v) or 0.0 for v in per_task[key]]
        out[key] = {
            "cells": len(rates),
            "flipping": sum(1 for v in per_task[key] if 0 < sum(v) < len(v)),
            "flip_rate": round(float(np.mean(rates)), 6),
        }
    return out


def noise(episodes: list[Episode], *, target: float = TARGET, alpha: float = ALPHA,
          power: float = POWER) -> dict[str, Any]:
    """The noise floor, minimum detectable difference and a seeds-and-trials recommendation of
    a run's verdicts (see the module's docstring for the model)."""
    cells = _cells(episodes)
    comp = components({k: [float(e["passed"]) for e in v] for k, v in cells.items()})
    n, k = comp.cells, comp.trials
    flips = flips_by_task(episodes)
    repeated = [flip_rate([bool(e["passed"]) for e in v]) or 0.0
                for v in cells.values() if len(v) > 1]
    out: dict[str, Any] = {
        "components": comp.to_json(),
        "flip_rate": round(float(np.mean(repeated)), 6) if repeated else None,
        "tasks_flipping": sum(1 for f in flips.values() if f["flipping"]),
        "tasks_repeated": len(flips),
        "flips_by_task": flips,
        "alpha": alpha,
        "power": power,
    }
    # the noise floor: how much the pass rate moves when the same cells are played again
    sd_trials = None
    if comp.within is not None and n:
        sizes = np.array([len(v) for v in cells.values()], dtype=float)
        sd_trials = math.sqrt(comp.within * float(np.mean(1.0 / sizes)) / n)
    per_trial: dict[int, list[float]] = defaultdict(list)
    for v in cells.values():
        for e in v:
            per_trial[e["trial"]].append(float(e["passed"]))
    rates = [float(np.mean(v)) for _, v in sorted(per_trial.items())]
    spread = float(np.std(rates, ddof=1)) if len(rates) > 1 else None
    out["noise_floor"] = {
        "sd": _r(sd_trials),
        "sd_across_trials": _r(spread),
        "trial_pass_rates": [round(r, 6) for r in rates],
        "gap": _r(z_quantile() * math.sqrt(2) * sd_trials) if sd_trials is not None else None,
    }
    # the minimum detectable difference against another run of this matrix
    mdd = None
    if comp.cell_var is not None and n:
        se = math.sqrt(2 * comp.cell_var / n)
        mdd = detectable(se, comp.df, pairs=round(n * k), alpha=alpha, power=power)
    elif comp.within is not None and n:  # one seed: trial noise is all that can be seen
        se = math.sqrt(2 * comp.within / (n * k))
        mdd = detectable(se, max(1, round(n * (k - 1))), pairs=round(n * k), alpha=alpha,
                         power=power)
    out["mdd"] = _r(mdd)
    out["mdd_basis"] = ("seeds and trials" if comp.cell_var is not None
                        else "trials only (one seed per task: seed-to-seed variance unknown)"
                        if comp.within is not None else None)
    out["recommendation"] = recommend(comp, target=target, alpha=alpha, power=power)
    return out


def mdd_at(comp: Components, seeds: int, trials: int, *, alpha: float = ALPHA,
           power: float = POWER) -> float | None:
    """The minimum detectable difference of this scenario set (``comp.groups`` groups) at
    ``seeds`` per group and ``trials`` per cell, given the run's variance components."""
    if comp.groups == 0:
        return None
    if comp.within is not None and comp.between_seeds is not None:
        var = comp.between_seeds + comp.within / trials
    elif comp.cell_var is not None:  # one trial per cell: trial noise hides in cell_var
        var = comp.cell_var
    elif comp.within is not None:  # one seed per task: a lower bound, seeds unaccounted for
        var = comp.within / trials
    else:
        return None
    n = comp.groups * seeds
    df = comp.groups * (seeds - 1) if seeds > 1 else n * (trials - 1)
    return detectable(math.sqrt(2 * var / n), max(1, df), pairs=n * trials, alpha=alpha,
                      power=power)


def recommend(comp: Components, *, target: float = TARGET, alpha: float = ALPHA,
              power: float = POWER, most_seeds: int = 100_000) -> dict[str, Any] | None:
    """Seeds per task and trials per cell that bring the minimum detectable difference down to
    ``target`` on this scenario set, the cheapest (fewest episodes) first. Trials only help
    against trial noise, seeds against both; with one trial per cell in the run the two cannot
    be told apart, and only seeds are recommended."""
    if comp.groups == 0 or (comp.cell_var is None and comp.within is None):
        return None
    trial_options = [1, 2, 3, 4, 5, 8] if comp.within is not None else [1]
    options = []
    for trials in trial_options:
        lo, hi = 1, 2
        while hi < most_seeds and (mdd_at(comp, hi, trials, alpha=alpha, power=power) or 1.0
                                   ) > target:
            lo, hi = hi, hi * 2
        if (mdd_at(comp, hi, trials, alpha=alpha, power=power) or 1.0) > target:
            continue
        while lo < hi:  # the fewest seeds that reach the target
            mid = (lo + hi) // 2
            if (mdd_at(comp, mid, trials, alpha=alpha, power=power) or 1.0) <= target:
                hi = mid
            else:
                lo = mid + 1
        options.append({"seeds": int(hi), "trials": trials,
                        "episodes": comp.groups * hi * trials,
                        "mdd": _r(mdd_at(comp, hi, trials, alpha=alpha, power=power))})
    options.sort(key=lambda o: (int(o["episodes"] or 0), -int(o["seeds"] or 0)))
    # an option is worth showing only if it needs fewer seeds than every cheaper one (more
    # trials buy nothing when the policy does not vary between trials)
    kept: list[dict[str, Any]] = []
    for option in options:
        if all(int(option["seeds"] or 0) < int(k["seeds"] or 0) for k in kept):
            kept.append(option)
    options = kept
    return {"target": target, "groups": comp.groups, "options": options,
            "best": options[0] if options else None,
            "basis": "seeds and trials" if comp.between_seeds is not None
            else "seeds only (one trial per cell: trial noise not told apart)"
            if comp.within is None
            else "a lower bound (one seed per task: seed-to-seed variance unknown)"}


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
