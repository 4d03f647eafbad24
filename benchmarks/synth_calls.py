"""Synthesized-pack calls: the 1,164 recorded calls of tau-bench's gpt-4o airline trajectories
replayed through ``env.step`` on a pack synthesized from that file and the airline snapshot,
against a hand-written acme read and a plain-Python implementation of the same lookups.

Run: ``python benchmarks/synth_calls.py [--passes 5] [--pack DIR] [--data ../shared/data]``
(without ``--pack`` the pack is synthesized into a temporary folder first).

Contenders, each timed per call in CPU time (``time.process_time``) in this process:

- *synthesized*: every recorded call of every trajectory, one ``env.step`` each, a reset before
  each trajectory (not timed), grouped by tool kind: reads (``get_*``, ``list_*``), searches
  (``search_*``), writes (the tools the pack marks as writes), others (``calculate``,
  ``think``), and the hand-over that ends the episode (``transfer_to_human_agents``: its step
  scores the episode);
- *acme read*: ``get_order`` of the shipped ``acme/refund-damaged-order-v1`` through
  ``env.step`` (a hand-written tool over the same kernel), a reset every 10 calls;
- *plain Python*: the same lookups as functions over dicts of the snapshot (the reservation or
  user by id, copied; flights by route, merged with the day's record; a write as the row merged
  with its arguments), called directly: no env, no kernel, no validation.

The contenders take turns in short chunks (10 trajectories, or as many acme reads), the order
rotating every chunk, so that a noisy neighbour slows them alike. A pass covers every
trajectory once; medians are per pass, reported as the median over passes with the spread
(min - max of the pass medians), and ratios are per pass too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's simforge, not an installed one
TRACES = "tau-bench/historical_trajectories/gpt-4o-airline.json"
SNAPSHOT = "tau-bench/envs/airline/data"
CHUNK = 10
ACME = "acme/refund-damaged-order-v1"
ACME_CALL = {"name": "get_order", "arguments": {"order_id": "O-9001"}}
ENDING = "transfer_to_human_agents"

SCENARIO = """id: bench/synth-airline-v1
pack: {pack}
budgets: {{max_steps: 100000, max_sim_seconds: 1.0e12}}
think_time: {{kind: constant, seconds: 0.0}}
tasks:
  - id: replay
    instruction: Replay the recorded calls.
"""


def trajectories(path: Path) -> list[list[tuple[str, dict[str, Any]]]]:
    out = []
    for run in json.loads(path.read_text()):
        calls = []
        for message in run["traj"]:
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                calls.append((fn["name"], json.loads(fn["arguments"])))
        out.append(calls)
    return out


def kind_of(name: str, writes: set[str]) -> str:
    if name == ENDING:
        return "ending"
    if name.startswith("search_"):
        return "searches"
    if name in writes:
        return "writes"
    if name.startswith(("get_", "list_")):
        return "reads"
    return "others"


# -- the plain-Python baseline ---------------------------------------------------------------


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class Plain:
    """The airline lookups written by hand over the snapshot's dicts."""

    def __init__(self, snapshot: Path) -> None:
        def load(name: str) -> dict[str, Any]:
            data: dict[str, Any] = json.loads((snapshot / f"{name}.json").read_text())
            return data

        self.flights = load("flights")
        self.reservations = load("reservations")
        self.users = load("users")
        self.by_route: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.by_origin: dict[str, list[dict[str, Any]]] = {}
        for flight in self.flights.values():
            self.by_route.setdefault((flight["origin"], flight["destination"]), []).append(flight)
            self.by_origin.setdefault(flight["origin"], []).append(flight)

    def _day(self, flight: dict[str, Any], date: str) -> dict[str, Any] | None:
        day = flight["dates"].get(date)
        if day is None or day.get("status") != "available":
            return None
        return {**{k: v for k, v in flight.items() if k != "dates"}, **day}

    def call(self, name: str, args: dict[str, Any]) -> Any:
        if name == "get_reservation_details":
            row = self.reservations.get(args.get("reservation_id"))
            return _copy(row) if row is not None else "Error: reservation not found"
        if name == "get_user_details":
            row = self.users.get(args.get("user_id"))
            return _copy(row) if row is not None else "Error: user not found"
        if name == "search_direct_flight":
            route = self.by_route.get((args.get("origin"), args.get("destination")), [])
            days = (self._day(f, args.get("date", "")) for f in route)
            return [d for d in days if d is not None]
        if name == "search_onestop_flight":
            out = []
            for first in self.by_origin.get(args.get("origin"), []):
                leg = self._day(first, args.get("date", ""))
                if leg is None:
                    continue
                for second in self.by_route.get((first["destination"], args.get("destination")),
                                                []):
                    other = self._day(second, args.get("date", ""))
                    if other is not None and (second["scheduled_departure_time_est"]
                                              > first["scheduled_arrival_time_est"]):
                        out.append([leg, other])
            return out
        if name.startswith(("update_", "cancel_", "send_", "book_")):
            table = self.users if name == "send_certificate" else self.reservations
            key = args.get("user_id") if name == "send_certificate" else args.get(
                "reservation_id")
            row = table.get(key) if isinstance(key, str) else None
            return _copy({**(row or {}), **args})
        return ""


# -- timing ----------------------------------------------------------------------------------


def timed(step: Callable[[Any], Any], action: Any) -> float:
    t0 = time.process_time()
    step(action)
    return time.process_time() - t0


def options(doc: str) -> argparse.ArgumentParser:
    """The options both benchmarks of a synthesized pack take (``--pack``, ``--data``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--pack", type=Path, help="a pack synthesized from the traces")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    return parser


def airline_pack(given: Path | None, data: Path, tmp: str) -> Path:
    """``given``, or the pack synthesized from the traces and the snapshot into ``tmp``."""
    if given is not None:
        return given
    from simforge.synth.pipeline import synthesize

    pack = Path(tmp) / "airline"
    synthesize([data / TRACES], pack, data=[data / SNAPSHOT], seed=0)
    return pack


def main() -> None:
    parser = options(__doc__ or "")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()

    from simforge.env import make

    episodes = trajectories(args.data / TRACES)
    with tempfile.TemporaryDirectory() as tmp:
        pack = airline_pack(args.pack, args.data, tmp)
        scenario = Path(tmp) / "airline.yaml"
        scenario.write_text(SCENARIO.format(pack=pack.resolve()))
        synth = make(str(scenario))
        acme = make(ACME)
        plain = Plain(args.data / SNAPSHOT)
        tools = json.loads((pack / "tools.json").read_text())
        writes = {t["spec"]["name"] for t in tools if t["spec"].get("kind") == "write"}
        run(episodes, synth, acme, plain, writes, args.passes)


def run(episodes: list[list[tuple[str, dict[str, Any]]]], synth: Any, acme: Any, plain: Plain,
        writes: set[str], passes: int) -> None:
    kinds = ["all", "reads", "searches", "writes", "others", "ending"]
    per_pass: list[dict[str, dict[str, float]]] = []
    acme_action = {"tool_calls": [ACME_CALL]}
    for n in range(passes + 1):  # the first pass warms up (indexes, caches) and is dropped
        samples: dict[str, dict[str, list[float]]] = {
            "synth": {k: [] for k in kinds}, "plain": {k: [] for k in kinds}, "acme": {"read": []}}
        for c, start in enumerate(range(0, len(episodes), CHUNK)):
            chunk = episodes[start:start + CHUNK]
            size = sum(len(calls) for calls in chunk)

            def synth_chunk(chunk: list[list[tuple[str, dict[str, Any]]]] = chunk,
                            samples: dict[str, Any] = samples) -> None:
                for calls in chunk:
                    synth.reset(seed=0)
                    for name, arguments in calls:
                        action = {"tool_calls": [{"name": name, "arguments": arguments}]}
                        dt = timed(synth.step, action)
                        samples["synth"]["all"].append(dt)
                        samples["synth"][kind_of(name, writes)].append(dt)

            def plain_chunk(chunk: list[list[tuple[str, dict[str, Any]]]] = chunk,
                            samples: dict[str, Any] = samples) -> None:
                for calls in chunk:
                    for name, arguments in calls:
                        t0 = time.process_time()
                        plain.call(name, arguments)
                        dt = time.process_time() - t0
                        samples["plain"]["all"].append(dt)
                        samples["plain"][kind_of(name, writes)].append(dt)

            def acme_chunk(size: int = size, samples: dict[str, Any] = samples) -> None:
                for i in range(size):
                    if i % 10 == 0:
                        acme.reset(seed=0, options={"task": "within-window"})
                    samples["acme"]["read"].append(timed(acme.step, acme_action))

            order = [synth_chunk, acme_chunk, plain_chunk]
            for fn in order[c % 3:] + order[:c % 3]:
                fn()
        if n:
            per_pass.append({
                who: {k: statistics.median(v) for k, v in by_kind.items() if v}
                for who, by_kind in samples.items()
            })
    counts = {k: 0 for k in kinds}
    for calls in episodes:
        for name, _ in calls:
            counts["all"] += 1
            counts[kind_of(name, writes)] += 1
    report(per_pass, kinds, passes, counts)


def _spread(values: list[float], scale: float = 1e6, digits: int = 1) -> str:
    return (f"{statistics.median(values) * scale:.{digits}f} "
            f"({min(values) * scale:.{digits}f} - {max(values) * scale:.{digits}f})")


def report(per_pass: list[dict[str, dict[str, float]]], kinds: list[str], passes: int,
           counts: dict[str, int]) -> None:
    print(f"{counts['all']} recorded calls per pass, {passes} passes; CPU us per call, median over "
          "passes (min - max of the pass medians)\n")
    acme = [p["acme"]["read"] for p in per_pass]
    print(f"hand-written acme read (get_order through env.step): {_spread(acme)} us\n")
    print("| kind | calls | synthesized, env.step | x acme read | plain Python | "
          "synthesized x plain |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in kinds:
        synth = [p["synth"][k] for p in per_pass if k in p["synth"]]
        if not synth:
            continue
        plain = [p["plain"][k] for p in per_pass if k in p["plain"]]
        vs_acme = [p["synth"][k] / p["acme"]["read"] for p in per_pass]
        vs_plain = [p["synth"][k] / p["plain"][k] for p in per_pass]
        print(f"| {k} | {counts[k]} | {_spread(synth)} | {_spread(vs_acme, 1, 2)} | "
              f"{_spread(plain, 1e6, 2)} | {_spread(vs_plain, 1, 0)} |")


if __name__ == "__main__":
    main()
