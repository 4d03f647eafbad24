"""Two trees of simforge against each other on the call path: a change's before and after.

Run: ``python benchmarks/trees.py BEFORE AFTER [--rounds 20]`` (each a checkout's root, e.g. main
exported with ``git archive HEAD | tar -x -C /tmp/before``).

Each round runs one fresh interpreter per tree (the order alternating), with that tree on
``PYTHONPATH`` and its own ``benchmarks/`` on ``sys.path``; each interpreter measures, six times
over in rotating order, simpy's process per call (``kernel.bare_simpy``, the in-process
baseline) and 1,000 ``Session.step`` reads of a fresh session four ways: no fault plan (the
lean call), the realistic plan of 50 rules (``faults.realistic_rules``), a latency rule that
fires on every call (every call a staged call), and no plan with a lognormal latency drawn from
the tool's stream on every call (``drawn``: the kernel benchmark's tools have constant
latencies); and the kernel benchmark's realistic mix (60 short episodes, a new session each,
``faults.mix_chunk``) with no plan, with the realistic plan, and with lognormal latencies. It
prints the medians of CPU time per call (``time.process_time``, the collector off while timing)
and the ratio of AFTER to BEFORE per round, with the range over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import gc, json, statistics, sys, time
sys.path.insert(0, "benchmarks")
import faults
from faults import mix_chunk, profile_of, realistic_rules
from kernel import MIX_PACK, MIX_ROWS, PACK, bare_simpy, mix_plan
from simforge.sim import CallRequest, Session
sys.path.append(HERE)  # drawn.py from this script's tree, after the tree's own benchmarks
from drawn import DRAWN_MIX, DRAWN_PACK

EVERY_CALL = [{"id": "slow", "fault": {"kind": "latency", "multiplier": 2.0},
               "target": {"tools": ["get_customer"]}}]
PROFILES = {"lean": None, "realistic": profile_of(realistic_rules()),
            "staged": profile_of(EVERY_CALL)}
CALLS = [[CallRequest("get_customer", {"customer_id": f"C-{1 + i % 10000:05d}"})]
         for i in range(1000)]

def reads(profile, pack=PACK):
    step = Session(pack.catalog, pack.world(0, 10000), faults=profile).step
    gc.collect()
    gc.disable()
    t0 = time.process_time()
    for call in CALLS:
        step(call, think=0.0)
    elapsed = time.process_time() - t0
    gc.enable()
    return elapsed / len(CALLS)

MIX_PACK.base(0, MIX_ROWS)
EPISODES = mix_plan(60)
MIXES = {"mix lean": None, "mix realistic": PROFILES["realistic"]}

def drawn_mix():
    faults.MIX_PACK = DRAWN_MIX  # mix_chunk plays faults.MIX_PACK's catalog
    try:
        return mix_chunk(None, EPISODES, 0)
    finally:
        faults.MIX_PACK = MIX_PACK

def measure(name):
    if name == "simpy":
        return bare_simpy(1000)
    if name in MIXES:
        return mix_chunk(MIXES[name], EPISODES, 0)
    if name == "drawn":
        return reads(None, DRAWN_PACK)
    if name == "mix drawn":
        return drawn_mix()
    return reads(PROFILES[name])

reads(None)
reads(PROFILES["staged"])
reads(None, DRAWN_PACK)
mix_chunk(MIXES["mix realistic"], EPISODES[:10], 0)
drawn_mix()
times = {"simpy": [], **{name: [] for name in PROFILES}, **{name: [] for name in MIXES},
         "drawn": [], "mix drawn": []}
for r in range(6):
    names = list(times)
    for name in names[r % len(names):] + names[:r % len(names)]:
        times[name].append(measure(name))
print(json.dumps({name: statistics.median(v) for name, v in times.items()}))
"""


def measure(root: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": root}
    child = CHILD.replace("HERE", repr(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", child], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    trees = {"before": args.before, "after": args.after}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for r in range(args.rounds):
        for name in list(trees) if r % 2 == 0 else list(reversed(trees)):
            runs[name].append(measure(trees[name]))
    print(f"CPU time per call; median (range) over {args.rounds} rounds\n")
    print("| call | before us | after us | after / before | before x simpy | after x simpy |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in ("lean", "realistic", "staged", "drawn", "mix lean", "mix realistic",
                 "mix drawn"):
        cells = []
        for name in trees:
            us = [run[kind] * 1e6 for run in runs[name]]
            cells.append(f"{statistics.median(us):.2f}")
        pairs = [b[kind] / a[kind] for a, b in zip(runs["before"], runs["after"], strict=True)]
        cells.append(f"{statistics.median(pairs):.3f} ({min(pairs):.2f}-{max(pairs):.2f})")
        for name in trees:
            x = [run[kind] / run["simpy"] for run in runs[name]]
            cells.append(f"{statistics.median(x):.2f} ({min(x):.2f}-{max(x):.2f})")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    for plan, lean, where in (("realistic", "lean", "sessions of 1,000 reads"),
                              ("mix realistic", "mix lean", "the realistic mix")):
        for name in trees:
            over = [100 * (run[plan] / run[lean] - 1) for run in runs[name]]
            print(f"\nrealistic plan overhead on {where}, {name}: {statistics.median(over):+.1f}% "
                  f"({min(over):+.1f}% to {max(over):+.1f}%)", end="")
    print()


if __name__ == "__main__":
    main()
