"""A short run of the scenario campaign (``python -m tests.scenario.campaign``): mutated
scenario and fault-profile files are refused with a UserError or accepted, never a traceback
or a hang; a `stress` killed with SIGKILL and resumed loses nothing and stores nothing twice."""

from __future__ import annotations

import sys

import pytest

from tests.scenario.campaign import campaign


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_mutated_scenarios_and_a_killed_stress_run():
    report = campaign(count=60, seed=7, kills=1)
    assert report["tracebacks"] == 0 and report["hangs"] == 0, report["examples"]
    assert report["refused"] + report["accepted"] == report["cases"] == 60
    assert report["refused"] > 0  # the mutations do break files
    kills = report["stress_kills"]
    assert kills["lost"] == 0 and kills["stored_twice"] == 0
    assert kills["resumed_complete"] == 1
