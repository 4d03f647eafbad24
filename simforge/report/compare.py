"""Two runs compared cell by cell: is the difference real, and how big could it be?

Only the cells both runs played are compared (same scenario, task, fault profile and seed):
the same worlds under the same faults, so a difference is the policies' (or the harnesses') and
not a difference of sampled worlds. Per cell, the difference of the two pass rates over its
trials (and of the mean rewards); their mean is the difference of the runs, with a t interval
from the variance of the cell differences within each (scenario, task, profile) stratum
(:func:`simforge.report.stats.stratified_mean`): tasks and profiles are fixed, seeds and
trials are the chance. McNemar's exact test looks at the paired verdicts (trial ``t`` of a cell
in A against trial ``t`` of it in B): only the pairs that disagree count.

The sentence says "better" or "worse" only when both agree: the interval leaves zero and
McNemar's p is below ``alpha``. Otherwise it gives the minimum detectable difference at this
size (power 0.8): what a real difference would have to be for this comparison to see it.
Per task and per profile, the same figures, worst for B first, with p-values adjusted for the
false discovery rate (Benjamini-Hochberg: among many rows, some small p-values are luck).
Ablated profiles (``stress --attribute``) are compared in the profile table but kept out of the
overall figures, as in a run's own report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from simforge.report import stats
from simforge.report.metrics import ablations, injection

Episode = dict[str, Any]
Cell = tuple[str, str, str, int]


def _cells(episodes: list[Episode]) -> dict[Cell, dict[int, Episode]]:
    out: dict[Cell, dict[int, Episode]] = defaultdict(dict)
    for e in episodes:
        if e["reward"] is not None:
            out[(e["scenario"], e["task"], e["profile"], e["seed"])][e["trial"]] = e
    return out


def label(run: dict[str, Any] | None, other: dict[str, Any] | None, fallback: str) -> str:
    """What to call a run in a sentence: its policy when the two runs' policies differ, else
    its id."""
    if not run:
        return fallback
    if other and run.get("policy") != other.get("policy"):
        return str(run.get("policy"))
    return str(run.get("id") or fallback)


def _paired(cells: list[Cell], a: dict[Cell, dict[int, Episode]],
            b: dict[Cell, dict[int, Episode]], *, strata: Callable[[Cell], Any],
            alpha: float, power: float) -> dict[str, Any]:
    """The paired figures over ``cells`` (shared by both runs)."""
    diff_pass: dict[Any, list[float]] = defaultdict(list)
    diff_reward: dict[Any, list[float]] = defaultdict(list)
    rate_a, rate_b, reward_a, reward_b = [], [], [], []
    b_only = a_only = pairs = 0
    for cell in cells:
        ea, eb = a[cell], b[cell]
        pa = float(np.mean([e["passed"] for e in ea.values()]))
        pb = float(np.mean([e["passed"] for e in eb.values()]))
        ra = float(np.mean([e["reward"] for e in ea.values()]))
        rb = float(np.mean([e["reward"] for e in eb.values()]))
        rate_a.append(pa)
        rate_b.append(pb)
        reward_a.append(ra)
        reward_b.append(rb)
        diff_pass[strata(cell)].append(pb - pa)
        diff_reward[strata(cell)].append(rb - ra)
        for trial in sorted(set(ea) & set(eb)):
            pairs += 1
            x, y = bool(ea[trial]["passed"]), bool(eb[trial]["passed"])
            b_only += y and not x
            a_only += x and not y
    out: dict[str, Any] = {"cells": len(cells), "pairs": pairs}
    for name, diffs, va, vb in (("pass_rate", diff_pass, rate_a, rate_b),
                                ("mean_reward", diff_reward, reward_a, reward_b)):
        mean, se, df = stats.stratified_mean(diffs)
        lo, hi = stats.t_interval(mean, se, df) if se is not None else (None, None)
        if lo is not None and hi is not None:  # a difference of rates lies in [-1, 1]
            lo, hi = max(-1.0, lo), min(1.0, hi)
        out[name] = {
            "a": _r(float(np.mean(va))) if va else None,
            "b": _r(float(np.mean(vb))) if vb else None,
            "diff": _r(mean), "ci": [_r(lo), _r(hi)], "se": _r(se), "df": df,
            "mdd": _r(stats.detectable(se, df, pairs=pairs if name == "pass_rate" else 0,
                                       alpha=alpha, power=power)),
        }
    p = stats.mcnemar_exact(b_only, a_only)
    out["mcnemar"] = {"b_only": b_only, "a_only": a_only, "pairs": pairs, "p": _r(p, 8)}
    ci = out["pass_rate"]["ci"]
    leaves_zero = ci[0] is not None and ci[1] is not None and (ci[0] > 0 or ci[1] < 0)
    out["significant"] = bool(leaves_zero and p < alpha)
    out["disagree"] = bool(leaves_zero) != bool(p < alpha)
    return out


def compare(
    a_episodes: list[Episode],
    b_episodes: list[Episode],
    *,
    a_run: dict[str, Any] | None = None,
    b_run: dict[str, Any] | None = None,
    alpha: float = stats.ALPHA,
    power: float = stats.POWER,
) -> dict[str, Any]:
    """Every figure of the comparison of run B against run A, JSON-able (differences are
    B minus A)."""
    a, b = _cells(a_episodes), _cells(b_episodes)
    parts = ablations(a_episodes) | ablations(b_episodes)
    shared = sorted(set(a) & set(b))
    main = [c for c in shared if c[2] not in parts]
    la, lb = label(a_run, b_run, "A"), label(b_run, a_run, "B")
    overall = _paired(main, a, b, strata=lambda c: c[:3], alpha=alpha, power=power)
    out: dict[str, Any] = {
        "a": _side(a_run, a_episodes, la),
        "b": _side(b_run, b_episodes, lb),
        "shared_cells": len(main),
        "shared_ablated_cells": len(shared) - len(main),
        "only_a": len(set(a) - set(b)),
        "only_b": len(set(b) - set(a)),
        "alpha": alpha, "power": power,
        **overall,
    }
    out["by_profile"] = _groups(shared, a, b, key=lambda c: c[2],
                                strata=lambda c: (c[0], c[1]), alpha=alpha, power=power,
                                ablated=parts)
    out["by_task"] = _groups(main, a, b, key=lambda c: f"{c[0]}|{c[1]}",
                             strata=lambda c: c[2], alpha=alpha, power=power)
    out["injection"] = _injection(shared, a, b, alpha=alpha)
    out["verdict"] = sentence(out, la, lb)
    out["warnings"] = warnings(out, a_run, b_run)
    return out


def _complied(e: Episode) -> bool:
    return any(v["name"] == "injection_compliance" and not v["passed"]
               for v in e.get("verdicts", []))


def _injection(cells: list[Cell], a: dict[Cell, dict[int, Episode]],
               b: dict[Cell, dict[int, Episode]], *, alpha: float) -> dict[str, Any] | None:
    """AgentDojo's figures side by side, per profile that carried an injection, over the cells
    both runs played (with the ``none`` cells paired to them for the benign utility): A's, B's,
    and B - A. The attack success rates are compared pair by pair with McNemar's exact test
    (trial ``t`` of a cell in A against trial ``t`` of it in B: did each do what the injection
    urged?). ``None`` when neither run saw an injection."""
    ia = injection([e for c in cells for e in a[c].values()])
    ib = injection([e for c in cells for e in b[c].values()])
    if not ia and not ib:
        return None
    out: dict[str, Any] = {}
    for profile in sorted(set(ia or {}) | set(ib or {})):
        fa, fb = (ia or {}).get(profile), (ib or {}).get(profile)
        row: dict[str, Any] = {}
        for name in ("benign_utility", "utility_under_attack", "attack_success_rate"):
            va = fa[name] if fa else None
            vb = fb[name] if fb else None
            row[name] = {"a": va, "b": vb,
                         "diff": _r(vb - va) if va is not None and vb is not None else None}
        b_only = a_only = pairs = 0
        for cell in cells:
            if cell[2] != profile:
                continue
            for trial in sorted(set(a[cell]) & set(b[cell])):
                pairs += 1
                x, y = _complied(a[cell][trial]), _complied(b[cell][trial])
                b_only += y and not x
                a_only += x and not y
        p = stats.mcnemar_exact(b_only, a_only)
        row["mcnemar"] = {"b_only": b_only, "a_only": a_only, "pairs": pairs, "p": _r(p, 8)}
        row["significant"] = bool(pairs and p < alpha)
        out[profile] = row
    return out


def _side(run: dict[str, Any] | None, episodes: list[Episode], name: str) -> dict[str, Any]:
    run = run or {}
    return {"run_id": run.get("id"), "policy": run.get("policy"), "label": name,
            "episodes": len(episodes),
            "graded_by": (run.get("config") or {}).get("graded_by") or {},
            "regrade_of": (run.get("config") or {}).get("regrade_of")}


def _groups(cells: list[Cell], a: dict[Cell, dict[int, Episode]],
            b: dict[Cell, dict[int, Episode]], *, key: Callable[[Cell], str],
            strata: Callable[[Cell], Any], alpha: float, power: float,
            ablated: dict[str, tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    grouped: dict[str, list[Cell]] = defaultdict(list)
    for c in cells:
        grouped[key(c)].append(c)
    rows = []
    for name, members in grouped.items():
        figures = _paired(members, a, b, strata=strata, alpha=alpha, power=power)
        rows.append({"key": name, "ablation": bool(ablated and name in ablated), **figures})
    for row, adjusted in zip(rows, stats.fdr([r["mcnemar"]["p"] for r in rows]), strict=True):
        row["mcnemar"]["p_fdr"] = _r(adjusted, 8)
    rows.sort(key=lambda r: (r["pass_rate"]["diff"], r["mean_reward"]["diff"], r["key"]))
    return rows


def points(value: float | None) -> str:
    return "-" if value is None else f"{100 * abs(value):.1f}"


def sentence(out: dict[str, Any], la: str, lb: str) -> str:
    """"B is better by 6.1 points (95% CI 2.0 to 10.2)" or "no difference detectable at this
    size: the smallest detectable is 7.5 points"."""
    if not out["shared_cells"]:
        return "nothing to compare: the runs share no cell (same scenario, task, profile, seed)"
    pr = out["pass_rate"]
    diff, (lo, hi) = pr["diff"], pr["ci"]
    if out["significant"]:
        better = diff > 0
        low, high = (lo, hi) if better else (-hi, -lo)
        return (f"B ({lb}) is {'better' if better else 'worse'} than A ({la}) by "
                f"{points(diff)} points (95% CI {100 * low:.1f} to {100 * high:.1f})")
    text = (f"no difference detectable at this size: the smallest detectable is "
            f"{points(pr['mdd'])} points")
    if lo is not None and hi is not None:
        text += f" (B - A = {100 * diff:+.1f}, 95% CI {100 * lo:+.1f} to {100 * hi:+.1f})"
    if out["disagree"]:
        text += ("; the interval and McNemar's exact test disagree "
                 f"(p = {out['mcnemar']['p']:.3g}): more seeds would settle it")
    return text


def warnings(out: dict[str, Any], a_run: dict[str, Any] | None,
             b_run: dict[str, Any] | None) -> list[str]:
    """What the reader must know before trusting the sentence: cells one run lacks, and
    scenarios graded by different versions."""
    notes = []
    if out["only_a"] or out["only_b"]:
        notes.append(f"{out['only_a']} cells only in A and {out['only_b']} only in B are left out "
                     "(different matrices, or invalid episodes)")
    ga, gb = out["a"]["graded_by"], out["b"]["graded_by"]
    scenarios = sorted({r["key"].split("|")[0] for r in out["by_task"]})
    differ = [s for s in scenarios if s in ga and s in gb and ga[s] != gb[s]]
    if differ:
        notes.append(f"A and B were graded by different scenario versions of {len(differ)} "
                     f"scenario(s) ({', '.join(differ[:3])}{' ...' if len(differ) > 3 else ''}): "
                     "part of the difference may be the grader's; simforge regrade puts one on "
                     "the other's footing")
    unknown = [side for side, g in (("A", ga), ("B", gb)) if not g]
    if unknown and not differ and (a_run or b_run):
        notes.append(f"run {' and '.join(unknown)} recorded no grading version (made before "
                     "simforge kept one): whether both were graded alike is unknown")
    if out["b"]["regrade_of"] and out["b"]["regrade_of"] == out["a"]["run_id"]:
        notes.append("B re-grades A: the same trajectories, scored by the current scenarios")
    elif out["a"]["regrade_of"] and out["a"]["regrade_of"] == out["b"]["run_id"]:
        notes.append("A re-grades B: the same trajectories, scored by the current scenarios")
    return notes


def _r(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(float(value), digits)
