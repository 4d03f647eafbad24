"""The local backend: a process pool on one machine, results streamed to the parent.

On Linux, workers are forked from the parent after it has loaded every scenario of the plan
(packs, seeded worlds, the scenario index), so a worker starts with all of it in memory and its
first episode costs what its hundredth does; a ``spawn`` or ``forkserver`` worker would parse
and build all of it again, seconds per worker. The fork happens when the first chunk is
submitted, before the caller starts any thread of its own (the CLI starts its progress bar on
the first result); nothing in a worker touches what other threads might hold. Elsewhere
(macOS, where fork is unsafe) workers come from a ``forkserver``. Nothing but cells goes out
and nothing but records comes back. Only the parent writes to the store: SQLite allows one
writer, and a crash of a worker must not leave a half-written episode. A worker whose runner
dies exits (see :func:`simforge.runs.worker.watch_runner`).

``workers=0`` runs in-process: no pool, the simplest thing to debug and profile.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from simforge.runs.matrix import Cell, chunks
from simforge.runs.worker import Record, run_cells, warm_env, watch_runner


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
    ctx = _context(refs, user)
    pending = chunks(cells, workers)
    limit = max_in_flight or workers * 4
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    ) as pool:
        in_flight: set[Future[list[Record]]] = set()
        next_chunk = 0
        try:
            while next_chunk < len(pending) or in_flight:
                while next_chunk < len(pending) and len(in_flight) < limit:
                    in_flight.add(
                        pool.submit(run_cells, pending[next_chunk], refs, policy_spec,
                                    trajectories, profiles, user)
                    )
                    next_chunk += 1
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            for future in in_flight:
                future.cancel()


