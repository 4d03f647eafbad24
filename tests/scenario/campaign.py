"""The scenario campaign: mutated scenario and fault-profile files through loading and a first
episode, and SIGKILLs of `stress` with the resume after each; the figures.

    python -m tests.scenario.campaign [--cases 1000] [--seed 0] [--kills 4]

Run from the repository root (``PYTHONPATH=.``). Each case is one shipped scenario (the acme
scenarios and the test fixtures) or one fault profile of the library, mutated once: a byte
flipped, the file cut short, a line dropped, doubled or swapped, a value replaced by a huge
integer, a NaN, a null, an empty list, deep nesting, an alias bomb, bytes that are not UTF-8 or
a tab. A scenario is then made into an environment, reset and played one step (a final
answer, which scores it); a profile is loaded and played under the mini scenario. Prints one
JSON object:

- ``cases``, ``refused`` (a :class:`~simforge.errors.UserError`, what bad input must give) and
  ``accepted`` (the mutation left a valid file);
- ``tracebacks``: any other exception, with the first few (file, mutation, error);
- ``hangs``: a case over 30 s (``SIGALRM``), and the slowest case;
- ``peak_rss_mb`` of this process (every file is under 1 MB);
- ``kills``: ``--kills`` runs of ``simforge stress`` (two workers, SQLite) killed with SIGKILL
  at a random moment, each resumed: episodes stored before the kill and lost, cells stored
  twice, and whether every resumed run came out complete.

``tests/scenario/test_campaign.py`` runs a short one (slow mark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simforge.runs.store import RunStore
from tests.trace.campaign import peak_rss_mb

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "tests" / "fixtures" / "scenarios" / "mini.yaml"
HANG_SECONDS = 30
SIMFORGE = [sys.executable, "-c", "from simforge.cli import main; main()"]


def originals() -> list[tuple[str, Path]]:
    """``(kind, path)`` of every file the campaign mutates."""
    scenarios = sorted((REPO / "scenarios").rglob("*.yaml"))
    scenarios += sorted((REPO / "tests" / "fixtures" / "scenarios").glob("*.yaml"))
    profiles = sorted((REPO / "simforge" / "faults" / "profiles").glob("*.yaml"))
    return [("scenario", p) for p in scenarios] + [("profile", p) for p in profiles]


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _bomb() -> str:
    lines = ['b0: &b0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"b{i}: &b{i} [" + ",".join([f"*b{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "{" + ", ".join(lines) + "}"


SCALARS = [str(2**70), str(-(2**64)), ".nan", "-.inf", "null", "[]", "{}", "''", _deep(2_000),
           _deep(40), _bomb(), "\u202e\u0000", "!!python/object:os.system [ls]", "0x7fffffffffffffff"]


def _replace_value(lines: list[str], rng: random.Random) -> list[str]:
    slots = [i for i, line in enumerate(lines) if ":" in line and not line.lstrip().startswith("#")]
    if not slots:
        return lines
    i = rng.choice(slots)
    key = lines[i].split(":", 1)[0]
    return [*lines[:i], f"{key}: {rng.choice(SCALARS)}", *lines[i + 1:]]


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of a YAML file: ``(its name, the bytes)``."""
    text = data.decode("utf-8")
    lines = text.splitlines()
    how = rng.choice(["flip", "cut", "drop-line", "double-line", "swap-lines", "value",
                      "value", "value", "not-utf8", "tab", "key"])
    if how == "flip" and data:
        i = rng.randrange(len(data))
        return how, data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    if how == "cut":
        return how, data[: rng.randrange(len(data) + 1)]
    if how == "not-utf8":
        i = rng.randrange(len(data) + 1)
        return how, data[:i] + rng.choice([b"\xff", b"\xc3", b"\xe9", b"\x80\x80"]) + data[i:]
    if lines:
        i = rng.randrange(len(lines))
        if how == "drop-line":
            lines = lines[:i] + lines[i + 1:]
        elif how == "double-line":
            lines = lines[: i + 1] + lines[i:]
        elif how == "swap-lines" and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "tab":
            lines[i] = "\t" + lines[i]
        elif how == "key" and ":" in lines[i]:
            key, rest = lines[i].split(":", 1)
            lines[i] = key + rng.choice(["x", "_", "s", ""]) + "z:" + rest
        elif how == "value":
            lines = _replace_value(lines, rng)
    return how, ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@dataclass
class Outcome:
    kind: str
    source: str
    mutation: str
    result: str  # refused | accepted | traceback | hang
    seconds: float
    error: str = ""


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def ring(_signum: int, _frame: Any) -> None:
        raise _Hang

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _play_scenario(path: Path) -> None:
    from simforge.env import make

    env = make(str(path))
    env.reset(seed=0)
    env.step({"final_answer": "done"})


def _play_profile(path: Path) -> None:
    from simforge.env import make

    env = make(str(MINI), faults=str(path))  # a profile by path, as `run --faults FILE` takes it
    env.reset(seed=0)
    env.step({"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0001"}}]})
    env.step({"final_answer": "done"})


PLAY: dict[str, Callable[[Path], None]] = {"scenario": _play_scenario, "profile": _play_profile}


def run_case(kind: str, source: Path, mutation: str, data: bytes, folder: Path) -> Outcome:
    from simforge.errors import UserError

    path = folder / source.name
    path.write_bytes(data)
    t0 = time.monotonic()
    try:
        with _deadline(HANG_SECONDS):
            PLAY[kind](path)
        result, error = "accepted", ""
    except _Hang:
        result, error = "hang", ""
    except UserError as exc:
        result, error = "refused", str(exc).splitlines()[0][:200]
    except Exception:
        result, error = "traceback", traceback.format_exc(limit=6)[-1500:]
    return Outcome(kind, str(source.relative_to(REPO)), mutation, result,
                   time.monotonic() - t0, error)


def mutated_files(count: int, seed: int, tmp: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    files = originals()
    outcomes: list[Outcome] = []
    for n in range(count):
        kind, source = files[n % len(files)]
        mutation, data = mutate(source.read_bytes(), rng)
        folder = tmp / f"case-{n}"
        folder.mkdir()
        outcomes.append(run_case(kind, source, mutation, data, folder))
        if (n + 1) % 100 == 0:
            print(f"{n + 1}/{count} mutated files", file=sys.stderr, flush=True)
    slowest = max(outcomes, key=lambda o: o.seconds)
    bad = [o for o in outcomes if o.result in ("traceback", "hang")]
    return {
        "cases": len(outcomes),
        "scenarios": sum(o.kind == "scenario" for o in outcomes),
        "profiles": sum(o.kind == "profile" for o in outcomes),
        "refused": sum(o.result == "refused" for o in outcomes),
        "accepted": sum(o.result == "accepted" for o in outcomes),
        "tracebacks": sum(o.result == "traceback" for o in outcomes),
        "hangs": sum(o.result == "hang" for o in outcomes),
        "slowest_s": round(slowest.seconds, 2),
        "slowest": f"{slowest.source} ({slowest.mutation})",
        "examples": [{"file": o.source, "mutation": o.mutation, "error": o.error}
                     for o in bad[:5]],
    }


def _stored(url: str) -> tuple[str | None, list[str]]:
    try:
        store = RunStore(url, create=False)
    except Exception:
        return None, []
    try:
        runs = store.runs()
        if not runs:
            return None, []
        run_id = runs[0]["id"]
        return run_id, [e["key"] for e in store.episodes(run_id, details=False)]
    finally:
        store.close()


def kill_runs(kills: int, seed: int, tmp: Path) -> dict[str, Any]:
    """``simforge stress`` killed with SIGKILL at a random moment, then resumed, ``kills``
    times: what was stored before the kill must all be there after, once."""
    rng = random.Random(seed)
    lost = doubled = complete = 0
    before_kill: list[int] = []
    for k in range(kills):
        url = f"sqlite:///{tmp / f'kill-{k}.db'}"
        cmd = [*SIMFORGE, "stress", str(MINI), "--policy", "random", "--faults",
               "flaky-network", "--seeds", "300", "--workers", "2", "--store", url]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        run_id, keys = None, []
        wait_for = rng.randint(1, 400)  # episodes stored before the kill
        while time.monotonic() < deadline and proc.poll() is None and len(keys) < wait_for:
            time.sleep(0.02)
            run_id, keys = _stored(url)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        run_id, keys = _stored(url)
        before_kill.append(len(keys))
        if run_id is None:
            continue
        subprocess.run([*SIMFORGE, "stress", "--resume", run_id, "--workers", "2",
                        "--store", url], capture_output=True, timeout=600, check=False)
        _, after = _stored(url)
        lost += len(set(keys) - set(after))
        doubled += len(after) - len(set(after))
        store = RunStore(url, create=False)
        try:
            complete += store.run(run_id)["status"] == "complete"
        finally:
            store.close()
        print(f"{k + 1}/{kills} kills", file=sys.stderr, flush=True)
    return {"kills": kills, "stored_before_kill": before_kill, "lost": lost,
            "stored_twice": doubled, "resumed_complete": complete}


def campaign(count: int, seed: int, kills: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="simforge-scenario-campaign-") as tmp:
        report = mutated_files(count, seed, Path(tmp))
        report["peak_rss_mb"] = round(peak_rss_mb(), 1)
        if kills:
            report["stress_kills"] = kill_runs(kills, seed, Path(tmp))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills", type=int, default=4)
    args = parser.parse_args()
    print(json.dumps(campaign(args.cases, args.seed, args.kills)))


if __name__ == "__main__":
    main()
