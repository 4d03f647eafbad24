"""Synthesis from the real tau2-bench traces with the tau-bench databases as the snapshot:
learned on a seeded 75% split, measured on the held-out 25% (figures in FIDELITY.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.synth.build import synthesize
from simforge.synth.fidelity import fidelity, holdout_ids, replay_gold

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


@pytest.mark.slow
def test_airline_holdout_reads(shared_data, tmp_path):
    _, result = _synth(shared_data, "airline", tmp_path / "airline")
    assert result["reads"]["rate"] >= 0.90
    by_tool = result["by_tool"]
    assert by_tool["search_direct_flight"]["reads"]["rate"] == 1.0
    assert by_tool["get_reservation_details"]["reads"]["rate"] == 1.0


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="update_reservation_flights and book_reservation price flights by joining the flight "
    "table on (flight_number, date, cabin) and charge sum(price * passengers) differences: beyond "
    "the learned effect language (see FIDELITY.md)",
)
def test_airline_holdout_write_fidelity_target(shared_data, tmp_path):
    _, result = _synth(shared_data, "airline", tmp_path / "airline")
    assert result["writes"]["rate"] >= 0.70
    assert replay_gold(tmp_path / "airline")["rate"] >= 0.95
