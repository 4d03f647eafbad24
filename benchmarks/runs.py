"""Runs benchmark: episodes per second of the local matrix with 0 (in-process), 1 and 2 worker
processes, and the per-episode cost of the run store on SQLite and PostgreSQL.

Run: ``python benchmarks/runs.py [--scenario ID_OR_PATH ...] [--seeds 200] [--policy oracle]
[--pg postgresql+psycopg://...]`` (PostgreSQL also from ``$SIMFORGE_TEST_PG_URL``; skipped if
neither is given).

- *matrix*: ``simforge stress``'s own path (plan, backend, one store transaction per returned
  batch) into a fresh SQLite file, timed from the first cell submitted to the last episode
  committed, pool start-up included; each worker loads its packs once. Scaling efficiency is
  eps(2 workers) / (2 x eps(1 worker)); on 2 cores the parent (which writes the store) shares a
  core with a worker, so 100% is out of reach by construction.
- *store*: the same pre-computed records written one transaction per episode (what the
  in-process runner does) and 16 per transaction (a worker's chunk); the figure is wall time
  per episode, commit included (``synchronous=NORMAL`` under WAL for SQLite; PostgreSQL's
  default ``synchronous_commit=on``, an fsync per commit).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

from simforge.runs.matrix import RunConfig, normalise_ref, plan
from simforge.runs.runner import execute, prepare
from simforge.runs.store import RunStore
from simforge.runs.worker import Record, run_cells

DEFAULT_SCENARIOS = [
    "acme/refund-damaged-order-v1",
    "acme/cancel-paid-order-v1",
    "acme/escalate-ticket-by-email-v1",
    "acme/large-refund-approval-v1",
]


def matrix_eps(config: RunConfig, workers: int, tmp: Path) -> tuple[float, int, float]:
    store = RunStore(f"sqlite:///{tmp / f'matrix-{workers}-{secrets.token_hex(3)}.db'}")
    prepared = prepare(store, config)
    started = time.perf_counter()
    execute(store, prepared, workers=workers)
    elapsed = time.perf_counter() - started
    n = store.count(prepared.run_id)
    store.close()
    return n / elapsed, n, elapsed


def store_cost(url: str, records: list[Record], batch: int) -> float:
    store = RunStore(url)
    run_id = store.create_run({}, policy="bench", total=len(records))
    started = time.perf_counter()
    for i in range(0, len(records), batch):
        store.add_episodes(run_id, records[i : i + batch])
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed / len(records) * 1000


def pg_schema_url(url: str) -> tuple[str, str]:
    import sqlalchemy as sa

    schema = f"bench_{secrets.token_hex(4)}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}", schema


def drop_schema(url: str, schema: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="scenario id or YAML (repeatable)")
    parser.add_argument("--seeds", type=int, default=200, help="seeds per task and profile")
    parser.add_argument("--policy", default="oracle")
    parser.add_argument("--faults", default="flaky-network", help="profile paired with none")
    parser.add_argument("--pg", default=os.environ.get("SIMFORGE_TEST_PG_URL"))
    args = parser.parse_args()
    scenarios = [normalise_ref(s) for s in (args.scenario or DEFAULT_SCENARIOS)]
    config = RunConfig(scenarios=scenarios, policy=args.policy, profiles=[args.faults],
                       seeds=args.seeds).with_baseline()
    cells = len(plan(config))
    print(f"matrix: {len(scenarios)} scenarios, {cells} episodes ({args.policy}, none + "
          f"{args.faults}, {args.seeds} seeds), cpus={os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for workers in (0, 1, 2):
            eps, n, elapsed = matrix_eps(config, workers, Path(tmp))
            results[workers] = eps
            label = "in-process" if workers == 0 else f"{workers} worker(s)"
            print(f"  {label:>12}: {eps:8.1f} episodes/s ({n} in {elapsed:.2f} s)")
        print(f"  scaling efficiency 1 -> 2 workers: {results[2] / (2 * results[1]):.0%}")

        the_plan = plan(config)
        records = run_cells(the_plan.cells, the_plan.refs, config.policy, True,
                            the_plan.profiles)
        size = sum(len(r["trajectory"] or "") for r in records) / len(records)
        print(f"store: {len(records)} records, trajectory {size / 1024:.1f} KiB on average")
        targets = [("sqlite", f"sqlite:///{Path(tmp) / 'store.db'}", None)]
        schema = None
        if args.pg:
            pg_url, schema = pg_schema_url(args.pg)
            targets.append(("postgresql", pg_url, schema))
        else:
            print("  postgresql: skipped (give --pg or $SIMFORGE_TEST_PG_URL)")
        try:
            for name, url, _ in targets:
                one = store_cost(url, records, 1)
                sixteen = store_cost(url, records, 16)
                print(f"  {name:>10}: {one:.3f} ms/episode (1 per transaction), "
                      f"{sixteen:.3f} ms/episode (16 per transaction)")
        finally:
            if schema is not None:
                drop_schema(args.pg, schema)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
