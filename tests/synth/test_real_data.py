"""Synthesis from the real tau2-bench traces with the tau-bench databases as the snapshot:
learned on a seeded 75% split, measured on the held-out 25% (figures in FIDELITY.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.synth.build import synthesize
from simforge.synth.fidelity import fidelity, holdout_ids, replay_gold

from ..conftest import shared_data_dir

RESULTS = {
    "retail": "tau2-bench/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json",
    "airline": "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json",
}


def _synth(shared: Path, domain: str, out: Path) -> tuple[Path, dict]:
    traces = shared / RESULTS[domain]
    synthesize([traces], out, data=[shared / f"tau-bench/envs/{domain}/data"], holdout=0.25, seed=0)
    return traces, fidelity(out, [traces], only=holdout_ids(out))


@pytest.mark.slow
def test_retail_holdout_fidelity_and_replay_gold(shared_data, tmp_path):
    _, result = _synth(shared_data, "retail", tmp_path / "retail")
    assert result["episodes"] == 10
    assert result["reads"]["rate"] >= 0.90
    assert result["writes"]["rate"] >= 0.70
    assert result["errors"]["rate"] >= 0.50
    gold = replay_gold(tmp_path / "retail")
    assert gold["rate"] >= 0.95, gold


@pytest.fixture(scope="module")
def airline(tmp_path_factory) -> tuple[Path, dict]:
    """One airline pack for the tests below (synthesis is the slow part)."""
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    out = tmp_path_factory.mktemp("synth") / "airline"
    return out, _synth(shared, "airline", out)[1]


@pytest.mark.slow
def test_airline_holdout_reads_writes_and_replay_gold(airline):
    folder, result = airline
    assert result["reads"]["rate"] >= 0.90
    by_tool = result["by_tool"]
    assert by_tool["search_direct_flight"]["reads"]["rate"] == 1.0
    assert by_tool["get_reservation_details"]["reads"]["rate"] == 1.0
    # flights priced by a join on (flight_number, date, cabin), the charge (new - old fares)
    # times passengers: two of three bookings and the cancellation (see FIDELITY.md for the rest)
    assert result["writes"]["exact"] >= 3
    assert by_tool["book_reservation"]["writes"]["exact"] == 2
    gold = replay_gold(folder)
    assert gold["rate"] >= 0.95, gold


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the held-out airline writes need what no training episode shows: "
    "update_reservation_passengers is never called in training (so the pack has no such tool "
    "and the two later writes of that episode see the old passengers), no training call keeps an "
    "unchanged flight at its old fare or charges a baggage fee, and the one error is never seen "
    "in training (see FIDELITY.md)",
)
def test_airline_holdout_write_fidelity_target(airline):
    assert airline[1]["writes"]["rate"] >= 0.70


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the only airline error (Payment amount does not add up...) is in a held-out episode; "
    "no training call fails, so neither its condition nor its text can be learned",
)
def test_airline_holdout_error_fidelity_target(airline):
    assert airline[1]["errors"]["rate"] >= 0.50
