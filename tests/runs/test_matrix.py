"""The plan is deterministic, keyed, and always paired with the no-fault baseline."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simforge.config import NotFound
from simforge.runs.matrix import Cell, RunConfig, chunks, plan


def test_the_plan_is_every_task_profile_seed_and_trial_in_a_fixed_order(mini):
    config = RunConfig(scenarios=[mini], policy="oracle", profiles=["flaky-network"], seeds=3,
                       trials=2).with_baseline()
    first, second = plan(config), plan(config)
    assert first.cells == second.cells
    assert len(first) == 2 * 2 * 3 * 2  # tasks x profiles x seeds x trials
    assert len({c.key for c in first.cells}) == len(first)
    assert config.profiles == ["none", "flaky-network"]
    assert first.cells[0] == Cell("mini/upgrade-v1", "upgrade", "none", 0, 0)
    assert first.refs == {"mini/upgrade-v1": mini}


def test_seeds_beyond_the_scenarios_own_continue_upward(mini):
    cells = plan(RunConfig(scenarios=[mini], policy="noop", seeds=4, tasks=["note"])).cells
    assert [c.seed for c in cells] == [0, 1, 2, 3]


def test_trials_reseed_the_policy_but_not_the_world():
    cells = [Cell("s/x-v1", "t", "none", 7, trial) for trial in range(3)]
    assert cells[0].policy_seed == 7
    assert len({c.policy_seed for c in cells}) == 3
    assert Cell("s/x-v1", "t", "none", 7, 2).policy_seed == cells[2].policy_seed


def test_unknown_profiles_and_tasks_fail_before_anything_runs(mini):
    with pytest.raises(NotFound, match="unknown fault profile 'nope'"):
        plan(RunConfig(scenarios=[mini], policy="noop", profiles=["nope"]))
    with pytest.raises(NotFound, match="no task 'nope'"):
        plan(RunConfig(scenarios=[mini], policy="noop", tasks=["nope"]))


def test_chunks_cover_every_cell_once():
    cells = [Cell("s/x-v1", "t", "none", i, 0) for i in range(1000)]
    groups = chunks(cells, 2)
    assert [c for g in groups for c in g] == cells
    assert max(len(g) for g in groups) <= 16
    assert chunks([], 4) == []


@given(scenario=st.text(max_size=20), task=st.text(max_size=10), profile=st.text(max_size=10),
       seed=st.integers(min_value=0, max_value=2**63), trial=st.integers(min_value=0, max_value=99))
def test_a_cell_crosses_to_a_worker_unchanged(scenario, task, profile, seed, trial):
    import pickle

    cell = Cell(scenario, task, profile, seed, trial)
    back = pickle.loads(pickle.dumps(cell))
    assert back == cell and back.key == cell.key and back.policy_seed == cell.policy_seed
