"""The statistics of noise, power and paired differences, pinned against values worked by hand
and against scipy and statsmodels computing the same quantity another way."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simforge.report import stats


def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs():
    # 1 pair one way, 9 the other: 2 * P(X <= 1 | 10, 1/2) = 2 * 11 / 1024
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024, abs=1e-12)
    assert stats.mcnemar_exact(9, 1) == stats.mcnemar_exact(1, 9)
    assert stats.mcnemar_exact(0, 0) == 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    for b, c in [(1, 9), (12, 30), (40, 41), (0, 7)]:
        table = [[50, b], [c, 20]]
        assert stats.mcnemar_exact(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue)


def test_fewer_than_six_one_way_flips_are_never_significant():
    assert stats.mcnemar_floor() == 6  # 2 / 2**6 = 0.031 < 0.05 <= 2 / 2**5
    assert stats.mcnemar_exact(5, 0) == pytest.approx(0.0625)


def test_the_required_noncentrality_is_the_paired_t_tests():
    from scipy.stats import nct, norm, t

    # G*Power: a paired t test with 20 pairs detects dz = 0.6604 at alpha 0.05, power 0.8
    assert stats.required_noncentrality(19) / math.sqrt(20) == pytest.approx(0.6604, abs=1e-4)
    from statsmodels.stats.power import TTestPower

    assert stats.required_noncentrality(49) / math.sqrt(50) == pytest.approx(
        TTestPower().solve_power(nobs=50, alpha=0.05, power=0.8), abs=1e-6)
    for df in (1, 4, 19, 200, 1533):
        nc = stats.required_noncentrality(df)
        crit = t.ppf(0.975, df)
        power = nct.sf(crit, df, nc) + nct.cdf(-crit, df, nc)
        assert power == pytest.approx(0.8, abs=1e-6)
    assert stats.required_noncentrality(10**6) == pytest.approx(
        norm.ppf(0.975) + norm.ppf(0.8), abs=1e-3)  # 2.8016


def test_a_detectable_difference_is_never_below_what_mcnemar_can_see():
    assert stats.detectable(0.0, 100, pairs=60) == pytest.approx(6 / 60)
    assert stats.detectable(0.01, 10**6, pairs=10**6) == pytest.approx(0.028016, abs=1e-4)
    assert stats.detectable(None, 10) is None


def test_false_discovery_rate_adjusts_as_benjamini_hochberg():
    # by hand: sorted 0.01, 0.03, 0.04 -> 0.03, 0.045, 0.04 -> monotone: 0.03, 0.04, 0.04
    assert stats.fdr([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert stats.fdr([]) == []


def test_t_interval_matches_scipys_paired_t_test():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(3)
    a, b = rng.random(15), rng.random(15)
    mean, se, df = stats.stratified_mean({"only": list(b - a)})
    lo, hi = stats.t_interval(mean, se, df)
    ci = ttest_rel(b, a).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low, ci.high))


def test_the_stratified_standard_error_is_the_one_way_anova_residual():
    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    values = {g: list(rng.normal(g, 1.0, size=6)) for g in range(4)}
    mean, se, df = stats.stratified_mean(values)
    data = pd.DataFrame([(g, v) for g, vs in values.items() for v in vs], columns=["g", "d"])
    fit = smf.ols("d ~ C(g)", data).fit()
    assert df == fit.df_resid == 20
    assert se == pytest.approx(math.sqrt(fit.mse_resid / 24))
    assert mean == pytest.approx(data["d"].mean())


@given(st.lists(st.booleans(), min_size=2, max_size=12))
def test_the_flip_rate_is_the_share_of_trial_pairs_that_disagree(verdicts):
    pairs = list(itertools.combinations(verdicts, 2))
    assert stats.flip_rate(verdicts) == pytest.approx(sum(a != b for a, b in pairs) / len(pairs))


def test_flip_rate_by_hand():
    assert stats.flip_rate([True, True, False, False]) == pytest.approx(2 / 3)
    assert stats.flip_rate([True, True, True]) == 0.0
    assert stats.flip_rate([True]) is None


def test_variance_components_are_the_reml_estimates_of_a_balanced_design():
    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(1)
    rows = []
    for g in range(4):
        for s in range(6):
            mu = g * 0.1 + rng.normal(0, 0.3)
            rows += [(f"g{g}", f"g{g}s{s}", mu + rng.normal(0, 0.5)) for _ in range(4)]
    data = pd.DataFrame(rows, columns=["g", "cell", "y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("y ~ C(g)", data, groups=data["cell"]).fit(reml=True)
    cells: dict = {}
    for g, cell, y in rows:
        cells.setdefault((g, cell), []).append(y)
    comp = stats.components(cells)
    assert (comp.cells, comp.groups, comp.trials, comp.df) == (24, 4, 4.0, 20)
    assert comp.within == pytest.approx(fit.scale, rel=1e-3)
    assert comp.between_seeds == pytest.approx(fit.cov_re.iloc[0, 0], rel=1e-3)
    assert comp.cell_var == pytest.approx(comp.between_seeds + comp.within / 4)


def test_components_by_hand():
    # one group, two seeds, two trials: seed 0 passes both, seed 1 one of two
    comp = stats.components({("g", 0): [1.0, 1.0], ("g", 1): [1.0, 0.0]})
    assert comp.within == pytest.approx(0.25)  # (0 + 0.5) / (1 + 1)
    assert comp.cell_var == pytest.approx(0.125)  # means 1 and 0.5
    assert comp.between_seeds == 0.0  # 0.125 - 0.25 / 2, floored at 0
    assert stats.components({}).cells == 0


def _ep(task, seed, trial, passed, profile="none"):
    return {"scenario": "s/x-v1", "task": task, "profile": profile, "seed": seed,
            "trial": trial, "passed": passed, "reward": float(passed)}


def test_noise_of_a_deterministic_policy_is_zero_and_its_mdd_comes_from_the_seeds():
    # task a passes on even seeds only, every trial alike; task b always passes
    episodes = [_ep("a", s, t, s % 2 == 0) for s in range(6) for t in range(2)]
    episodes += [_ep("b", s, t, True) for s in range(6) for t in range(2)]
    out = stats.noise(episodes)
    assert out["flip_rate"] == 0.0 and out["tasks_flipping"] == 0
    assert out["noise_floor"]["sd"] == 0.0 and out["noise_floor"]["gap"] == 0.0
    assert out["noise_floor"]["trial_pass_rates"] == [0.75, 0.75]
    comp = out["components"]
    assert comp["cell_var"] == pytest.approx(0.15)  # a: var(1,0,1,0,1,0) = 0.3; b: 0
    expected = stats.required_noncentrality(10) * math.sqrt(2 * 0.15 / 12)
    assert out["mdd"] == pytest.approx(expected, abs=1e-6)


def test_noise_floor_is_the_trial_noise_of_the_pass_rate():
    # 10 cells of one task, each passing one trial of two: within = 0.5, no seed variance
    episodes = [_ep("a", s, t, t == 0) for s in range(10) for t in range(2)]
    out = stats.noise(episodes)
    assert out["flip_rate"] == 1.0 and out["flips_by_task"]["s/x-v1|a"]["flipping"] == 10
    assert out["components"]["within"] == pytest.approx(0.5)
    assert out["noise_floor"]["sd"] == pytest.approx(math.sqrt(0.5 / 2 / 10))
    assert out["noise_floor"]["sd_across_trials"] == pytest.approx(math.sqrt(0.5))  # 1.0 vs 0.0
    assert out["noise_floor"]["gap"] == pytest.approx(1.959964 * math.sqrt(2) * math.sqrt(0.025),
                                                     abs=1e-5)


def test_the_recommendation_is_the_fewest_seeds_that_reach_the_target():
    comp = stats.components({(g, s): [1.0, 0.0, float(s % 2)] for g in range(3)
                             for s in range(4)})
    rec = stats.recommend(comp, target=0.05)
    assert rec is not None and rec["best"] is not None
    for option in rec["options"]:
        seeds, trials = option["seeds"], option["trials"]
        assert stats.mdd_at(comp, seeds, trials) <= 0.05 < stats.mdd_at(comp, seeds - 1, trials)
        assert option["episodes"] == 3 * seeds * trials
    assert rec["best"]["episodes"] == min(o["episodes"] for o in rec["options"])


def test_strata_without_any_variation_fall_back_to_the_pooled_standard_error():
    from scipy.stats import ttest_1samp

    # every seed of each stratum agrees, but the strata differ: three seeds cannot show spread
    values = {"none": [0.0, 0.0, 0.0], "faulty": [-1.0, -1.0, -1.0]}
    mean, se, df = stats.stratified_mean(values)
    flat = [0.0, 0.0, 0.0, -1.0, -1.0, -1.0]
    assert (mean, df) == (-0.5, 5)
    assert se == pytest.approx(0.5 / abs(float(ttest_1samp(flat, 0.0).statistic)))
    assert stats.stratified_mean({"a": [0.0, 0.0], "b": [0.0, 0.0]})[1] == 0.0  # all alike


def test_groups_that_never_vary_do_not_claim_a_variance_of_zero():
    # a deterministic policy on three seeds: task a always fails, task b always passes
    cells = {(g, s): [float(g == "b")] * 2 for g in ("a", "b") for s in range(3)}
    comp = stats.components(cells)
    assert comp.cell_var == pytest.approx(float(np.var([0, 0, 0, 1, 1, 1], ddof=1)))
    assert comp.df == 5 and comp.within == 0.0
    same = stats.components({("a", s): [1.0, 1.0] for s in range(3)})
    assert same.cell_var == 0.0  # nothing differs anywhere: nothing to stand in
