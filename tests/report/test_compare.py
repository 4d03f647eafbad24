"""Two runs compared cell by cell: the statistics pinned against scipy and statsmodels, and the
sentence a reader acts on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rich.console import Console

from simforge.report import stats
from simforge.report.compare import compare
from simforge.report.terminal import compare_tables


def ep(task, seed, passed, *, trial=0, profile="none", reward=None, scenario="s/x-v1"):
    return {"scenario": scenario, "task": task, "profile": profile, "seed": seed,
            "trial": trial, "passed": passed,
            "reward": (1.0 if passed else 0.0) if reward is None else reward}


def test_one_stratum_is_the_paired_t_test_and_mcnemar_counts_the_flips():
    from scipy.stats import binomtest, ttest_rel

    # 20 seeds of one task: A passes all; B fails seeds 0-7, passes seed 19 only via a flip
    a = [ep("t", s, True) for s in range(20)]
    b = [ep("t", s, s >= 8) for s in range(20)]
    out = compare(a, b)
    pr = out["pass_rate"]
    assert (pr["a"], pr["b"], pr["diff"]) == (1.0, 0.6, -0.4)
    xa = np.ones(20)
    xb = np.array([float(s >= 8) for s in range(20)])
    ci = ttest_rel(xb, xa).confidence_interval(0.95)
    assert pr["ci"] == pytest.approx([ci.low, ci.high], abs=1e-6)
    assert out["mcnemar"] == {"b_only": 0, "a_only": 8, "pairs": 20,
                              "p": pytest.approx(binomtest(0, 8, 0.5).pvalue, abs=1e-8)}
    assert out["significant"]
    assert out["verdict"].startswith("B (B) is worse than A (A) by 40.0 points (95% CI ")
    se = pr["se"]
    assert se == pytest.approx(np.std(xb - xa, ddof=1) / math.sqrt(20), abs=1e-6)
    assert pr["mdd"] == pytest.approx(stats.required_noncentrality(19) * se, abs=1e-6)


def test_strata_keep_task_differences_out_of_the_noise():
    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    a, b, rows = [], [], []
    for t, effect in (("easy", 0.0), ("hard", -0.5)):
        for s in range(8):
            pa = rng.random() < 0.9
            pb = rng.random() < 0.9 + effect
            a.append(ep(t, s, pa))
            b.append(ep(t, s, pb))
            rows.append((t, float(pb) - float(pa)))
    out = compare(a, b)
    data = pd.DataFrame(rows, columns=["task", "d"])
    fit = smf.ols("d ~ C(task)", data).fit()
    assert out["pass_rate"]["se"] == pytest.approx(math.sqrt(fit.mse_resid / 16), abs=1e-6)
    assert out["pass_rate"]["df"] == fit.df_resid == 14


def test_identical_runs_show_no_difference_and_the_smallest_detectable_one():
    a = [ep("t", s, s % 3 != 0, trial=k) for s in range(10) for k in range(3)]
    out = compare(a, [dict(e) for e in a])
    assert not out["significant"] and out["pass_rate"]["diff"] == 0.0
    # nothing varies between the runs: only McNemar's floor limits (6 flips of 30 pairs)
    assert out["pass_rate"]["mdd"] == pytest.approx(6 / 30)
    assert out["verdict"].startswith(
        "no difference detectable at this size: the smallest detectable is 20.0 points")


def test_a_difference_the_interval_sees_but_mcnemar_does_not_is_not_called_real():
    # 4 of 40 cells flip, all one way: t says the mean is off zero, McNemar (p = 0.125) not
    a = [ep("t", s, True) for s in range(40)]
    b = [ep("t", s, s >= 4) for s in range(40)]
    out = compare(a, b)
    assert out["pass_rate"]["ci"][1] < 0 and out["mcnemar"]["p"] == pytest.approx(0.125)
    assert not out["significant"] and out["disagree"]
    assert "disagree" in out["verdict"]


def test_per_task_rows_are_worst_first_with_fdr_adjusted_p():
    from statsmodels.stats.multitest import multipletests

    a = [ep(t, s, True) for t in ("a", "b", "c") for s in range(10)]
    b = [ep("a", s, True) for s in range(10)] + [ep("b", s, s > 7) for s in range(10)] + \
        [ep("c", s, s > 3) for s in range(10)]
    out = compare(a, b)
    assert [r["key"] for r in out["by_task"]] == ["s/x-v1|b", "s/x-v1|c", "s/x-v1|a"]
    raw = [r["mcnemar"]["p"] for r in out["by_task"]]
    assert [r["mcnemar"]["p_fdr"] for r in out["by_task"]] == pytest.approx(
        list(multipletests(raw, method="fdr_bh")[1]))


def test_only_shared_cells_count_and_the_rest_is_said():
    a = [ep("t", s, True) for s in range(6)]
    b = [ep("t", s, True) for s in range(3, 9)]
    out = compare(a, b)
    assert (out["shared_cells"], out["only_a"], out["only_b"]) == (3, 3, 3)
    assert any("only in A" in w for w in out["warnings"])
    assert compare(a, [ep("u", 0, True)])["verdict"].startswith("nothing to compare")


def test_different_grading_versions_are_warned_about():
    a = [ep("t", s, True) for s in range(6)]
    ra = {"id": "r1", "policy": "p", "config": {"graded_by": {"s/x-v1": "aaaa"}}}
    rb = {"id": "r2", "policy": "p", "config": {"graded_by": {"s/x-v1": "bbbb"}}}
    out = compare(a, a, a_run=ra, b_run=rb)
    assert any("graded by different scenario versions" in w for w in out["warnings"])
    same = compare(a, a, a_run=ra, b_run={**rb, "config": ra["config"]})
    assert not any("different" in w for w in same["warnings"])


def test_the_terminal_comparison_fits_80_columns():
    a = [ep(f"task-with-a-long-name-{t}", s, True, scenario="acme/a-rather-long-scenario-v1")
         for t in range(20) for s in range(5)]
    b = [dict(e, passed=e["seed"] > 1, reward=float(e["seed"] > 1)) for e in a]
    console = Console(record=True, width=80)
    console.print(compare_tables(compare(a, b, a_run={"id": "r1", "policy": "retrying"},
                                         b_run={"id": "r2", "policy": "no-retry"})))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "B (no-retry) is worse than A (retrying) by 40.0 points" in " ".join(text.split())


def _attacked(task, seed, passed, complied, *, trial=0):
    e = ep(task, seed, passed, trial=trial, profile="injection")
    e["faults"] = [{"kind": "prompt_injection", "tool": "get_ticket"}]
    e["verdicts"] = [{"name": "injection_compliance", "passed": not complied}]
    return e


def test_injection_figures_are_compared_side_by_side_with_paired_attack_success():
    """A harness change that makes the agent follow injected text shows as a higher attack
    success rate in B, with McNemar over the paired episodes, next to the benign utility."""
    a, b = [], []
    for t in range(4):
        for s in range(10):
            a.append(ep(f"t{t}", s, True))
            b.append(ep(f"t{t}", s, True))
            a.append(_attacked(f"t{t}", s, True, False))
            complied = s < 6
            b.append(_attacked(f"t{t}", s, not complied, complied))
    result = compare(a, b)
    row = result["injection"]["injection"]
    assert row["benign_utility"] == {"a": 1.0, "b": 1.0, "diff": 0.0}
    assert row["attack_success_rate"]["a"] == 0.0
    assert row["attack_success_rate"]["b"] == pytest.approx(0.6)
    assert row["attack_success_rate"]["diff"] == pytest.approx(0.6)
    assert row["utility_under_attack"]["diff"] == pytest.approx(-0.6)
    assert row["mcnemar"]["b_only"] == 24 and row["mcnemar"]["a_only"] == 0
    assert row["mcnemar"]["p"] == pytest.approx(stats.mcnemar_exact(24, 0), abs=1e-8)
    assert row["significant"] is True
    console = Console(record=True, width=80)
    console.print(compare_tables(result))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "attack success" in text and "+60.0 pp" in text
    # runs without injections carry no such section
    assert compare([ep("t", 0, True)], [ep("t", 0, False)])["injection"] is None


def test_the_html_comparison_shows_the_injection_table():
    from simforge.report.html import render_compare_html

    a = [ep("t", s, True) for s in range(3)] + [_attacked("t", s, True, False) for s in range(3)]
    b = [ep("t", s, True) for s in range(3)] + [_attacked("t", s, False, True) for s in range(3)]
    html = render_compare_html(compare(a, b))
    assert "Prompt injection" in html and "attack success rate" in html
    assert "+100.0" in html.replace("&#43;", "+")
