"""Fault-plan benchmark: the per-call overhead of a plan of 50 rules against no plan.

Run: ``python benchmarks/faults.py [--calls 30000] [--rounds 30] [--no-mix]``

Both sides run the same simulated CRUD read through ``Session.step`` in this process:

- *no plan*: the session has no fault profile;
- *50 rules, realistic*: rules spread over tool globs, kinds and windows as a real profile is
  (a handful target the read being measured, with low probabilities);
- *50 rules, all matching*: every rule targets the measured tool with a probability of 0.001,
  so each call makes 50 keyed draws: the worst case of a plan that size;
- *50 rules, realistic, never firing*: the realistic plan with every probability at 1e-9: the
  cost of deciding alone, without the work of the faults that fire.

The same plans are also measured on the kernel benchmark's realistic mix (short episodes of 5 to
30 reads and writes over 10 to 16 of 16 tools, a new session per episode, first calls included),
where the realistic plan's globs (``get_*``, ``update_*``, ...) match most calls.

The overhead is (time with plan / time without) - 1; the issue's target is under 20%.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel import MIX_PACK, MIX_ROWS, PACK, mix_plan

from simforge.faults import FaultProfile
from simforge.sim import CallRequest, Session

KINDS: list[dict[str, Any]] = [
    {"kind": "latency", "multiplier": 2.0},
    {"kind": "error_status", "status": 503},
    {"kind": "timeout"},
    {"kind": "connection_reset"},
    {"kind": "partial_result", "mode": "truncate_list"},
    {"kind": "stale_read", "lag": 30},
    {"kind": "schema_drift", "rename": {"email": "mail"}},
    {"kind": "prompt_injection"},
    {"kind": "write_lag", "lag": 10},
    {"kind": "silent_noop"},
]
GLOBS = ["list_*", "search_*", "create_*", "update_*", "delete_*", "*refund*", "get_*"]


def realistic_rules() -> list[dict[str, Any]]:
    rules = []
    for i in range(50):
        rule: dict[str, Any] = {
            "id": f"r{i}",
            "fault": KINDS[i % len(KINDS)],
            "target": {"tools": [GLOBS[i % len(GLOBS)]]},
            "probability": 0.01,
        }
        if i % 5 == 0:
            rule["when"] = {"start": 1e9}
        rules.append(rule)
    return rules


def matching_rules() -> list[dict[str, Any]]:
    return [
        {
            "id": f"m{i}",
            "fault": {"kind": "latency", "multiplier": 2.0},
            "target": {"tools": ["get_customer"]},
            "probability": 0.001,
        }
        for i in range(50)
    ]


def session(rules: list[dict[str, Any]] | None) -> Session:
    return Session(PACK.catalog, PACK.world(0, 10000), faults=profile_of(rules))


def chunk(sess: Session, start: int, n: int) -> float:
    """CPU seconds per call of ``n`` reads on ``sess``, continuing where its last chunk ended
    (the process's CPU time, not the wall clock: on a shared machine the time other processes
    take is not charged to whichever variant happened to be running)."""
    calls = [
        [CallRequest("get_customer", {"customer_id": f"C-{1 + i % 10000:05d}"})]
        for i in range(start, start + n)
    ]
    step = sess.step
    gc.collect()  # a collection one variant's garbage triggers is not charged to another
    gc.disable()
    try:
        t0 = time.process_time()
        for call in calls:
            step(call, think=0.0)
        return (time.process_time() - t0) / n
    finally:
        gc.enable()


def mix_chunk(profile: FaultProfile | None, episodes: list[list[CallRequest]],
              seed0: int) -> float:
    """CPU seconds per call of the mix's ``episodes``, a new session (and a restored world)
    per episode."""
    catalog, world = MIX_PACK.catalog, MIX_PACK.world(0, MIX_ROWS)
    snap = world.snapshot()
    calls = sum(len(e) for e in episodes)
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        for i, episode in enumerate(episodes):
            world.restore(snap)
            step = Session(catalog, world, seed=seed0 + i, faults=profile).step
            for request in episode:
                step([request], think=0.0)
        return (time.process_time() - t0) / calls
    finally:
        gc.enable()


def profile_of(rules: list[dict[str, Any]] | None) -> FaultProfile | None:
    if rules is None:
        return None
    return FaultProfile.model_validate({"name": "bench", "rules": rules})


VARIANTS: list[tuple[str, list[dict[str, Any]] | None]] = [
    ("no plan", None),
    ("50 rules, realistic, never firing",
     [{**r, "probability": 1e-9} for r in realistic_rules()]),
    ("50 rules, realistic", realistic_rules()),
    ("50 rules, all matching", matching_rules()),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30_000, help="calls per variant")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-mix", dest="mix", action="store_false",
                        help="skip the realistic mix")
    args = parser.parse_args()
    PACK.base(0, 10000)
    per = max(1, args.calls // args.rounds)
    sessions = {name: session(rules) for name, rules in VARIANTS}
    times: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
    # Many short chunks, the variants' order rotating each round, so that the machine's
    # drift hits every variant alike; each round's ratio is against that round's no-plan chunk.
    for r in range(args.rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for name, _ in order:
            times[name].append(chunk(sessions[name], r * per, per))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    report(times, f"{per} calls per chunk, {args.rounds} rounds")
    if args.mix:
        MIX_PACK.base(0, MIX_ROWS)
        plan = mix_plan(max(args.rounds, args.calls // 17))
        size = max(1, len(plan) // args.rounds)
        profiles = {name: profile_of(rules) for name, rules in VARIANTS}
        mixed: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
        for r in range(args.rounds):
            episodes = plan[(r * size) % len(plan):][:size]
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for name, _ in order:
                mixed[name].append(mix_chunk(profiles[name], episodes, r * size))
            print(f"mix round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        print()
        report(mixed, f"realistic mix: {size} episodes per chunk, {args.rounds} rounds")


def report(times: dict[str, list[float]], what: str) -> None:
    base = times["no plan"]
    print(f"{what}; medians, with the middle half of the per-round overheads\n")
    print("| plan | us/call | overhead vs no plan | middle half |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        ratios = sorted(t / b - 1 for t, b in zip(ts, base, strict=True))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"| {name} | {statistics.median(ts) * 1e6:.1f} | "
              f"{statistics.median(ratios) * 100:+.1f}% | "
              f"{q[0] * 100:+.1f}% to {q[2] * 100:+.1f}% |")


if __name__ == "__main__":
    main()
