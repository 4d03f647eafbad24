"""The local backend: a process pool on one machine, results streamed to the parent.

On Linux, workers are forked from the parent after it has loaded every scenario of the plan
(packs, seeded worlds, the scenario index), so a worker starts with all of it in memory and its
first episode costs what its hundredth does; a ``spawn`` or ``forkserver`` worker would parse
and build all of it again, seconds per worker. The fork happens when the first chunk is
submitted, before the caller starts any thread of its own (the CLI starts its progress bar on
the first result); nothing in a worker touches what other threads might hold. Elsewhere
(macOS, where fork is unsafe) workers come from a ``forkserver``. Nothing but chunks of cells
goes out (16 at most, so that one round trip and one commit serve many episodes).

Who writes the store: with :func:`store_local` (what ``simforge stress`` uses), each worker
writes the chunk it played, one transaction per chunk, through its own connection (never one
inherited from the parent), and sends back the records without their trajectories. The
runner process then costs next to nothing per episode, where writing every worker's episodes
would make it the bottleneck of the pool. SQLite serialises the writers (WAL, a busy timeout);
a worker killed mid-transaction leaves nothing of it. With :func:`run_local` the records come
back whole and the caller writes them. A worker whose runner dies exits (see
:func:`simforge.runs.worker.watch_runner`).

``workers=0`` runs in-process: no pool, the simplest thing to debug and profile.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from simforge.errors import UsageError
from simforge.runs.matrix import Cell, chunks
from simforge.runs.worker import Record, run_cells, store_cells, warm_env, watch_runner

T = TypeVar("T")


def _init_worker(runner: int) -> None:
    watch_runner(runner)


def _context(refs: dict[str, str], user: str | None) -> mp.context.BaseContext:
    if sys.platform.startswith("linux"):
        for ref in refs.values():
            warm_env(ref, user)  # inherited by every forked worker
        return mp.get_context("fork")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["simforge.runs.worker", "simforge.env.core"])
    return ctx


def run_local(
    cells: list[Cell],
    refs: dict[str, str],
    policy_spec: str,
    *,
    workers: int = 1,
    trajectories: bool = True,
    profiles: dict[str, str] | None = None,
    max_in_flight: int | None = None,
    user: str | None = None,
) -> Iterator[list[Record]]:
    """Records of ``cells``, a batch per finished chunk (in completion order, not plan order);
    in-process, a batch per cell, so that each is stored the moment it ends."""
    if workers <= 0:
        for cell in cells:
            yield run_cells([cell], refs, policy_spec, trajectories, profiles, user)
        return
    yield from _pooled(run_cells, cells, refs, user, workers, max_in_flight,
                       (refs, policy_spec, trajectories, profiles, user))


def store_local(
    cells: list[Cell], refs: dict[str, str], policy_spec: str, store: tuple[str, str], *,
    workers: int, trajectories: bool = True, profiles: dict[str, str] | None = None,
    user: str | None = None,
) -> Iterator[list[tuple[Record, bool]]]:
    """``cells`` played and written by the pool's ``workers`` (at least one) to ``store``,
    ``(store URL, run id)``, a chunk per transaction (:func:`simforge.runs.worker.store_cells`);
    ``(record, written)`` a batch per chunk committed, in completion order, the records
    without their trajectories."""
    if workers <= 0:
        raise UsageError("store_local needs at least one worker process")
    yield from _pooled(store_cells, cells, refs, user, workers, None,
                       (refs, policy_spec, trajectories, profiles, user, *store))


def _pooled(
    job: Callable[..., list[T]],
    cells: list[Cell],
    refs: dict[str, str],
    user: str | None,
    workers: int,
    max_in_flight: int | None,
    args: tuple[Any, ...],
) -> Iterator[list[T]]:
    """``job(chunk, *args)`` for each chunk of ``cells`` on a pool of ``workers``, at most
    ``max_in_flight`` chunks handed out at a time; results in completion order."""
    ctx = _context(refs, user)
    pending = chunks(cells, workers)
    limit = max_in_flight or workers * 4
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    ) as pool:
        in_flight: set[Future[list[T]]] = set()
        next_chunk = 0
        try:
            while next_chunk < len(pending) or in_flight:
                while next_chunk < len(pending) and len(in_flight) < limit:
                    in_flight.add(pool.submit(job, pending[next_chunk], *args))
                    next_chunk += 1
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            for future in in_flight:
                future.cancel()
