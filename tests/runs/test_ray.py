"""The Ray backend gives the local backend's rewards, cell for cell (``ray.init(num_cpus=2)``)."""

from __future__ import annotations

import pytest

from simforge.runs.matrix import RunConfig
from simforge.runs.runner import execute, prepare
from simforge.runs.store import RunStore

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'simforge[ray]')")

FIELDS = ("reward", "passed", "steps", "sim_time", "invalid_reason")


@pytest.mark.slow
def test_ray_tasks_reproduce_the_local_run(mini, sqlite_url):
    config = RunConfig(scenarios=[mini], policy="random", profiles=["flaky-network"], seeds=4,
                       trials=2).with_baseline()
    store = RunStore(sqlite_url)
    local = prepare(store, config)
    execute(store, local, workers=0)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = prepare(store, config, backend="ray")
        assert execute(store, remote, backend="ray") == len(remote.plan)
    finally:
        ray.shutdown()
    by_local = {e["key"]: e for e in store.episodes(local.run_id)}
    by_ray = {e["key"]: e for e in store.episodes(remote.run_id)}
    assert by_local.keys() == by_ray.keys() and len(by_local) == 32
    for key, e in by_local.items():
        assert {f: e[f] for f in FIELDS} == {f: by_ray[key][f] for f in FIELDS}, key
    assert store.run(remote.run_id)["status"] == "complete"
    assert store.run(remote.run_id)["backend"] == "ray"
