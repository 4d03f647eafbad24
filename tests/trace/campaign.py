"""The fuzz campaign: thousands of corrupted trace files through ingestion, and the figures.

    python -m tests.trace.campaign [--cases 3000] [--seed 0] [--kills 6]

Run from the repository root (``PYTHONPATH=.``). Prints one JSON object: files ingested,
tracebacks (exceptions escaping ``ingest`` or ``simforge ingest``), hangs (a file over 30 s) and
the slowest file, the peak RSS of this process (every input is under 1 MB; the cases are made
one at a time, and ``rss_before_cases_mb`` is what the seeds and the real records cost before
the first), intact records lost
(compact documents whose first record is damaged apart, as ``guesswork_*``: there the next
record's start is a guess), and, of ``--kills`` runs of ``simforge ingest --out`` killed at a random moment, how many left an
output that looks whole but is not. ``tests/trace/test_trace_fuzz.py`` runs it (slow mark).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import shared_data_dir
from tests.trace.hostile import (
    Case,
    boundaries,
    cases,
    hostile_corpus,
    real_records,
    run_case,
    seed_records,
)

HANG_SECONDS = 30.0
REPO = Path(__file__).resolve().parents[2]


def peak_rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def truncation_cases(records: dict[str, list[Any]], every: int = 1) -> list[Case]:
    """For the shortest record of each format: the record cut at each structural boundary,
    between two intact neighbours, as JSONL and as a pretty-printed array."""
    out: list[Case] = []
    for fmt, pool in sorted(records.items()):
        ordered = sorted(pool, key=lambda r: len(orjson.dumps(r)))
        record, neighbours = ordered[0], ordered[1:3] or ordered[:1] * 2
        text = orjson.dumps(record)
        for n, cut in enumerate(boundaries(text)[::every]):
            texts = [orjson.dumps(neighbours[0]), text[:cut], orjson.dumps(neighbours[-1])]
            if n % 2:
                data = b"\n".join(texts) + b"\n"
                name = f"cut{n}.jsonl"
            else:
                parts = [json.dumps(json.loads(t), indent=2).replace("\n", "\n  ")
                         .encode() if i != 1 else t for i, t in enumerate(texts)]
                data = b"[\n  " + b",\n  ".join(parts) + b"\n]\n"
                name = f"cut{n}.json"
            out.append(Case(name, data, fmt, n % 3 == 0, [neighbours[0], neighbours[-1]], 3))
    return out


def run_cases(all_cases: Iterable[Case], tmp: Path, cli_every: int = 10) -> dict[str, Any]:
    from typer.testing import CliRunner

    from simforge.cli import app

    runner = CliRunner()
    figures: dict[str, Any] = {"files": 0, "tracebacks": 0, "hangs": 0, "slowest_s": 0.0,
                               "records_read": 0, "records_kept": 0, "rejected": 0,
                               "intact_records": 0, "intact_lost": 0, "cli_runs": 0,
                               "guesswork_files": 0, "guesswork_intact": 0,
                               "guesswork_lost": 0,
                               "largest_input_bytes": 0, "examples": []}
    for number, case in enumerate(all_cases):
        figures["files"] += 1
        figures["largest_input_bytes"] = max(figures["largest_input_bytes"], len(case.data))
        start = time.perf_counter()
        try:
            result, lost = run_case(case, tmp)
        except Exception:
            figures["tracebacks"] += 1
            if len(figures["examples"]) < 5:
                figures["examples"].append(traceback.format_exc(limit=3))
            continue
        finally:
            elapsed = time.perf_counter() - start
            figures["slowest_s"] = max(figures["slowest_s"], elapsed)
            figures["hangs"] += elapsed > HANG_SECONDS
        figures["records_read"] += result.records_read
        figures["records_kept"] += result.records_kept
        figures["rejected"] += result.rejected
        if case.guesswork:
            figures["guesswork_files"] += 1
            figures["guesswork_intact"] += len(case.intact)
            figures["guesswork_lost"] += lost
            continue
        figures["intact_records"] += len(case.intact)
        figures["intact_lost"] += lost
        if lost and len(figures["examples"]) < 5:
            figures["examples"].append(f"lost {lost} intact record(s) of {case.name} "
                                       f"({case.fmt}, forced={case.forced})")
        if number % cli_every == 0:
            figures["cli_runs"] += 1
            out = tmp / "cli_out.jsonl"
            args = ["ingest", str(tmp / case.name), "--json", "--out", str(out),
                    "--quarantine", str(tmp / "cli_q.jsonl")]
            done = runner.invoke(app, args)
            if done.exception is not None and not isinstance(done.exception, SystemExit):
                figures["tracebacks"] += 1
                if len(figures["examples"]) < 5:
                    figures["examples"].append(repr(done.exception))
    return figures


_INGEST = ("import sys; sys.path.insert(0, {root!r}); from simforge.cli import main; "
           "sys.argv = ['simforge', 'ingest', {source!r}, '--out', {out!r}, '--json']; main()")


def kill_runs(kills: int, tmp: Path, rng: random.Random) -> dict[str, Any]:
    """``simforge ingest --out`` killed at random moments over a previous output: what is at
    the output's name afterwards must be the previous output or the complete new one."""
    source = tmp / "big.jsonl"
    pool = [r for rs in (real_records(shared_data_dir()) or seed_records()).values() for r in rs]
    with source.open("wb") as f:
        for i in range(max(600, 40_000 // max(1, len(pool)))):
            f.write(orjson.dumps(pool[i % len(pool)]) + b"\n")
    out = tmp / "kill_out.jsonl"
    reference = tmp / "reference.jsonl"
    code = _INGEST.format(root=str(REPO), source=str(source), out=str(reference))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=600)
    full = time.perf_counter() - started
    complete = reference.read_bytes()
    figures = {"kill_runs": 0, "partial_outputs": 0, "previous_kept": 0, "completed": 0,
               "full_run_s": round(full, 2)}
    for _ in range(kills):
        previous = b'{"previous": true}\n'
        out.write_bytes(previous)
        code = _INGEST.format(root=str(REPO), source=str(source), out=str(out))
        process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, full * 1.1))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        figures["kill_runs"] += 1
        now = out.read_bytes() if out.exists() else b""
        if now == previous:
            figures["previous_kept"] += 1
        elif now == complete:
            figures["completed"] += 1
        else:
            figures["partial_outputs"] += 1
        for leftover in tmp.glob(".kill_out.jsonl.*.tmp"):
            leftover.unlink()
    return figures


def _scratch() -> str | None:
    """A RAM-backed folder where there is one: every output is fsynced before its rename, and
    thousands of fsyncs on a disk cost minutes of waiting (no CPU)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def campaign(count: int, seed: int, kills: int) -> dict[str, Any]:
    rng = random.Random(seed)
    seeds = seed_records()
    real = real_records(shared_data_dir())
    generated: Iterator[Case] = chain(
        cases(seed, count * 2 // 3 if real else count, seeds),
        cases(seed + 1, count - count * 2 // 3, real) if real else iter(()),
        iter(truncation_cases({**seeds, **real})),
        (Case(p.name, p.read_bytes(), "openai", False) for p in hostile_corpus()),
    )
    baseline = peak_rss_mb()
    with tempfile.TemporaryDirectory(dir=_scratch()) as folder:
        tmp = Path(folder)
        figures = run_cases(generated, tmp)
        peak = peak_rss_mb()
        figures.update(kill_runs(kills, tmp, rng) if kills else {})
    figures["peak_rss_mb"] = round(peak, 1)
    figures["rss_before_cases_mb"] = round(baseline, 1)
    figures["slowest_s"] = round(figures["slowest_s"], 3)
    figures["real_data"] = bool(real)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills", type=int, default=6)
    args = parser.parse_args()
    start = time.process_time()
    figures = campaign(args.cases, args.seed, args.kills)
    figures["cpu_s"] = round(time.process_time() - start, 1)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
