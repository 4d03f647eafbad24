"""Whether two trees of simforge play the same trajectories: generated configurations (faults of
every built-in kind, capacity, timeouts, error models, background load, world events and drift,
time budgets) played through the kernel, one digest per configuration.

Record with the tree before a change, then compare with the tree after it (the mini pack is read
from this script's own checkout; ``PYTHONPATH`` chooses the simforge that plays)::

    PYTHONPATH=/tmp/before python scripts/same_trajectories.py record 0 3000 > /tmp/before.json
    PYTHONPATH=. python scripts/same_trajectories.py compare /tmp/before.json
    PYTHONPATH=. python scripts/same_trajectories.py show 12   # one configuration in full

A digest covers the trajectory JSON, every outcome (times, errors, results, wire faults, fault
records), the world after late and lagged writes land, the background counts, the world's
events and the log of every stream asked for with its simulated time (the order of draws at a
tie). A configuration that raises is compared by its error.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
sys.path.insert(0, str(FIXTURES / "packs"))

from simforge.faults import FaultProfile  # noqa: E402
from simforge.scenario import load_pack  # noqa: E402
from simforge.sim import CallRequest, Session  # noqa: E402
from simforge.tools import Constant, LogNormal  # noqa: E402
from simforge.tools.spec import ErrorModel  # noqa: E402
from simforge.trace import TaskSpec  # noqa: E402

FAULTS = [
    {"kind": "latency", "multiplier": 2.0},
    {"kind": "latency", "add": {"kind": "uniform", "low": 0.0, "high": 0.2}},
    {"kind": "latency", "multiplier": 0.0, "add": {"kind": "constant", "seconds": 0.05}},
    {"kind": "error_status", "status": 503},
    {"kind": "error_status", "status": 429},
    {"kind": "rate_limit", "burst": 1, "per_second": 2.0},
    {"kind": "timeout", "after": 0.1},
    {"kind": "timeout", "effect": "applied"},
    {"kind": "timeout", "after": 0.3, "effect": "applied"},
    {"kind": "connection_reset", "effect": "applied"},
    {"kind": "connection_reset"},
    {"kind": "empty_response"},
    {"kind": "partial_result", "mode": "missing_fields"},
    {"kind": "stale_read", "lag": 0.05},
    {"kind": "stale_read", "lag": 1.0},
    {"kind": "write_lag", "lag": 0.1},
    {"kind": "write_lag", "lag": 2.0},
    {"kind": "duplicate_effect"},
    {"kind": "silent_noop"},
    {"kind": "schema_drift", "rename": {"email": "mail"}},
    {"kind": "prompt_injection"},
    {"kind": "outage"},
    {"kind": "flapping", "up": 0.3, "down": 0.2},
    {"kind": "token_expiry", "after": 0, "lifetime": 0.5},
    {"kind": "permission_revoked"},
    {"kind": "clock_skew", "seconds": -86400},
    {"kind": "wrong_value", "field": "email"},
    {"kind": "body_patch", "patch": {"tier": "platinum", "balance": None}},
    {"kind": "long_output", "chars": 300},
    {"kind": "malformed_body"},
    {"kind": "truncated_body", "fraction": 0.5},
    {"kind": "garbage_body", "size": 32},
    {"kind": "slow_body", "bytes_per_second": 1000.0},
    {"kind": "slow_body", "bytes_per_second": 10.0},
    {"kind": "wrong_content_type"},
    {"kind": "header_patch", "set": {"Retry-After": "0"}},
    {"kind": "tool_rename"},
    {"kind": "distractor_tools", "count": 2},
    {"kind": "param_rename", "rename": {"customer_id": "id"}},
    {"kind": "tool_delayed", "until": 0.5},
]
TOOLS = [
    "get_customer",
    "list_customers",
    "upgrade_customer",
    "update_customer",
    "create_note",
    "list_notes",
    "explode",
]
LATENCIES = [
    Constant(seconds=0.0),
    Constant(seconds=0.005),
    Constant(seconds=0.05),
    Constant(seconds=0.1),
    LogNormal(median=0.08, sigma=0.8),
]


def _request(tool: str, i: int) -> CallRequest:
    cid = f"C-{i:04d}"
    args = {
        "get_customer": {"customer_id": cid},
        "list_customers": {"limit": i},
        "upgrade_customer": {"customer_id": cid},
        "update_customer": {"customer_id": cid, "balance": float(i)},
        "create_note": {"customer_id": cid, "text": "x"},
        "list_notes": {},
        "explode": {"customer_id": cid},
    }[tool]
    if i == 4 and tool == "get_customer":
        args = {"customer_id": 4}  # a bad argument
    return CallRequest(tool, args, None if i % 3 else f"id{i}")


def config(n: int) -> dict:
    r = random.Random(n)
    rules = []
    for i in range(r.choice([0, 1, 1, 2, 3, 4, 6])):
        rule = {
            "id": f"r{i}",
            "fault": r.choice(FAULTS),
            "probability": r.choice([1.0, 0.5, 0.2]),
            "target": {"tools": [r.choice(["*", "*customer*", "get_customer", "*note*"])]},
        }
        if r.random() < 0.2:
            rule["when"] = {"start": r.choice([0.0, 0.2]), "end": r.choice([None, 1.0])}
        if r.random() < 0.1:
            rule["when"] = {"on_call": r.randint(0, 2)}
        rules.append(rule)
    background = []
    if r.random() < 0.4:
        background.append(
            {
                "kind": "load",
                "tools": ["get_customer", "upgrade_customer"],
                "rate": r.choice([3.0, 8.0, 20.0]),
                "args": {"customer_id": {"entity": "Customer"}},
            }
        )
    if r.random() < 0.25:
        background.append(
            {
                "kind": "event",
                "tool": "update_customer",
                "entity": "Customer",
                "every": r.choice([0.2, 0.5]),
                "args": {"customer_id": "$id", "balance": 7.0},
            }
        )
    if r.random() < 0.2:
        background.append(
            {"kind": "drift", "entity": "Customer", "every": 0.4, "set": {"name": "drifted"}}
        )
    specs = {}
    for name in TOOLS:
        specs[name] = {
            "capacity": r.choice([None, None, 1, 2]),
            "latency": r.randrange(len(LATENCIES)),
            "errors": r.choice([0.0, 0.0, 0.3]),
        }
    steps = []
    for _ in range(r.randint(1, 8)):
        calls = [(r.choice(TOOLS), r.randint(1, 6)) for _ in range(r.randint(1, 6))]
        steps.append((calls, r.choice([0.0, 0.0, 0.05, 0.1, None])))
    return {
        "seed": r.randint(0, 10**6),
        "rules": rules,
        "background": background,
        "specs": specs,
        "steps": steps,
        "timeout": r.choice([None, None, 0.05, 0.1, 0.3]),
        "max_sim": r.choice([None, None, None, 0.5, 2.0]),
    }


class Draws:
    def __init__(self, streams, env):
        self.streams = streams
        self.env = env
        self.log = []

    def __call__(self, *key):
        self.log.append((self.env.now, key))
        return self.streams(*key)


def play(pack, c: dict) -> str:
    from simforge.sim.session import Budgets

    tools = dict(pack.catalog)
    for name, spec in c["specs"].items():
        tools[name] = tools[name].with_spec(
            capacity=spec["capacity"],
            latency=LATENCIES[spec["latency"]],
            errors=ErrorModel(rate=spec["errors"]) if spec["errors"] else ErrorModel(),
        )
    profile = FaultProfile.model_validate(
        {"name": "p", "rules": c["rules"], "background": c["background"]}
    )
    s = Session(
        tools,
        pack.world(),
        seed=c["seed"],
        faults=profile,
        call_timeout=c["timeout"],
        think_time=LogNormal(median=0.1, sigma=0.5),
        budgets=Budgets(max_sim_seconds=c["max_sim"]),
    )
    draws = s.streams = Draws(s.streams, s.env)  # type: ignore[assignment]
    seen = []
    for requests, think in c["steps"]:
        if s.done:
            break
        outs = s.step([_request(t, i) for t, i in requests], think=think)
        for o in outs:
            seen.append(
                (o.call_id, o.tool, o.started_at, o.ended_at, o.error, repr(o.result),
                 repr(o.wire), o.called_as, [f.model_dump() for f in o.faults])
            )
    if not s.done:
        s.finish("end")
    trajectory = s.recorder.trajectory(
        s, episode_id="e", scenario="mini/x-v1", task=TaskSpec(id="t")
    ).model_dump_json()
    s.env.run(until=s.env.now + 10.0)  # late writes and lagged writes land
    world = {e: sorted(map(repr, s.world.rows(e))) for e in s.world.schemas}
    return trajectory + repr((seen, world, s.now, s.pipeline.background_counts, draws.log,
                              s.world_events))


def main() -> None:
    pack = load_pack(str(FIXTURES / "packs" / "mini"))
    mode = sys.argv[1]
    if mode == "record":
        lo, hi = int(sys.argv[2]), int(sys.argv[3])
        out = {}
        for n in range(lo, hi):
            try:
                text = play(pack, config(n))
            except Exception as exc:  # the same failure on both sides is a match too
                text = f"raised {type(exc).__name__}: {exc}"
            out[n] = [hashlib.sha256(text.encode()).hexdigest(), len(text)]
        json.dump(out, sys.stdout)
    elif mode == "compare":
        base = json.loads(Path(sys.argv[2]).read_text())
        bad = []
        for key, (digest, _length) in base.items():
            try:
                text = play(pack, config(int(key)))
            except Exception as exc:
                text = f"raised {type(exc).__name__}: {exc}"
            if hashlib.sha256(text.encode()).hexdigest() != digest:
                bad.append(int(key))
        print(f"{len(base)} configurations, {len(bad)} differ: {bad[:20]}")
    elif mode == "show":
        print(play(pack, config(int(sys.argv[2]))))


if __name__ == "__main__":
    main()
