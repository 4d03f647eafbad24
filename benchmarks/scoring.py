"""Scoring benchmark: what scoring a finished episode costs against its length.

Run: ``python benchmarks/scoring.py [--calls 10,100,1000] [--rounds 15] [--faults flaky-network]
[--validators]``

The episode is ``acme/refund-damaged-order-v1``'s ``within-window`` task with its budgets lifted
(a scenario file written to a temporary folder), played by a scripted agent: ten calls a step,
reads of the task's order, customer, refunds and products with now and then an order that does
not exist (a 404), retries after the flaky network's failures, then the refund and the answer.
Every validator the scenario runs scores it: the defaults (state, outputs, collateral damage,
the anti-cheat checks, honesty and recovery), the scenario's minefields, policy rules (one of
them a per-call plugin check over every write), invariants and efficiency.

Per length, in this process and side by side:

- *score*: ``env.score()`` from scratch (a fresh scoring context, every validator);
- *walk*: a plain loop that reads each call's tool, arguments, result, error, metadata and
  times once: the floor of any scorer that looks at every call;
- *last step*: the step that ends the episode, as the agent waits for it: the trajectory built
  from the session's record, then scored;
- *episode*: playing the episode (reset, every step and the last one), the cost scoring adds to.

Each figure is the process's CPU time, over ``--rounds`` rounds in which the lengths take turns
(the order rotating), the collector run before and held off during each timed chunk; the table
gives the median and the middle half of the rounds. ``--validators`` adds each validator's share
at the longest length.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import simforge
from simforge.scenario.registry import default_registry

SCENARIO = "acme/refund-damaged-order-v1"
TASK = "within-window"
PER_STEP = 10


def long_scenario(folder: Path) -> str:
    """The scenario's file with room for thousands of calls, under an id of its own."""
    source = default_registry.get(SCENARIO).path
    assert source is not None
    text = Path(source).read_text(encoding="utf-8")
    text = text.replace(f"id: {SCENARIO}", "id: acme/refund-damaged-order-long-v1")
    text = text.replace("budgets: {max_steps: 15, max_sim_seconds: 900}",
                        "budgets: {max_steps: 100000, max_sim_seconds: 100000000}")
    path = folder / "long.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


READS: list[tuple[str, dict[str, Any]]] = [
    ("get_order", {"order_id": "O-9001"}),
    ("list_refunds", {"order_id": "O-9001"}),
    ("get_customer", {"customer_id": "C-9001"}),
    ("get_product", {"product_id": "P-9001"}),
    ("get_order", {"order_id": "O-9001"}),
    ("get_product", {"product_id": "P-9002"}),
    ("get_order", {"order_id": "O-9999"}),  # not found: a 404 every lap
    ("list_refunds", {"order_id": "O-9001"}),
]


def play(env: Any, calls: int, faults: str, last: list[float] | None = None) -> None:
    """One episode of ``calls`` calls: reads ten a step (a failed one retried in the next step),
    the refund, the answer; the CPU time of the last step is appended to ``last``."""
    env.reset(seed=0, options={"task": TASK, "faults": faults})
    made, retry = 0, []
    while made < calls - 1:
        batch = retry + [READS[(made + i) % len(READS)] for i in range(PER_STEP)]
        batch = batch[: min(PER_STEP, calls - 1 - made)]
        obs = env.step({"tool_calls": [{"name": n, "arguments": a} for n, a in batch]})[0]
        made += len(batch)
        retry = [call for call, result in zip(batch, obs["results"], strict=True)
                 if not result["ok"] and (result.get("error") or {}).get("status") != 404]
    env.step({"tool_calls": [{"name": "refund_order", "arguments": {
        "order_id": "O-9001", "amount": 149.99, "reason": "cracked hopper"}}]})
    t0 = time.process_time()
    env.step("I refunded 149.99 for the Pro Burr Grinder on order O-9001.")
    if last is not None:
        last.append(time.process_time() - t0)
    assert env.session.done


def score_fresh(env: Any) -> Any:
    env._score = None  # score the ended episode again, from a fresh context
    return env.score()


def walk(env: Any) -> int:
    touched = 0
    for call in env.trajectory().tool_calls:
        for value in (call.tool, call.args, call.result, call.error, call.metadata,
                      call.started_at, call.ended_at):
            touched += value is not None
    return touched


def cpu(fn: Callable[[], Any], repeat: int) -> float:
    """CPU seconds per call of ``fn``, over ``repeat`` calls with the collector held off."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        for _ in range(repeat):
            fn()
        return (time.process_time() - t0) / repeat
    finally:
        gc.enable()


def spread(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def per_validator(env: Any, repeat: int) -> dict[str, float]:
    from simforge.scoring import registry

    spent: dict[str, float] = defaultdict(float)
    original = registry.ValidatorDef.__call__

    def timed(self: Any, ctx: Any, **params: Any) -> Any:
        t0 = time.process_time()
        try:
            return original(self, ctx, **params)
        finally:
            spent[self.name] += time.process_time() - t0

    registry.ValidatorDef.__call__ = timed  # type: ignore[method-assign]
    try:
        for _ in range(repeat):
            score_fresh(env)
    finally:
        registry.ValidatorDef.__call__ = original  # type: ignore[method-assign]
    return {name: t / repeat for name, t in sorted(spent.items(), key=lambda kv: -kv[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="10,100,1000", help="episode lengths, comma-separated")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--faults", default="flaky-network")
    parser.add_argument("--validators", action="store_true", help="each validator's share")
    args = parser.parse_args()
    lengths = [int(n) for n in args.calls.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        envs = {n: simforge.make(long_scenario(Path(tmp))) for n in lengths}
        for n, env in envs.items():
            play(env, n, args.faults)
            made = len(env.trajectory().tool_calls)
            score = score_fresh(env)
            print(f"{n:>5} calls asked, {made} made: reward {score.reward}, failed "
                  f"{score.failed or 'none'}", file=sys.stderr)
        figures: dict[int, dict[str, list[float]]] = {
            n: {"score": [], "walk": [], "episode": [], "last": []} for n in lengths}
        for r in range(args.rounds):
            order = lengths[r % len(lengths):] + lengths[:r % len(lengths)]
            for n in order:
                env = envs[n]
                repeat = max(1, 2000 // n)
                figures[n]["score"].append(cpu(lambda env=env: score_fresh(env), repeat))
                figures[n]["walk"].append(cpu(lambda env=env: walk(env), repeat))
                figures[n]["episode"].append(cpu(
                    lambda env=env, n=n: play(env, n, args.faults, figures[n]["last"]),
                    max(1, repeat // 4)))
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        print(f"{SCENARIO} ({TASK}) under {args.faults}, budgets lifted;\n"
              f"CPU time, medians of {args.rounds} rounds, with the middle half\n")
        print("| calls | score ms | middle half | x walk | last step ms | episode ms | share |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for n in lengths:
            f = figures[n]
            lo, mid, hi = spread(f["score"])
            walk_ms = statistics.median(f["walk"]) * 1e3
            last_ms = statistics.median(f["last"]) * 1e3
            episode_ms = statistics.median(f["episode"]) * 1e3
            print(f"| {n:,} | {mid * 1e3:.2f} | {lo * 1e3:.2f}-{hi * 1e3:.2f} | "
                  f"{mid * 1e3 / walk_ms:.0f} | {last_ms:.2f} | {episode_ms:.2f} | "
                  f"{mid * 1e3 / episode_ms:.0%} |")
        print("\nx walk: score / a plain walk over the calls; share: score / episode")
        if args.validators:
            longest = max(lengths)
            print(f"\nper validator at {longest:,} calls (ms):")
            for name, t in per_validator(envs[longest], max(5, 2000 // longest)).items():
                print(f"  {name:<28} {t * 1e3:7.3f}")


if __name__ == "__main__":
    main()
