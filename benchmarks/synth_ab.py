"""Synthesized handlers A/B in one process: another checkout's compiled handlers and handler
wrapper (``--base``, e.g. main in a worktree) against this checkout's, swapped turn by turn on
the same 10 trajectories of the gpt-4o airline replay (``synth_calls.py``), CPU time per
``env.step``, the collector off while timing.

Run: ``python benchmarks/synth_ab.py --base ../wt-main --pack /tmp/airline-pack --rounds 30``

The base's ``simforge/synth/runtime/compiled.py`` is loaded under another module name (it
imports the rest of simforge from this checkout) and its handlers are wrapped as the base
loader does (``model_dump(exclude_unset=True)`` of the arguments). The first round checks that
both give the same observation on every call. Reported per kind: the median over rounds of
each side's median call, and the base/this ratio per round, median (min - max).
"""

from __future__ import annotations

import gc
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import yaml
from synth_calls import SCENARIO, TRACES, kind_of, options, trajectories

from simforge.env import make
from simforge.synth.pack import loader
from simforge.tools.tool import Tool


def _wrapper(handler: Any) -> tuple[Any, Any, Any]:
    """The compiled handler, runtime and ``ensure`` a loader wrapper closes over."""
    cells = dict(zip(handler.__code__.co_freevars,
                     (c.cell_contents for c in handler.__closure__ or ()), strict=True))
    return cells["compiled"], cells["runtime"], cells["ensure"]


def main() -> None:
    parser = options(__doc__ or "")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    path = args.base / "simforge/synth/runtime/compiled.py"
    spec = importlib.util.spec_from_file_location("base_compiled", path)
    assert spec is not None and spec.loader is not None
    base_compiled = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base_compiled)

    episodes = trajectories(args.data / TRACES)
    entries = orjson.loads((args.pack / "tools.json").read_bytes())
    descs = {e["spec"]["name"]: e["handler"] for e in entries}
    writes = {e["spec"]["name"] for e in entries if e["spec"].get("kind") == "write"}
    entities = yaml.safe_load((args.pack / "pack.yaml").read_text()).get("entities") or {}
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "airline.yaml"
        scenario.write_text(SCENARIO.format(pack=args.pack.resolve()))
        env = make(str(scenario))
    tools: dict[str, Tool] = {}
    invoke = Tool.invoke

    def grab(self: Tool, ctx: Any, arguments: Any) -> Any:
        tools[self.name] = self
        return invoke(self, ctx, arguments)

    Tool.invoke = grab  # type: ignore[method-assign]
    for calls in episodes:
        env.reset(seed=0)
        for name, arguments in calls:
            env.step({"tool_calls": [{"name": name, "arguments": arguments}]})
    Tool.invoke = invoke  # type: ignore[method-assign]
    sides: dict[str, dict[str, Any]] = {"base": {}, "this": {}}
    for name, tool in tools.items():
        _, runtime, ensure = _wrapper(tool._handler)
        sides["this"][name] = tool._handler
        old = base_compiled.compile_handler(descs[name], entities)
        sides["base"][name] = loader._handler(old, runtime, ensure, None)

    per_round: list[dict[str, dict[str, float]]] = []
    seen: dict[str, list[str]] = {"base": [], "this": []}
    turn = 0
    for r in range(args.rounds):
        samples: dict[str, dict[str, list[float]]] = {"base": {}, "this": {}}
        for start in range(0, len(episodes), 10):
            order = ("base", "this") if turn % 2 else ("this", "base")
            turn += 1
            for who in order:
                for name, tool in tools.items():
                    tool._handler = sides[who][name]
                gc.disable()
                for calls in episodes[start:start + 10]:
                    env.reset(seed=0)
                    for name, arguments in calls:
                        action = {"tool_calls": [{"name": name, "arguments": arguments}]}
                        t0 = time.process_time()
                        obs = env.step(action)
                        dt = time.process_time() - t0
                        for k in ("all", kind_of(name, writes)):
                            samples[who].setdefault(k, []).append(dt)
                        if r == 0:
                            seen[who].append(repr(obs))
                gc.enable()
        per_round.append({w: {k: statistics.median(v) for k, v in s.items()}
                          for w, s in samples.items()})
    assert seen["base"] == seen["this"], "the two sides answered differently"
    print(f"{args.rounds} rounds; the same observation from both on all "
          f"{len(seen['this'])} calls\n")
    print("| kind | base, us | this, us | base / this per round |")
    print("|---|---:|---:|---:|")
    for k in ("all", "reads", "searches", "writes", "others", "ending"):
        b = statistics.median(p["base"][k] for p in per_round) * 1e6
        t = statistics.median(p["this"][k] for p in per_round) * 1e6
        ratios = [p["base"][k] / p["this"][k] for p in per_round]
        print(f"| {k} | {b:.1f} | {t:.1f} | {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f} - {max(ratios):.3f}) |")


if __name__ == "__main__":
    main()
