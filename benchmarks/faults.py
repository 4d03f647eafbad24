"""Fault-plan benchmark: the per-call overhead of a plan of 50 rules against no plan.

Run: ``python benchmarks/faults.py [--calls 30000] [--repeat 5]``

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


def per_call(rules: list[dict[str, Any]] | None, n: int) -> float:
    profile = (
        FaultProfile.model_validate({"name": "bench", "rules": rules})
        if rules is not None
        else None
    )
    session = Session(PACK.catalog, PACK.world(0, 10000), faults=profile)
    calls = [
        [CallRequest("get_customer", {"customer_id": f"C-{1 + i % 10000:05d}"})] for i in range(n)
    ]
    step = session.step
    t0 = time.perf_counter()
    for call in calls:
        step(call, think=0.0)
    return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    PACK.base(0, 10000)
    results = {}
    # interleave the variants so that drift in machine speed hits all of them alike
    for _ in range(args.repeat):
        for name, rules in (
            ("no plan", None),
            (
                "50 rules, realistic, never firing",
                [{**r, "probability": 1e-9} for r in realistic_rules()],
            ),
            ("50 rules, realistic", realistic_rules()),
            ("50 rules, all matching", matching_rules()),
        ):
            t = per_call(rules, args.calls)
            results[name] = min(results.get(name, t), t)
    base = results["no plan"]
    print(f"calls per measurement: {args.calls}, best of {args.repeat}\n")
    print("| plan | us/call | overhead vs no plan |")
    print("|---|---:|---:|")
    for name, t in results.items():
        print(f"| {name} | {t * 1e6:.1f} | {(t / base - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
