"""Stress-runner benchmark: ``simforge stress``'s episodes/s at 1 and 2 workers against the same
episodes played in-process, the scaling from 1 to 2 workers, and CPU time per episode.

Run: ``python benchmarks/stress.py [--runs 5] [--seeds 100] [--scenario ID ...] [--policy oracle]
[--faults flaky-network] [--store sqlite|postgresql] [--cold]``

Contenders, each run ``--runs`` times, interleaved (the order rotating every run), in this one
process, so that every run sees the machine as the others around it do:

- *in-process*: the plan's cells played one after another with ``play_episode`` on environments
  loaded beforehand: no records, no store, no pool; the kernel's pace, the baseline;
- *1 worker*, *2 workers*: ``simforge stress``'s own path (``prepare`` then ``execute``: the
  local pool, every episode committed to a fresh store), timed from the first cell handed out to
  the last episode committed, the pool's start-up included (workers are forked from this
  process, with the environments already loaded).

Figures: episodes/s (wall clock) with the median and the range over runs; per core, a pool's
episodes/s divided by its workers and by the in-process figure of the same run; the scaling
(2 workers / 1 worker, per run); and CPU milliseconds per episode: this process (which plans,
dispatches and writes the store) and the workers, from ``getrusage``. On a machine other work
shares, wall-clock scaling measures the neighbours as much as the runner; CPU per episode does
not.

``--cold`` also times what a run pays before its first episode, each in a fresh interpreter:
importing simforge and loading the plan's scenarios (``plan``), then building each
environment (``make``) and its first reset. A forked worker inherits all of it; a worker
started any other way (``forkserver`` on macOS, a Ray worker) pays it again.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runs import DEFAULT_SCENARIOS, drop_schema, pg_schema_url


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def in_process(the_plan: Any, policy: str) -> dict[str, float]:
    from simforge.runs.episode import play_episode
    from simforge.runs.worker import _env, _policy

    agent = _policy(policy)
    cells = the_plan.cells
    jobs = [(_env(the_plan.refs[c.scenario]), c) for c in cells]
    cpu0, t0 = time.process_time(), time.perf_counter()
    for env, c in jobs:
        play_episode(env, agent, seed=c.seed, task=c.task,
                     faults=the_plan.profiles.get(c.profile) or c.profile,
                     policy_seed=c.policy_seed)
    wall = time.perf_counter() - t0
    return {"eps": len(cells) / wall, "parent_ms": (time.process_time() - cpu0) / len(cells) * 1e3,
            "workers_ms": 0.0, "wall": wall}


def stress(config: Any, workers: int, url: str) -> dict[str, float]:
    from simforge.runs.runner import execute, prepare
    from simforge.runs.store import RunStore

    store = RunStore(url)
    prepared = prepare(store, config)
    kids0, cpu0, t0 = children_cpu(), time.process_time(), time.perf_counter()
    execute(store, prepared, workers=workers)
    wall = time.perf_counter() - t0
    parent, kids = time.process_time() - cpu0, children_cpu() - kids0
    n = store.count(prepared.run_id)
    store.close()
    assert n == len(prepared.plan), (n, len(prepared.plan))
    return {"eps": n / wall, "parent_ms": parent / n * 1e3, "workers_ms": kids / n * 1e3,
            "wall": wall}


COLD = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import simforge
from simforge.runs.matrix import RunConfig, plan
from simforge.runs.worker import _env
config = RunConfig.model_validate(json.loads(sys.argv[1]))
the_plan = plan(config)
out = {"plan": (time.perf_counter() - t0, time.process_time() - c0)}
for sid, ref in the_plan.refs.items():
    t0, c0 = time.perf_counter(), time.process_time()
    env = _env(ref)
    made = (time.perf_counter() - t0, time.process_time() - c0)
    env.reset(seed=0)
    out[sid] = (made, (time.perf_counter() - t0, time.process_time() - c0))
print(json.dumps(out))
"""


def cold(config: Any) -> None:
    result = subprocess.run([sys.executable, "-c", COLD, config.model_dump_json()],
                            capture_output=True, text=True, check=True, env=os.environ)
    out = json.loads(result.stdout)
    wall, cpu = out.pop("plan")
    print("\ncold start, a fresh interpreter (wall s / CPU s):")
    print(f"  import simforge + plan (loads the scenarios): {wall:.2f} / {cpu:.2f}")
    for sid, (made, reset) in out.items():
        print(f"  make {sid:<34} {made[0]:.2f} / {made[1]:.2f}, "
              f"+ first reset {reset[0] - made[0]:.3f} / {reset[1] - made[1]:.3f}")


def store_url(kind: str, tmp: Path, pg: str | None) -> str:
    """A fresh SQLite file, or the PostgreSQL schema made for this benchmark."""
    if kind == "sqlite":
        return f"sqlite:///{tmp / f'stress-{secrets.token_hex(4)}.db'}"
    assert pg is not None
    return pg


def cells(values: list[float], fmt: str) -> str:
    """``median | min-max`` of ``values``."""
    mid, lo, hi = (fmt.format(v) for v in (statistics.median(values), min(values), max(values)))
    return f"{mid} | {lo}-{hi}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="scenario id or YAML (repeatable)")
    parser.add_argument("--seeds", type=int, default=100, help="seeds per task and profile")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--policy", default="oracle")
    parser.add_argument("--faults", default="flaky-network", help="profile paired with none")
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--cold", action="store_true", help="also time a fresh process's start")
    args = parser.parse_args()

    from simforge.runs.matrix import RunConfig, normalise_ref, plan
    from simforge.runs.worker import warm_env

    scenarios = [normalise_ref(s) for s in (args.scenario or DEFAULT_SCENARIOS)]
    config = RunConfig(scenarios=scenarios, policy=args.policy, profiles=[args.faults],
                       seeds=args.seeds).with_baseline()
    the_plan = plan(config)
    for ref in the_plan.refs.values():
        warm_env(ref)
    print(f"{len(scenarios)} scenarios, {len(the_plan)} episodes a run ({args.policy}, none + "
          f"{args.faults}, {args.seeds} seeds), {args.store}, cpus={os.cpu_count()}")
    contenders = ["in-process", "1 worker", "2 workers"]
    results: dict[str, list[dict[str, float]]] = {c: [] for c in contenders}
    pg = schema = None
    if args.store == "postgresql":
        pg = os.environ.get("SIMFORGE_TEST_PG_URL")
        if not pg:
            sys.exit("--store postgresql needs $SIMFORGE_TEST_PG_URL")
        pg, schema = pg_schema_url(pg)
    with tempfile.TemporaryDirectory() as tmp:
        in_process(the_plan, args.policy)  # warm: the first episodes of each task cost more
        for r in range(args.runs):
            order = contenders[r % 3:] + contenders[:r % 3]
            for name in order:
                if name == "in-process":
                    got = in_process(the_plan, args.policy)
                else:
                    got = stress(config, int(name[0]), store_url(args.store, Path(tmp), pg))
                results[name].append(got)
            line = ", ".join(f"{c} {results[c][-1]['eps']:,.0f}" for c in contenders)
            print(f"run {r + 1}/{args.runs}: {line} episodes/s", file=sys.stderr, flush=True)
    if schema is not None:
        drop_schema(os.environ["SIMFORGE_TEST_PG_URL"], schema)
    base = [x["eps"] for x in results["in-process"]]
    print(f"\nmedian and range over {args.runs} runs:\n")
    print("| setup | episodes/s | range | per core / in-process | range | CPU ms/episode |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in contenders:
        eps = [x["eps"] for x in results[name]]
        width = 1 if name == "in-process" else int(name[0])
        share = [e / width / b for e, b in zip(eps, base, strict=True)]
        cpu = [x["parent_ms"] + x["workers_ms"] for x in results[name]]
        print(f"| {name} | {cells(eps, '{:,.0f}')} | {cells(share, '{:.2f}')} | "
              f"{statistics.median(cpu):.2f} |")
    scaling = [two["eps"] / one["eps"]
               for one, two in zip(results["1 worker"], results["2 workers"], strict=True)]
    print(f"\nscaling 1 -> 2 workers: median {statistics.median(scaling):.2f}x "
          f"(range {min(scaling):.2f}x-{max(scaling):.2f}x)")
    print("CPU ms per episode, median (this process + workers):")
    for name in contenders:
        parent = statistics.median(x["parent_ms"] for x in results[name])
        kids = statistics.median(x["workers_ms"] for x in results[name])
        print(f"  {name:>10}: {parent:.3f} + {kids:.3f}")
    if args.cold:
        cold(config)


if __name__ == "__main__":
    main()
