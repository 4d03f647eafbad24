"""One quantile definition: ``simforge ingest``, ``simforge report`` and the learned latency
models all take their quantiles from :mod:`simforge.quantiles`, which is numpy's default
(linear interpolation at position ``p * (n - 1)``)."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from simforge.errors import UsageError
from simforge.quantiles import quantile, quantiles
from simforge.report.metrics import distribution
from simforge.tools.spec import Empirical
from simforge.trace.stats import ToolStat

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
probs = st.lists(st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99,
                                  0.999, 1.0]), min_size=1, max_size=6)


def test_the_median_of_an_even_sample_is_between_its_middle_values() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([], 0.5) is None
    assert quantiles([7.0], [0.0, 0.5, 1.0]) == [7.0, 7.0, 7.0]


@example([0.0, 0.0, 0.0, -671088.6823505288, -671088.6823505288], [0.01, 0.05])  # an ulp apart
@given(st.lists(finite, min_size=1, max_size=200), probs)
def test_quantiles_agree_with_numpys_default(values: list[float], ps: list[float]) -> None:
    got = quantiles(values, ps)
    assert got is not None
    assert got == pytest.approx(list(np.quantile(values, ps)), rel=1e-9, abs=1e-6)
    assert all(min(values) <= q <= max(values) for q in got)
    assert got == sorted(got) or ps != sorted(ps)


@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1,
                max_size=100))
def test_ingest_and_report_print_the_same_median(latencies: list[float]) -> None:
    stat = ToolStat(latencies_ms=array("d", latencies))
    assert stat.quantiles()["p50_ms"] == pytest.approx(distribution(latencies)["p50"], abs=1e-3)


def test_a_learned_latency_model_spans_the_samples() -> None:
    model = Empirical.from_samples([5.0, 1.0, 3.0], points=5)
    assert model.quantiles == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_probability_outside_the_unit_interval_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"1\.5"):
        quantiles([1.0], [1.5])
