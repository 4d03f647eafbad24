"""Kernel benchmark: simulated tool calls against two simpy baselines, on long sessions and on a
realistic mix of short episodes, and reset cost.

Run: ``python benchmarks/kernel.py [--calls 30000] [--runs 5]``

Every figure is CPU time measured in this process, next to its baselines, the contenders taking
turns in rotating order in every run, so that each run sees the machine as the others around it
do; ratios are per run (a contender against the baselines of the same run), reported as the
median and the range over ``--runs`` runs.

Baselines, each doing per call what a simulated call's clock and capacity cost at the least: a
resource request, a timeout and a release:

- *simpy, a process per call*: ``env.run(until=env.process(call()))`` for each call (the way a
  step drives the kernel);
- *simpy, one loop*: one long process doing request, timeout and release per call, simpy's
  cheapest way to do the same thing.

Contenders:

- *Session.step*: one CRUD read (``get_customer``) per step through the kernel: argument
  validation, capacity, latency draw from the tool's stream, handler against the versioned
  world, result copy, recording; sessions of 1,000 calls to one tool;
- *env.step*: the same read through the Gymnasium-style API (action parsing, observation);
- *realistic mix*: short episodes as agents make them, 5 to 30 calls each over 10 to 20 of 16
  tools (reads and writes of 8 entity types), every episode a new session, so first calls of a
  tool in a session are included; its baseline is the one-loop simpy baseline with a fresh
  environment per episode and a resource per tool it uses;
- *episodes/s*: reset + 20 reads + final answer + scoring, per core;
- *reset*: ``env.reset()`` of a task whose world holds 10,000 entities, after an episode that
  changed 20 of them; and ``World.restore`` of a snapshot.

Ratios (simforge time / baseline time) are what to compare across machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
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

MIX_KINDS = ("Account", "Order", "Ticket", "Product", "Invoice", "Shipment", "Contract", "Asset")
MIX_ROWS = 200


def _mix_entity(kind: str) -> type:
    namespace = {
        "__annotations__": {"id": str, "name": str, "status": str},
        "id": Field(primary_key=True),
        "status": "open",
        "__module__": __name__,
    }
    cls = type(kind, (Base,), namespace, table=True)
    return entity(id_prefix=f"{kind[0]}-", id_width=4)(cls)  # type: ignore[no-any-return]


MIX_ENTITIES = [_mix_entity(kind) for kind in MIX_KINDS]


def _mix_seed(seed: int, scale: int) -> dict[str, list[dict[str, object]]]:
    return {
        kind: [{"id": f"{kind[0]}-{i:04d}", "name": f"{kind} {i}"} for i in range(1, scale + 1)]
        for kind in MIX_KINDS
    }


MIX_PACK = Pack(
    name="bench-mix",
    description="benchmark pack: reads and writes of eight entity types",
    entities=MIX_ENTITIES,
    tools=[
        tool
        for cls in MIX_ENTITIES
        for tool in crud_tools(
            EntitySchema.of(cls), ops=("get", "update"), read_latency=Constant(seconds=0.05),
            capacity=64,
        )
    ],
    seed=_mix_seed,
)


def mix_plan(episodes: int, seed: int = 0) -> list[list[CallRequest]]:
    """Episodes of 5 to 30 calls, each choosing among 10 to 16 of the 16 tools (half reads,
    half writes; a tool may be called more than once)."""
    rng = random.Random(seed)
    targets = {}  # tool -> (id argument, id prefix)
    for cls in MIX_ENTITIES:
        snake = EntitySchema.of(cls).snake
        for op in ("get", "update"):
            targets[f"{op}_{snake}"] = (f"{snake}_id", cls.__name__[0])
    tools = sorted(targets)
    plan = []
    for _ in range(episodes):
        offered = rng.sample(tools, rng.randint(10, len(tools)))
        calls = []
        for _ in range(rng.randint(5, 30)):
            name = rng.choice(offered)
            id_arg, prefix = targets[name]
            args: dict[str, object] = {id_arg: f"{prefix}-{rng.randint(1, MIX_ROWS):04d}"}
            if name.startswith("update_"):
                args["status"] = rng.choice(["open", "closed", "pending"])
            calls.append(CallRequest(name, args))
        plan.append(calls)
    return plan


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


def cpu() -> float:
    return time.process_time()


def bare_simpy(n: int) -> float:
    env = simpy.Environment()
    res = simpy.Resource(env, capacity=64)

    def call() -> simpy.events.ProcessGenerator:
        with res.request() as req:
            yield req
            yield env.timeout(0.05)

    t0 = cpu()
    for _ in range(n):
        env.run(until=env.process(call()))
    return (cpu() - t0) / n


def simpy_loop(n: int) -> float:
    env = simpy.Environment()
    res = simpy.Resource(env, capacity=64)

    def calls() -> simpy.events.ProcessGenerator:
        for _ in range(n):
            with res.request() as req:
                yield req
                yield env.timeout(0.05)

    t0 = cpu()
    env.process(calls())
    env.run()
    return (cpu() - t0) / n


EPISODE = 1000
"""Calls per session in the per-call measurements: a long episode, not an endless one (a session
keeps every call it recorded, so per-call cost creeps up over tens of thousands of calls)."""


def session_step(n: int) -> float:
    ids = [f"C-{1 + i % 10000:05d}" for i in range(n)]
    elapsed = 0.0
    for start in range(0, n, EPISODE):
        step = Session(PACK.catalog, PACK.world(0, 10000)).step
        t0 = cpu()
        for cid in ids[start : start + EPISODE]:
            step([CallRequest("get_customer", {"customer_id": cid})], think=0.0)
        elapsed += cpu() - t0
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
        t0 = cpu()
        for action in actions[start : start + EPISODE]:
            env.step(action)
        elapsed += cpu() - t0
    return elapsed / n


def episodes(env_path: Path, n: int) -> float:
    env = make(str(env_path))
    reads = [
        {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": f"C-{1 + i:05d}"}}]}
        for i in range(20)
    ]
    t0 = cpu()
    for seed in range(n):
        env.reset(seed=seed)
        for action in reads:
            env.step(action)
        env.step({"final_answer": "done"})
    return (cpu() - t0) / n


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
        t0 = cpu()
        env.reset(seed=seed)
        total += cpu() - t0
    return total / n


def world_restore(n: int) -> float:
    world = PACK.world(0, 10000)
    snap = world.snapshot()
    total = 0.0
    for _ in range(n):
        for i in range(20):
            world.update("Customer", f"C-{1 + i:05d}", {"tier": "gold"}, now=float(i))
        t0 = cpu()
        world.restore(snap)
        total += cpu() - t0
    return total / n


def mix_sessions(plan: list[list[CallRequest]]) -> float:
    """The realistic mix through ``Session.step``: a new session per episode."""
    catalog, world = MIX_PACK.catalog, MIX_PACK.world(0, MIX_ROWS)
    snap = world.snapshot()
    calls = 0
    elapsed = 0.0
    for seed, episode in enumerate(plan):
        world.restore(snap)
        t0 = cpu()
        step = Session(catalog, world, seed=seed).step
        for request in episode:
            step([request], think=0.0)
        elapsed += cpu() - t0
        calls += len(episode)
    return elapsed / calls


def mix_simpy(plan: list[list[CallRequest]]) -> float:
    """The mix's baseline: simpy's one-loop cycle per call, a fresh environment per episode and
    a resource for each tool on its first call."""
    calls = 0
    t0 = cpu()
    for episode in plan:
        env = simpy.Environment()
        resources: dict[str, simpy.Resource] = {}

        def run(episode: list[CallRequest] = episode, env: simpy.Environment = env,
                resources: dict[str, simpy.Resource] = resources) -> simpy.events.ProcessGenerator:
            for request in episode:
                res = resources.get(request.tool)
                if res is None:
                    res = resources[request.tool] = simpy.Resource(env, capacity=64)
                with res.request() as req:
                    yield req
                    yield env.timeout(0.05)

        env.process(run())
        env.run()
        calls += len(episode)
    return (cpu() - t0) / calls


def spread(values: list[float], scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    lo, mid, hi = min(values), statistics.median(values), max(values)
    return f"{fmt.format(mid * scale)} ({fmt.format(lo * scale)}-{fmt.format(hi * scale)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30_000,
                        help="calls per contender per run (default 30000)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    n, runs = args.calls, args.runs
    with tempfile.TemporaryDirectory() as tmp:
        pack_dir = Path(tmp) / "bench"
        pack_dir.mkdir()
        (pack_dir / "pack.py").write_text(
            f"from importlib import import_module\nPACK = import_module({__name__!r}).PACK\n"
        )
        scenario = Path(tmp) / "bench.yaml"
        scenario.write_text(SCENARIO.format(pack=pack_dir))
        PACK.base(0, 10000)  # build the shared bases once, outside the timings
        MIX_PACK.base(0, MIX_ROWS)
        plan = mix_plan(max(20, n // 17))  # about n calls (17.5 a episode on average)
        contenders: dict[str, Callable[[], float]] = {
            "simpy, a process per call": lambda: bare_simpy(n),
            "simpy, one loop": lambda: simpy_loop(n),
            "Session.step": lambda: session_step(n),
            "env.step": lambda: env_step(scenario, n),
            "mix: simpy, one loop": lambda: mix_simpy(plan),
            "mix: Session.step": lambda: mix_sessions(plan),
            "episodes": lambda: episodes(scenario, max(50, n // 50)),
            "reset": lambda: reset_after_writes(scenario, 50),
            "restore": lambda: world_restore(200),
        }
        names = list(contenders)
        for fn in contenders.values():  # warm-up, outside the figures
            fn()
        got: dict[str, list[float]] = {name: [] for name in names}
        for run in range(runs):
            order = names[run % len(names):] + names[: run % len(names)]
            for name in order:
                got[name].append(contenders[name]())
            print(f"run {run + 1}/{runs} done", file=sys.stderr, flush=True)

    def per_run(name: str, base: str) -> list[float]:
        return [a / b for a, b in zip(got[name], got[base], strict=True)]

    proc, loop = "simpy, a process per call", "simpy, one loop"
    rows = [
        ("simpy, a process per call (request + timeout + release)", proc, proc, loop),
        ("simpy, one loop (the same in one long process)", loop, proc, loop),
        ("Session.step, one CRUD read, sessions of 1,000", "Session.step", proc, loop),
        ("env.step, one CRUD read (action parse + obs)", "env.step", proc, loop),
        ("mix baseline: simpy one loop, fresh env per episode", "mix: simpy, one loop", None,
         "mix: simpy, one loop"),
        ("mix: Session.step, 5-30 calls over 10-16 tools", "mix: Session.step", None,
         "mix: simpy, one loop"),
    ]
    print(f"CPU time; {n} calls per contender per run; median (range) over {runs} runs, "
          "contenders in rotating order\n")
    print("| path | us/call | x simpy, process per call | x simpy, one loop |")
    print("|---|---:|---:|---:|")
    for label, name, base_proc, base_loop in rows:
        a = spread(per_run(name, base_proc)) if base_proc else "-"
        b = spread(per_run(name, base_loop)) if base_loop else "-"
        print(f"| {label} | {spread(got[name], 1e6, '{:.1f}')} | {a} | {b} |")
    print()
    print("| measure | value |")
    print("|---|---:|")
    eps = [1 / t for t in got["episodes"]]
    print(f"| 20-call episodes/s (reset, 20 reads, answer, scoring) | {spread(eps, 1, '{:,.0f}')} |")
    print(f"| env.reset() of 10,000 entities after 20 writes | "
          f"{spread(got['reset'], 1e3, '{:.3f}')} ms |")
    print(f"| World.restore() after 20 writes (10,000 entities) | "
          f"{spread(got['restore'], 1e6, '{:.1f}')} us |")


if __name__ == "__main__":
    main()
