"""Kernel benchmark: simulated tool calls per second against bare simpy, and reset cost.

Run: ``python benchmarks/kernel.py [--calls 50000] [--repeat 5]``

Every figure is measured in this process, next to its baseline:

- *bare simpy cycle*: per call, a process that requests a Resource, waits a timeout and
  releases, driven by ``env.run(until=process)`` - the same timeouts, resource requests and
  driving pattern as a simulated call, with no tool, world or recorder;
- *Session.step*: one CRUD read (``get_customer``) per step through the kernel: argument
  validation, capacity, latency draw from the tool's stream, handler against the versioned
  world, result copy, recording;
- *env.step*: the same read through the Gymnasium-style API (action parsing, observation);
- *episodes/s*: reset + 20 reads + final answer + scoring, per core;
- *reset*: ``env.reset()`` of a task whose world holds 10,000 entities, after an episode that
  changed 20 of them; and ``World.restore`` of a snapshot.

Ratios (simforge time / baseline time) are what to compare across machines.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import simpy
from sqlmodel import Field

from simforge.env import make
from simforge.sim import CallRequest, Session
from simforge.tools import Constant, Pack, crud_tools
from simforge.world import EntitySchema, entity, entity_base

Base = entity_base()


@entity(id_prefix="C-", id_width=5)
class Customer(Base, table=True):
    id: str = Field(primary_key=True)
    name: str
    email: str
    tier: str = "standard"
    balance: float = 0.0


def _seed(seed: int, scale: int) -> dict[str, list[dict[str, object]]]:
    return {
        "Customer": [
            {
                "id": f"C-{i:05d}",
                "name": f"Customer {i}",
                "email": f"c{i}@example.com",
                "balance": float(i % 97),
            }
            for i in range(1, scale + 1)
        ]
    }


PACK = Pack(
    name="bench",
    description="benchmark pack",
    entities=[Customer],
    tools=crud_tools(EntitySchema.of(Customer), read_latency=Constant(seconds=0.05), capacity=64),
    seed=_seed,
)

SCENARIO = """
id: bench/read-v1
pack: {pack}
world: {{seed: 0, size: 10000}}
budgets: {{max_steps: 1000000, max_sim_seconds: 1.0e12}}
think_time: {{kind: constant, seconds: 0.0}}
call_timeout: null
tasks:
  - id: read
    instruction: Read customers.
    expected:
      outputs: ["done"]
    oracle:
      - answer: done
"""


def best_of(repeat: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(repeat))


def bare_simpy(n: int) -> float:
    env = simpy.Environment()
    res = simpy.Resource(env, capacity=64)

    def call() -> simpy.events.ProcessGenerator:
        with res.request() as req:
            yield req
            yield env.timeout(0.05)

    t0 = time.perf_counter()
    for _ in range(n):
        env.run(until=env.process(call()))
    return (time.perf_counter() - t0) / n


EPISODE = 1000
"""Calls per session in the per-call measurements: a long episode, not an endless one (a session
keeps every call it recorded, so per-call cost creeps up over tens of thousands of calls)."""


def session_step(n: int) -> float:
    ids = [f"C-{1 + i % 10000:05d}" for i in range(n)]
    elapsed = 0.0
    for start in range(0, n, EPISODE):
        step = Session(PACK.catalog, PACK.world(0, 10000)).step
        t0 = time.perf_counter()
        for cid in ids[start : start + EPISODE]:
            step([CallRequest("get_customer", {"customer_id": cid})], think=0.0)
        elapsed += time.perf_counter() - t0
    return elapsed / n


def env_step(env_path: Path, n: int) -> float:
    env = make(str(env_path))
    actions = [
        {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": f"C-{1 + i % 10000:05d}"}}]}
        for i in range(n)
    ]
    elapsed = 0.0
    for start in range(0, n, EPISODE):
        env.reset(seed=start)
        t0 = time.perf_counter()
        for action in actions[start : start + EPISODE]:
            env.step(action)
        elapsed += time.perf_counter() - t0
    return elapsed / n


def episodes(env_path: Path, n: int) -> float:
    env = make(str(env_path))
    reads = [
        {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": f"C-{1 + i:05d}"}}]}
        for i in range(20)
    ]
    t0 = time.perf_counter()
    for seed in range(n):
        env.reset(seed=seed)
        for action in reads:
            env.step(action)
        env.step({"final_answer": "done"})
    return (time.perf_counter() - t0) / n


def reset_after_writes(env_path: Path, n: int) -> float:
    env = make(str(env_path))
    total = 0.0
    for seed in range(n):
        env.reset(seed=seed)
        for i in range(20):
            env.step(
                [
                    {
                        "name": "update_customer",
                        "arguments": {"customer_id": f"C-{1 + i:05d}", "tier": "gold"},
                    }
                ]
            )
        t0 = time.perf_counter()
        env.reset(seed=seed)
        total += time.perf_counter() - t0
    return total / n


def world_restore(n: int) -> float:
    world = PACK.world(0, 10000)
    snap = world.snapshot()
    total = 0.0
    for _ in range(n):
        for i in range(20):
            world.update("Customer", f"C-{1 + i:05d}", {"tier": "gold"}, now=float(i))
        t0 = time.perf_counter()
        world.restore(snap)
        total += time.perf_counter() - t0
    return total / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, r = args.calls, args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        pack_dir = Path(tmp) / "bench"
        pack_dir.mkdir()
        (pack_dir / "pack.py").write_text(
            f"from importlib import import_module\nPACK = import_module({__name__!r}).PACK\n"
        )
        scenario = Path(tmp) / "bench.yaml"
        scenario.write_text(SCENARIO.format(pack=pack_dir))
        PACK.base(0, 10000)  # build the shared base once, outside the timings
        bare = best_of(r, lambda: bare_simpy(n))
        step = best_of(r, lambda: session_step(n))
        envs = best_of(r, lambda: env_step(scenario, n))
        ep = best_of(r, lambda: episodes(scenario, max(50, n // 50)))
        reset = statistics.median(reset_after_writes(scenario, 50) for _ in range(r))
        restore = statistics.median(world_restore(200) for _ in range(r))
    rows = [
        ("bare simpy cycle (request + timeout + release)", bare, 1.0),
        ("Session.step, one CRUD read", step, step / bare),
        ("env.step, one CRUD read (action parse + obs)", envs, envs / bare),
    ]
    print(f"calls per measurement: {n}, best of {r}\n")
    print("| path | us/call | calls/s | x bare simpy |")
    print("|---|---:|---:|---:|")
    for name, sec, ratio in rows:
        print(f"| {name} | {sec * 1e6:.1f} | {1 / sec:,.0f} | {ratio:.2f} |")
    print()
    print("| measure | value |")
    print("|---|---:|")
    print(f"| 20-call episodes/s (reset, 20 reads, answer, scoring) | {1 / ep:,.0f} |")
    print(f"| env.reset() of 10,000 entities after 20 writes | {reset * 1e3:.3f} ms |")
    print(f"| World.restore() after 20 writes (10,000 entities) | {restore * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
