"""Start-up: CPU time of ``import simforge``, ``simforge.make(...)`` and the first reset, each
run in a fresh interpreter, for the shipped ``acme/refund-damaged-order-v1`` and for a pack
synthesized from tau-bench's gpt-4o airline trajectories, with a cold and a warm disk cache.

Run: ``python benchmarks/startup.py [--repeat 5] [--pack DIR] [--data ../shared/data]
[--tree DIR ...]`` (without ``--pack`` the airline pack is synthesized into a temporary folder
first). ``--tree`` (repeatable) measures those checkouts' simforge instead of this one's, taking
turns within each round (a before and after in one sitting); each tree has its own caches.

Each measurement is a subprocess (``python -c``) that times the three steps with
``time.process_time`` and prints them. *Cold*: ``SIMFORGE_CACHE`` points at an empty temporary
folder; *warm*: the same folder again, after the cold run filled it. The four cases (two
scenarios, cold and warm) take turns, ``--repeat`` rounds; the table gives the median and the
spread (min - max) per step.

Bytecode: a user's interpreter caches compiled modules (``__pycache__``), so by default each child
runs with bytecode writing on (``PYTHONDONTWRITEBYTECODE`` removed from its environment) into a
private ``PYTHONPYCACHEPREFIX`` folder filled by one untimed run first. ``--no-pyc`` instead
passes ``PYTHONDONTWRITEBYTECODE=1``, every module compiled from source in every child (what an
environment that sets it, like the CI sandboxes, pays).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from synth_calls import ACME, ROOT, airline_pack, options  # the same pack, the same options

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
t0 = time.process_time()
import simforge
t1 = time.process_time()
env = simforge.make({scenario!r})
t2 = time.process_time()
env.reset(seed=0)
t3 = time.process_time()
print(json.dumps({{"import": t1 - t0, "make": t2 - t1, "reset": t3 - t2}}))
"""


def measure(scenario: str, cache: Path, pycache: Path | None, root: Path = ROOT
            ) -> dict[str, float]:
    code = CHILD.format(root=str(root), scenario=scenario)
    env = {**os.environ, "SIMFORGE_CACHE": str(cache)}
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=root, check=True, timeout=300)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = options(__doc__ or "")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-pyc", action="store_true",
                        help="compile every module from source in every child")
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout to measure (repeatable; default: this one)")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.tree or [ROOT]]
    with tempfile.TemporaryDirectory() as tmp:
        pack = airline_pack(args.pack, args.data, tmp)
        scenarios = {"acme": ACME, "airline pack": str((pack / "scenario.yaml").resolve())}
        pycaches: dict[Path, Path | None] = {}
        for t, tree in enumerate(trees):
            pycaches[tree] = None if args.no_pyc else Path(tmp) / f"pycache-{t}"
            if pycaches[tree] is not None:  # untimed: fill the bytecode cache once
                for scenario in scenarios.values():
                    (Path(tmp) / f"cache-warmup-{t}").mkdir(exist_ok=True)
                    measure(scenario, Path(tmp) / f"cache-warmup-{t}", pycaches[tree], tree)
        results: dict[tuple[Path, str, str], list[dict[str, float]]] = {}
        for n in range(args.repeat):
            turn = trees[n % len(trees):] + trees[:n % len(trees)]
            for tree in turn:
                for name, scenario in scenarios.items():
                    cache = Path(tmp) / f"cache-{trees.index(tree)}-{name}-{n}"
                    cache.mkdir()
                    for state in ("cold", "warm"):
                        results.setdefault((tree, name, state), []).append(
                            measure(scenario, cache, pycaches[tree], tree))
    bytecode = "compiled from source each run" if args.no_pyc else "bytecode cached"
    print(f"CPU seconds, fresh interpreter each ({bytecode}), median (min - max) of "
          f"{args.repeat}; load average {os.getloadavg()[0]:.1f} at the end\n")
    tree_column = "tree | " if len(trees) > 1 else ""
    print(f"| {tree_column}scenario | disk cache | import simforge | make | first reset | "
          "make + reset |")
    print("|---|" + "---|" * (len(trees) > 1) + "---|---:|---:|---:|---:|")
    for (tree, name, state), runs in results.items():
        cells = []
        for step in ("import", "make", "reset"):
            cells.append(_spread([r[step] for r in runs]))
        cells.append(_spread([r["make"] + r["reset"] for r in runs]))
        where = f"{tree.name} | " if len(trees) > 1 else ""
        print(f"| {where}{name} | {state} | " + " | ".join(cells) + " |")
    if len(trees) > 1:  # the same round's figures, tree against the first
        print(f"\nper round, against {trees[0].name}, median (min - max):")
        for tree in trees[1:]:
            for name in scenarios:
                for state in ("cold", "warm"):
                    mine, base = results[(tree, name, state)], results[(trees[0], name, state)]
                    ratio = [a["make"] / b["make"] for a, b in zip(mine, base, strict=True)]
                    print(f"  {tree.name} {name} {state} make: {statistics.median(ratio):.2f}x "
                          f"({min(ratio):.2f} - {max(ratio):.2f})")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f} - {max(values):.3f})"


if __name__ == "__main__":
    main()
