"""Stress-runner benchmark: ``simforge stress``'s episodes/s at 1 and 2 workers against the same
episodes played in-process, the scaling from 1 to 2 workers, and CPU time per episode.

Run: ``python benchmarks/stress.py [--runs 5] [--seeds 100] [--scenario ID ...] [--policy oracle]
[--faults flaky-network] [--store sqlite|postgresql] [--workers 1,2] [--tree DIR ...] [--cold]``

Contenders, each run ``--runs`` times, interleaved (the order rotating every run), in this one
process, so that every run sees the machine as the others around it do:

- *in-process*: the plan's cells played one after another with ``play_episode`` on environments
  loaded beforehand: no records, no store, no pool; the kernel's pace, the baseline;
- *1 worker*, *2 workers*: ``simforge stress``'s own path (``prepare`` then ``execute``: the
  local pool, every episode committed to a fresh store), timed from the first cell handed out to
  the last episode committed, the pool's start-up included (workers are forked from this
  process, with the environments already loaded).
- *turns*: chunks taking turns between this process (played only, as *in-process*) and one
  forked pool worker (played and stored, as ``stress`` does), so that the two costs per episode
  are measured under the same second's load (see :func:`alternating`).

Figures: episodes/s (wall clock) with the median and the range over runs; per core, a pool's
episodes/s divided by its workers and by the in-process figure of the same run; the scaling
(2 workers / 1 worker, per run); and CPU milliseconds per episode: this process (which plans,
dispatches and writes the store) and the workers, from ``getrusage``. On a machine other work
shares, wall-clock scaling measures the neighbours as much as the runner; CPU per episode does
not, so the per-core figure is also given by CPU: in-process CPU per episode over one worker's
(and over one worker's plus the runner's), per run.

``--tree DIR`` (repeatable) measures those checkouts' simforge instead of this one's: each run,
every tree takes its turn (the order rotating) in a fresh interpreter of its own, all its
contenders in that turn, so that a before and an after share the sitting and its load.

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


def timed_store(*args: Any) -> tuple[float, float]:
    """``store_cells(*args)`` in a pool worker: this process's CPU clock before and after."""
    from simforge.runs.worker import store_cells

    start = time.process_time()
    store_cells(*args)
    return start, time.process_time()


def alternating(the_plan: Any, config: Any, url: str) -> dict[str, float]:
    """Chunk by chunk, taking turns: a chunk played in this process (``play_episode``, as
    *in-process*), then the next handed to one forked pool worker that plays and stores it
    (``store_cells``, as ``stress`` does). Both see the machine's load of the same second, so
    the per-core figure does not measure how the load moved between two whole runs. The
    worker's CPU is its clock from its first chunk's start to its last chunk's end: the chunks,
    their pickling both ways, and nothing before."""
    from concurrent.futures import ProcessPoolExecutor

    from simforge.runs.episode import play_episode
    from simforge.runs.local import _context, _init_worker
    from simforge.runs.matrix import chunks
    from simforge.runs.runner import prepare
    from simforge.runs.store import RunStore
    from simforge.runs.worker import _env, _policy

    store = RunStore(url)
    prepared = prepare(store, config)
    store.upgrade()
    agent, refs, profiles = _policy(config.policy), the_plan.refs, the_plan.profiles
    parts = chunks(the_plan.cells, 1)
    mine, played, stored = 0.0, 0, 0
    clocks: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=1, mp_context=_context(refs, None),
                             initializer=_init_worker, initargs=(os.getpid(),)) as pool:
        pool.submit(os.getpid).result()  # forked before the first turn
        for i, part in enumerate(parts):
            if i % 2 == 0:
                cpu0 = time.thread_time()
                for c in part:
                    play_episode(_env(refs[c.scenario]), agent, seed=c.seed, task=c.task,
                                 faults=profiles.get(c.profile) or c.profile,
                                 policy_seed=c.policy_seed)
                mine += time.thread_time() - cpu0
                played += len(part)
            else:
                clocks.append(pool.submit(timed_store, part, refs, config.policy, True,
                                          profiles, None, store.url, prepared.run_id).result())
                stored += len(part)
    wall = time.perf_counter() - t0
    n = store.count(prepared.run_id)
    store.close()
    assert n == stored, (n, stored)
    return {"eps": (played + stored) / wall, "parent_ms": mine / played * 1e3,
            "workers_ms": (clocks[-1][1] - clocks[0][0]) / stored * 1e3, "wall": wall}


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


def cpu_share(run: dict[str, dict[str, float]], runner: bool = False) -> float:
    """In-process CPU per episode over one worker's (plus the runner's, with ``runner``)."""
    one = run["1 worker"]
    return run["in-process"]["parent_ms"] / (one["workers_ms"] + runner * one["parent_ms"])


def turn_share(run: dict[str, dict[str, float]], runner: bool = False) -> float:
    """The same, chunk by chunk taking turns (:func:`alternating`); the runner's CPU per
    episode is the 1-worker run's."""
    turns = run["turns"]
    return turns["parent_ms"] / (turns["workers_ms"] + runner * run["1 worker"]["parent_ms"])


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
    parser.add_argument("--workers", default="1,2", help="pool sizes to run (1 always runs)")
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout to measure, in a fresh interpreter (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the runs as one JSON line")
    parser.add_argument("--cold", action="store_true", help="also time a fresh process's start")
    args = parser.parse_args()
    sizes = sorted({1, *(int(w) for w in args.workers.split(","))})
    contenders = ["in-process", *(f"{w} worker{'s' * (w > 1)}" for w in sizes), "turns"]
    load = [os.getloadavg()[0]]
    if args.tree:
        trees = [t.resolve() for t in args.tree]
        by_tree: dict[Path, list[dict[str, dict[str, float]]]] = {t: [] for t in trees}
        for r in range(args.runs):
            for tree in trees[r % len(trees):] + trees[:r % len(trees)]:
                by_tree[tree] += one_tree(tree, args)
                load.append(os.getloadavg()[0])
                print(f"run {r + 1}/{args.runs} {tree.name}: per core by CPU "
                      f"{cpu_share(by_tree[tree][-1]):.2f}, taking turns "
                      f"{turn_share(by_tree[tree][-1]):.2f}", file=sys.stderr, flush=True)
        print(f"load average (1 min) {min(load):.1f}-{max(load):.1f} over the sitting")
        for tree in trees:
            print(f"\n### {tree.name} ({tree})")
            summary(by_tree[tree], contenders)
        return
    runs = measure(args, contenders)
    if args.json:
        import simforge

        print(json.dumps({"simforge": str(Path(simforge.__file__).parent.parent), "runs": runs}))
        return
    load.append(os.getloadavg()[0])
    print(f"load average (1 min) {min(load):.1f}-{max(load):.1f} over the sitting")
    summary(runs, contenders)
    if args.cold:
        from simforge.runs.matrix import RunConfig, normalise_ref

        scenarios = [normalise_ref(s) for s in (args.scenario or DEFAULT_SCENARIOS)]
        cold(RunConfig(scenarios=scenarios, policy=args.policy, profiles=[args.faults],
                       seeds=args.seeds).with_baseline())


def one_tree(tree: Path, args: argparse.Namespace) -> list[dict[str, dict[str, float]]]:
    """One run of every contender on ``tree``'s simforge, in a fresh interpreter."""
    command = [sys.executable, str(Path(__file__).resolve()), "--runs", "1", "--json", "--seeds", str(args.seeds),
               "--policy", args.policy, "--faults", args.faults, "--store", args.store,
               "--workers", args.workers]
    for scenario in args.scenario or []:
        command += ["--scenario", scenario]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree,
                          check=False)
    if done.returncode:
        sys.exit(f"{tree}: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(out["simforge"]) != tree:
        sys.exit(f"{tree}: the run imported simforge from {out['simforge']}")
    runs: list[dict[str, dict[str, float]]] = out["runs"]
    return runs


def measure(args: argparse.Namespace, contenders: list[str]) -> list[dict[str, dict[str, float]]]:
    """``args.runs`` runs of every contender, the order rotating; per run, per contender."""
    from simforge.runs.matrix import RunConfig, normalise_ref, plan
    from simforge.runs.worker import warm_env

    scenarios = [normalise_ref(s) for s in (args.scenario or DEFAULT_SCENARIOS)]
    config = RunConfig(scenarios=scenarios, policy=args.policy, profiles=[args.faults],
                       seeds=args.seeds).with_baseline()
    the_plan = plan(config)
    for ref in the_plan.refs.values():
        warm_env(ref)
    print(f"{len(scenarios)} scenarios, {len(the_plan)} episodes a run ({args.policy}, none + "
          f"{args.faults}, {args.seeds} seeds), {args.store}, cpus={os.cpu_count()}",
          file=sys.stderr if args.json else sys.stdout)
    runs: list[dict[str, dict[str, float]]] = []
    pg = schema = None
    if args.store == "postgresql":
        pg = os.environ.get("SIMFORGE_TEST_PG_URL")
        if not pg:
            sys.exit("--store postgresql needs $SIMFORGE_TEST_PG_URL")
        pg, schema = pg_schema_url(pg)
    with tempfile.TemporaryDirectory() as tmp:
        in_process(the_plan, args.policy)  # warm: the first episodes of each task cost more
        for r in range(args.runs):
            run: dict[str, dict[str, float]] = {}
            for name in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
                if name == "in-process":
                    run[name] = in_process(the_plan, args.policy)
                elif name == "turns":
                    run[name] = alternating(the_plan, config,
                                            store_url(args.store, Path(tmp), pg))
                else:
                    workers = int(name.split()[0])
                    run[name] = stress(config, workers, store_url(args.store, Path(tmp), pg))
            runs.append(run)
            line = ", ".join(f"{c} {run[c]['eps']:,.0f}" for c in contenders)
            print(f"run {r + 1}/{args.runs}: {line} episodes/s; per core by CPU "
                  f"{cpu_share(run):.2f}, taking turns {turn_share(run):.2f}",
                  file=sys.stderr, flush=True)
    if schema is not None:
        drop_schema(os.environ["SIMFORGE_TEST_PG_URL"], schema)
    return runs


def summary(runs: list[dict[str, dict[str, float]]], contenders: list[str]) -> None:
    base = [run["in-process"]["eps"] for run in runs]
    print(f"\nmedian and range over {len(runs)} runs:\n")
    print("| setup | episodes/s | range | per core / in-process | range | CPU ms/episode |")
    print("|---|---:|---:|---:|---:|---:|")
    pools = [name for name in contenders if name != "turns"]
    for name in pools:
        eps = [run[name]["eps"] for run in runs]
        width = 1 if name == "in-process" else int(name.split()[0])
        share = [e / width / b for e, b in zip(eps, base, strict=True)]
        cpu = [run[name]["parent_ms"] + run[name]["workers_ms"] for run in runs]
        print(f"| {name} | {cells(eps, '{:,.0f}')} | {cells(share, '{:.2f}')} | "
              f"{statistics.median(cpu):.2f} |")
    if "2 workers" in contenders:
        scaling = [run["2 workers"]["eps"] / run["1 worker"]["eps"] for run in runs]
        print(f"\nscaling 1 -> 2 workers: median {statistics.median(scaling):.2f}x "
              f"(range {min(scaling):.2f}x-{max(scaling):.2f}x)")
    print("per core by CPU, in-process ms / 1 worker's ms: "
          f"{cells([cpu_share(run) for run in runs], '{:.2f}').replace(' | ', ', range ')}; "
          "with the runner's ms: "
          f"{cells([cpu_share(run, True) for run in runs], '{:.2f}').replace(' | ', ', range ')}")
    print("per core taking turns chunk by chunk, in-process ms / the worker's ms: "
          f"{cells([turn_share(run) for run in runs], '{:.2f}').replace(' | ', ', range ')}; "
          "with the runner's ms: "
          f"{cells([turn_share(run, True) for run in runs], '{:.2f}').replace(' | ', ', range ')}")
    print("CPU ms per episode, median and range (this process + workers; taking turns: "
          "playing in this process, and the worker):")
    for name in contenders:
        parent = [run[name]["parent_ms"] for run in runs]
        kids = [run[name]["workers_ms"] for run in runs]
        print(f"  {name:>10}: {cells(parent, '{:.3f}')} + {cells(kids, '{:.3f}')}")


if __name__ == "__main__":
    main()
