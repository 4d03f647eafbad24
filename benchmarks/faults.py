"""Fault-plan benchmark: the per-call overhead of a plan of 50 rules against no plan.

Run: ``python benchmarks/faults.py [--calls 30000] [--rounds 30]``

Both sides run the same simulated CRUD read through ``Session.step`` in this process:

- *no plan*: the session has no fault profile;
- *50 rules, realistic*: rules spread over tool globs, kinds and windows as a real profile is
  (a handful target the read being measured, with low probabilities);
- *50 rules, all matching*: every rule targets the measured tool with a probability of 0.001,
  so each call makes 50 keyed draws: the worst case of a plan that size;
- *50 rules, realistic, never firing*: the realistic plan with every probability at 1e-9: the
  cost of deciding alone, without the work of the faults that fire.

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

from kernel import PACK

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
    profile = (
        FaultProfile.model_validate({"name": "bench", "rules": rules})
        if rules is not None
        else None
    )
    return Session(PACK.catalog, PACK.world(0, 10000), faults=profile)


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
    base = times["no plan"]
    print(f"{per} calls per chunk, {args.rounds} rounds; medians, with the middle half of the "
          "per-round overheads\n")
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
