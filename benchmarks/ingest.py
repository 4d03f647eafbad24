"""Ingestion throughput against raw JSON parsing of the same bytes, and peak memory.

    python benchmarks/ingest.py [--data ../shared/data] [--repeat 3]
    python benchmarks/ingest.py --ab OTHER_CHECKOUT [--rounds 8]

Inputs are the real traces of ../shared/data (four tau2 results files and the tau-bench airline
trajectories): as they are (1x, JSON documents), re-written as JSONL (1x), repeated ten times as
JSONL (10x), and the tau-bench file repeated ten times as one 41 MB JSON array (above the
whole-document limit, so it is streamed with ijson). Throughput is the best of ``--repeat``
rounds in this process, in each of which ``json.loads``, ``orjson.loads`` and ingestion take
turns, each timed run right after an untimed one of its own; the parsers parse exactly the same
bytes (each line for JSONL, each file for documents). Peak memory is the max RSS of a fresh
subprocess that only ingests the input, reported with its growth over the same process right
before ingesting.

``--ab`` compares this checkout's ingestion with another's (say ``git worktree add ../old
HEAD~3``) on a shared machine, where wall-clock ratios scatter by tens of percent: fresh
processes of the two alternate for ``--rounds`` rounds, each timing the CPU time of the best of
five ingestions of the real documents, of the same records as JSONL, and of the streamed 10x
array; the minimum and median of the ratios this/other are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simforge.trace.ingest import ingest  # noqa: E402

TAU2 = "tau2-bench/results"
TAU_BENCH = "tau-bench/historical_trajectories/gpt-4o-airline.json"


def real_files(data: Path) -> list[Path]:
    return [*sorted((data / TAU2).glob("*.json")), data / TAU_BENCH]


def records(data: Path) -> dict[str, list[bytes]]:
    """Every episode record of the real files as JSON lines, per source file."""
    out = {"tau_bench": [orjson.dumps(r) for r in orjson.loads((data / TAU_BENCH).read_bytes())]}
    for path in sorted((data / TAU2).glob("*.json")):
        sims = orjson.loads(path.read_bytes())["simulations"]
        out[path.stem] = [orjson.dumps(s) for s in sims]
    return out


def write_jsonl(base: Path, sources: dict[str, list[bytes]], times: int) -> list[Path]:
    paths = []
    for name, lines in sources.items():
        path = base / f"{name}_x{times}.jsonl"
        with path.open("wb") as f:
            for _ in range(times):
                f.write(b"\n".join(lines) + b"\n")
        paths.append(path)
    return paths


def best_of(contenders: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The best time of each contender over ``repeat`` rounds. The contenders take turns in
    every round, so that a slow spell of a shared machine hits all of them, and each timed run
    follows an untimed one of the same contender, so that none inherits the caches, heap or
    collector state that another left behind."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            fn()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) for name, values in times.items()}


def parse_all(paths: list[Path], loads: Callable[[bytes], object]) -> Callable[[], None]:
    blobs = [(p.suffix == ".jsonl", p.read_bytes()) for p in paths]

    def run() -> None:
        for is_lines, blob in blobs:
            if is_lines:
                for line in blob.splitlines():
                    loads(line)
            else:
                loads(blob)

    return run


# /proc/self/status, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child started
# from this (large) process would report the parent's peak.
_PROBE = """
import json, sys
sys.path.insert(0, {root!r})
from simforge.trace.ingest import ingest
from simforge.trace.registry import formats

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

formats()
before = status("VmRSS")
result = ingest({paths!r})
print(json.dumps({{"before_kb": before, "peak_kb": status("VmHWM"), "episodes": result.episodes}}))
"""


def peak_memory(paths: list[Path]) -> tuple[float, float]:
    """(peak RSS MB, peak growth MB over the process right before ingesting), fresh process."""
    code = _PROBE.format(root=str(ROOT), paths=[str(p) for p in paths])
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    probe = json.loads(out)
    return probe["peak_kb"] / 1024, (probe["peak_kb"] - probe["before_kb"]) / 1024


def measure(label: str, paths: list[Path], repeat: int) -> dict[str, object]:
    size = sum(p.stat().st_size for p in paths) / 1e6
    result = ingest(paths)
    best = best_of({"json": parse_all(paths, json.loads), "orjson": parse_all(paths, orjson.loads),
                    "ingest": lambda: ingest(paths)}, repeat)
    t_json, t_orjson, t_ingest = best["json"], best["orjson"], best["ingest"]
    peak, growth = peak_memory(paths)
    return {
        "input": label, "MB": size, "episodes": result.episodes,
        "tool calls": result.tool_calls, "json.loads MB/s": size / t_json,
        "orjson MB/s": size / t_orjson, "ingest MB/s": size / t_ingest,
        "episodes/s": result.episodes / t_ingest,
        "ingest / json.loads": t_json / t_ingest, "ingest / orjson": t_orjson / t_ingest,
        "peak RSS MB": peak, "RSS growth MB": growth,
    }


def table(rows: list[dict[str, object]]) -> str:
    headers = list(rows[0])
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        cells = []
        for key in headers:
            value = row[key]
            if isinstance(value, float):
                cells.append(f"{value:.2f}" if "/ " in key else f"{value:,.1f}")
            else:
                cells.append(f"{value:,}" if isinstance(value, int) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_AB_PROBE = """
import json, sys, time
sys.path.insert(0, {root!r})
from simforge.trace.ingest import ingest
from simforge.trace.registry import formats
formats()
out = {{}}
for name, paths in {inputs!r}.items():
    best = float("inf")
    for _ in range(5):
        ingest(paths)
        start = time.process_time()
        ingest(paths)
        best = min(best, time.process_time() - start)
    out[name] = best
print(json.dumps(out))
"""


def ab(other: Path, data: Path, rounds: int) -> None:
    """CPU time of ingestion here against ``other``, alternating fresh processes."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        lines = write_jsonl(base, records(data), 1)
        big_array = base / "tau_bench_x10.json"
        big_array.write_bytes(orjson.dumps(orjson.loads((data / TAU_BENCH).read_bytes()) * 10))
        inputs = {"documents": [str(p) for p in real_files(data)],
                  "jsonl": [str(p) for p in lines], "streamed": [str(big_array)]}
        times: dict[str, dict[str, list[float]]] = {"this": {}, "other": {}}
        for _ in range(rounds):
            for label, root in (("other", other.resolve()), ("this", ROOT)):
                code = _AB_PROBE.format(root=str(root), inputs=inputs)
                out = subprocess.run([sys.executable, "-c", code], check=True,
                                     capture_output=True, text=True).stdout
                for name, value in json.loads(out).items():
                    times[label].setdefault(name, []).append(value)
    print(f"CPU time, this / {other} (best of 5 ingestions a process, {rounds} rounds)\n")
    print("| input | this min ms | other min ms | this/other min | this/other median |")
    print("|---|---|---|---|---|")
    for name in inputs:
        this, that = sorted(times["this"][name]), sorted(times["other"][name])
        median = this[len(this) // 2] / that[len(that) // 2]
        print(f"| {name} | {1000 * this[0]:.1f} | {1000 * that[0]:.1f} | "
              f"{this[0] / that[0]:.3f} | {median:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ab", type=Path, help="another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"real traces not found at {args.data} (use --data)")
    if args.ab is not None:
        ab(args.ab, args.data, args.rounds)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sources = records(args.data)
        one = write_jsonl(base, sources, 1)
        ten = write_jsonl(base, sources, 10)
        big_array = base / "tau_bench_x10.json"
        items = orjson.loads((args.data / TAU_BENCH).read_bytes())
        big_array.write_bytes(orjson.dumps(items * 10))
        del items, sources  # not alive while measuring: the collector would walk them
        # The 1x inputs take tens of milliseconds a run, where a scheduler hiccup is a large
        # share: three times the rounds (about 3 s) for their best to be their speed.
        short = 3 * args.repeat
        rows.append(measure("real files (1x, JSON documents)", real_files(args.data), short))
        rows.append(measure("same records as JSONL (1x)", one, short))
        rows.append(measure("JSONL 10x", ten, max(1, args.repeat - 1)))
        rows.append(measure("tau-bench 10x, one JSON array (streamed)", [big_array],
                            max(1, args.repeat - 1)))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, best of {short} rounds "
          f"(1x) and {max(1, args.repeat - 1)} (10x)\n")
    print(table(rows))


if __name__ == "__main__":
    main()
