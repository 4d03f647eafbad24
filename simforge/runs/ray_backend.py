"""The Ray backend: the same cells as Ray tasks, records gathered by the driver into the store.

A task runs a chunk of cells with :func:`simforge.runs.worker.run_cells`, exactly the code a
local pool process runs, so rewards are identical to the local backend for the same seeds (the
kernel is deterministic across processes and machines). Ray reuses worker processes, so the
environment cache of :mod:`simforge.runs.worker` survives from one task to the next.

Only the driver writes to the store. On a cluster, point ``--store`` at PostgreSQL so that
``simforge report`` can read the run from anywhere while it is being written (see
``docs/runs.md``). ``ray`` is an optional extra (``pip install 'simforge[ray]'``); importing this
module without it is fine, running it is a clear error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from simforge.errors import InfrastructureError
from simforge.runs.matrix import Cell, chunks
from simforge.runs.worker import Record, run_cells


class RayUnavailable(InfrastructureError, RuntimeError):
    """``--backend ray`` without ray installed."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "the ray backend needs ray: pip install 'simforge[ray]'"
        ) from None
    return ray


def run_ray(
    cells: list[Cell],
    refs: dict[str, str],
    policy_spec: str,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    trajectories: bool = True,
    profiles: dict[str, str] | None = None,
    max_in_flight: int | None = None,
    user: str | None = None,
) -> Iterator[list[Record]]:
    """Records of ``cells``, a batch per finished task. Connects to ``address`` (``auto`` for the
    cluster this machine belongs to, ``ray://host:10001`` for a remote one) or starts a local
    Ray with ``num_cpus`` when Ray is not running yet in this process."""
    ray = _ray()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        elif num_cpus:
            kwargs["num_cpus"] = num_cpus
        ray.init(**kwargs)
    width = int(ray.cluster_resources().get("CPU", 1))
    remote = ray.remote(num_cpus=1, max_retries=2)(run_cells)
    pending = chunks(cells, width)
    limit = max_in_flight or width * 4
    refs_handle = ray.put(refs)
    in_flight: list[Any] = []
    next_chunk = 0
    while next_chunk < len(pending) or in_flight:
        while next_chunk < len(pending) and len(in_flight) < limit:
            in_flight.append(
                remote.remote(pending[next_chunk], refs_handle, policy_spec, trajectories,
                              profiles, user)
            )
            next_chunk += 1
        done, in_flight = ray.wait(in_flight, num_returns=1)
        for ref in done:
            yield ray.get(ref)
