"""Two implementations of the session's random streams against each other, in one process.

Run: ``python benchmarks/streams.py BEFORE_RNG [--rounds 10] [--pack /tmp/airline-pack]
[--data ../shared/data]``,
``BEFORE_RNG`` another tree's ``simforge/sim/rng.py`` (e.g. main's, from a worktree), whose
``Streams`` replaces this tree's in ``simforge.sim.session`` for the *before* turns.

On a loaded machine two interpreters (``benchmarks/trees.py``) see different neighbours; here
the two ``Streams`` take turns in the same process, a few hundred calls at a time, the order
alternating, so the machine's drift hits both alike and only the streams differ. Each round
times, with each implementation, CPU time per call (``time.process_time``, the collector off):

- *reads, constant latency*: 1,000 ``Session.step`` reads (the kernel benchmark's tool: nothing
  drawn, one stream made per session);
- *reads, lognormal latency*: the same with a lognormal latency, a draw per call from the
  tool's stream (what a 1,000-call session of a synthesized tool pays);
- *mix, constant* and *mix, lognormal*: the kernel benchmark's realistic mix (60 episodes of 5
  to 30 calls over 10 to 16 tools, a new session each, so first calls included), with its
  constant latencies and with lognormal ones;
- with ``--pack``, *airline replay*: the 1,164 recorded calls of ``benchmarks/synth_calls.py``
  through ``env.step`` on the synthesized airline pack (a reset per trajectory, not timed),
  10 trajectories a turn, the median call's CPU time (as ``synth_calls.py`` reports it; the
  others are means).

Prints per contender the median CPU time per call of each and the after/before ratio per round
(median and range over rounds).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from drawn import DRAWN_MIX, DRAWN_PACK  # noqa: E402
from kernel import MIX_PACK, MIX_ROWS, PACK, mix_plan  # noqa: E402

import simforge.sim.session as session_module  # noqa: E402
from simforge.env import make  # noqa: E402
from simforge.sim import CallRequest, Session  # noqa: E402
from simforge.tools import Pack  # noqa: E402

READS = [[CallRequest("get_customer", {"customer_id": f"C-{1 + i % 10000:05d}"})]
         for i in range(1000)]
EPISODES = mix_plan(60)


def _timed(body: Callable[[], int]) -> float:
    """CPU seconds per call of ``body`` (which returns how many calls it made)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        calls = body()
        return (time.process_time() - t0) / max(calls, 1)
    finally:
        gc.enable()


def reads(pack: Pack) -> Callable[[], float]:
    world = pack.world(0, 10000)
    snap = world.snapshot()

    def one() -> float:
        world.restore(snap)
        step = Session(pack.catalog, world).step

        def body() -> int:
            for call in READS:
                step(call, think=0.0)
            return len(READS)
        return _timed(body)
    return one


def mix(pack: Pack) -> Callable[[], float]:
    world = pack.world(0, MIX_ROWS)
    snap = world.snapshot()

    def one() -> float:
        def body() -> int:
            calls = 0
            for i, episode in enumerate(EPISODES):
                world.restore(snap)
                step = Session(pack.catalog, world, seed=i).step
                for request in episode:
                    step([request], think=0.0)
                calls += len(episode)
            return calls
        return _timed(body)
    return one


def airline(pack_dir: Path, data: Path, tmp: str) -> Callable[[], float]:
    from synth_calls import SCENARIO, TRACES, timed, trajectories

    scenario = Path(tmp) / "airline.yaml"
    scenario.write_text(SCENARIO.format(pack=pack_dir.resolve()))
    env = make(str(scenario))
    episodes = trajectories(data / TRACES)
    turn = [0]

    def one() -> float:
        start = turn[0] // 2 * 10 % len(episodes)  # both implementations play the same 10
        turn[0] += 1
        times = []
        for trajectory in episodes[start:start + 10]:
            env.reset(seed=0)
            gc.disable()
            for name, arguments in trajectory:
                times.append(timed(env.step, {"tool_calls": [{"name": name,
                                                              "arguments": arguments}]}))
            gc.enable()
        return statistics.median(times)
    return one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="another tree's simforge/sim/rng.py")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--pack", type=Path, help="the synthesized airline pack")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("before_rng", args.before)
    assert spec is not None and spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    impls = {"before": before.Streams, "after": session_module.Streams}
    contenders: dict[str, Callable[[], float]] = {
        "reads, constant latency": reads(PACK),
        "reads, lognormal latency": reads(DRAWN_PACK),
        "mix, constant": mix(MIX_PACK),
        "mix, lognormal": mix(DRAWN_MIX),
    }
    with tempfile.TemporaryDirectory() as tmp:
        if args.pack:
            contenders["airline replay (env.step), median call"] = airline(args.pack, args.data, tmp)
        for one in contenders.values():  # warm up: worlds, argument models, caches
            for impl in impls.values():  # (a pair of turns, each implementation one)
                session_module.Streams = impl
                one()
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            for name, one in contenders.items():
                for who in list(impls) if r % 2 == 0 else list(reversed(impls)):
                    session_module.Streams = impls[who]
                    times.setdefault((name, who), []).append(one())
        session_module.Streams = impls["after"]
    print(f"CPU us per call; median (range) over {args.rounds} rounds, the two Streams taking "
          "turns in one process\n")
    print("| contender | before us | after us | after / before, per round |")
    print("|---|---:|---:|---:|")
    for name in contenders:
        b, a = times[name, "before"], times[name, "after"]
        ratios = [y / x for x, y in zip(b, a, strict=True)]
        print(f"| {name} | {statistics.median(b) * 1e6:.2f} | {statistics.median(a) * 1e6:.2f} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
