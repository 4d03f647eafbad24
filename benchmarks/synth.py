"""Synthesis at scale: 10,000 synthetic episodes over 300 tools and five entity types; and,
with ``--real``, fidelity on the real traces of ``../shared/data`` over five split seeds.

    .venv/bin/python benchmarks/synth.py [--episodes 10000] [--tools 300]
    .venv/bin/python benchmarks/synth.py --real [--seeds 5] [--data ../shared/data]

Episodes are generated in process (reads, field writes, lookups, a calculator, errors on unknown
ids) over a 10,000-row snapshot written to a temporary folder, then ``synthesize`` runs with a
rich progress bar. Prints wall time per stage, peak RSS and the pack's size.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from simforge.synth.pipeline import synthesize
from simforge.trace.episode import Episode, Message, Outcome, Source, ToolCall

ENTITIES = ["customer", "order", "ticket", "invoice", "device"]
STATUSES = ["open", "pending", "closed", "on_hold"]


def snapshot(rows: int) -> dict[str, dict[str, dict[str, Any]]]:
    rng = random.Random(0)
    out = {}
    for e in ENTITIES:
        table = {}
        for n in range(rows):
            id = f"{e}_{n}"
            table[id] = {
                f"{e}_id": id,
                "status": rng.choice(STATUSES),
                "email": f"{e}{n}@example.com",
                "amount": round(rng.uniform(1, 500), 2),
                "tags": [rng.choice("abc")],
                "address": {"city": rng.choice(["Oslo", "Lima", "Pune"]), "zip": f"{n:05d}"},
            }
        out[f"{e}s"] = table
    return out


def tools(n_tools: int) -> list[tuple[str, str, str]]:
    """(name, entity, kind) for ``n_tools`` tools spread over the entities."""
    kinds = ["get", "set_status", "find_by_email", "set_city", "calc"]
    out = []
    i = 0
    while len(out) < n_tools:
        e = ENTITIES[i % len(ENTITIES)]
        kind = kinds[(i // len(ENTITIES)) % len(kinds)]
        out.append((f"{kind}_{e}_{i // (len(ENTITIES) * len(kinds))}", e, kind))
        i += 1
    return out


def episodes(
    n: int, tool_list: list[tuple[str, str, str]], tables: dict[str, Any]
) -> list[Episode]:
    rng = random.Random(1)
    state: dict[tuple[str, str], dict[str, Any]] = {}
    out = []
    for k in range(n):
        calls = []
        for j in range(8):
            name, e, kind = rng.choice(tool_list)
            table = tables[f"{e}s"]
            id = f"{e}_{rng.randrange(len(table) + 50)}"
            row = state.get((e, id)) or table.get(id)
            args: dict[str, Any]
            result: Any
            error = None
            if kind == "calc":
                a, b = rng.randint(1, 99), rng.randint(1, 99)
                args, result = {"expression": f"{a} + {b}"}, str(float(a + b))
            elif kind == "find_by_email":
                args = {
                    "email": f"{id.replace('_', '')}@example.com" if row is None else row["email"]
                }
                result = row[f"{e}_id"] if row else "Error: not found"
                error = None if row else result
            elif row is None:
                args = {f"{e}_id": id, **({"status": "closed"} if kind == "set_status" else {})}
                if kind == "set_city":
                    args["city"] = "Rome"
                result = error = f"Error: {e} not found"
            elif kind == "get":
                args, result = {f"{e}_id": id}, row
            elif kind == "set_status":
                status = rng.choice(STATUSES)
                args = {f"{e}_id": id, "status": status}
                result = {**row, "status": status}
            else:
                city = rng.choice(["Rome", "Kyiv", "Quito"])
                args = {f"{e}_id": id, "city": city}
                result = {**row, "address": {**row["address"], "city": city}}
            if error is None and isinstance(result, dict):
                state[(e, id)] = result
            calls.append(
                ToolCall(
                    call_id=f"{k}-{j}",
                    tool=name,
                    args=args,
                    result=result,
                    error=error,
                    message_index=j + 1,
                )
            )
        state.clear()
        messages = [Message(role="user", content=f"request {k}")]
        out.append(
            Episode(
                id=f"bench-{k}",
                source=Source(format="native"),
                messages=messages,
                tool_calls=calls,
                outcome=Outcome(success=True),
            )
        )
    return out


REAL = {
    "retail": (
        "tau2-bench/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json",
        "tau-bench/envs/retail/data",
    ),
    "airline": (
        "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json",
        "tau-bench/envs/airline/data",
    ),
    "telecom": (
        "tau2-bench/results/gpt-4.1_telecom_default_gpt-4.1_1trials.json",
        "tau2-bench/domains/telecom",
    ),
    "telecom no-user": (
        "tau2-bench/results/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json",
        "tau2-bench/domains/telecom",
    ),
}
OLDER = "tau-bench/historical_trajectories/gpt-4o-airline.json"


def _cell(bucket: dict[str, Any]) -> str:
    if not bucket["calls"]:
        return "-"
    return f"{bucket['exact']}/{bucket['calls']} = {bucket['exact'] / bucket['calls']:.2f}"


def _reward(bucket: dict[str, Any]) -> str:
    c = bucket["confusion"]
    rate = f" = {bucket['rate']:.2f}" if bucket["rate"] is not None else ""
    return (
        f"{bucket['agree']}/{bucket['episodes']}{rate} "
        f"({c['hit']}/{c['missed_success']}/{c['false_success']}/{c['correct_fail']}/"
        f"{c['unscored']})"
    )


def real(shared: Path, seeds: int) -> None:
    """The FIDELITY.md tables: per domain and split seed, then every episode learned from,
    then the older tau-bench airline trajectories against a pack of the tau2 ones."""
    from simforge.audit.fidelity import fidelity, sweep

    print(
        "| domain | seed | learned / held out | reads | writes | errors | reward "
        "(hit/missed/false/correct-fail/unscored) | synth s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for domain, (traces, data) in REAL.items():
            rows = sweep(
                [shared / traces], Path(tmp) / domain, data=[shared / data], seeds=range(seeds)
            )
            for row in rows:
                print(
                    f"| {domain} | {row['seed']} | {row['train']} / {row['held_out']} | "
                    f"{_cell(row['reads'])} | {_cell(row['writes'])} | {_cell(row['errors'])} "
                    f"| {_reward(row['reward'])} | {row['seconds']} |",
                    flush=True,
                )
        print()
        print("| domain | all episodes learned: reads | writes | errors | reward | synth s |")
        print("|---|---|---|---|---|---|")
        for domain, (traces, data) in REAL.items():
            out = Path(tmp) / f"{domain}-all"
            started = time.perf_counter()
            synthesize([shared / traces], out, data=[shared / data])
            seconds = round(time.perf_counter() - started, 2)
            result = fidelity(out, [shared / traces])
            print(
                f"| {domain} | {_cell(result['reads'])} | {_cell(result['writes'])} | "
                f"{_cell(result['errors'])} | {_reward(result['reward'])} | {seconds} |",
                flush=True,
            )
        out = Path(tmp) / "airline-all"
        conditions = (
            ("without drift", False, False),
            ("with schema drift and error wording", True, False),
            ("with schema drift, error wording and behaviour, cross-fitted", True, True),
        )
        for label, drift, behaviour in conditions:
            result = fidelity(out, [shared / OLDER], drift=drift, behaviour=behaviour)
            print(
                f"\ntau-bench gpt-4o airline against the tau2 airline pack ({label}): reads "
                f"{_cell(result['reads'])}, writes {_cell(result['writes'])}, errors "
                f"{_cell(result['errors'])}"
            )
        print(f"drift learned: {json.dumps(result.get('drift'))}")
        print(f"behaviour learned per half: {json.dumps(result.get('drift_behaviour'))}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--tools", type=int, default=300)
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--real", action="store_true", help="fidelity on ../shared/data")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    opts = parser.parse_args()
    if opts.real:
        real(opts.data, opts.seeds)
        return
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        tables = snapshot(opts.rows)
        data = root / "data"
        data.mkdir()
        for name, table in tables.items():
            (data / f"{name}.json").write_text(json.dumps(table))
        eps = episodes(opts.episodes, tools(opts.tools), tables)
        generated = time.perf_counter() - started
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as bar:
            ids: dict[str, Any] = {}

            def tick(stage: str, done: int, total: int) -> None:
                if stage not in ids:
                    ids[stage] = bar.add_task(stage, total=total or None)
                bar.update(ids[stage], completed=done, total=total or None)

            t0 = time.perf_counter()
            report = synthesize([], root / "pack", data=[data], episodes=eps, progress=tick)
            synth_s = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size = sum(p.stat().st_size for p in (root / "pack").iterdir()) / 2**20
        kinds: dict[str, int] = {}
        for kind in report.handlers.values():
            kinds[kind] = kinds.get(kind, 0) + 1
        calls = sum(len(e.tool_calls) for e in eps)
        print(
            json.dumps(
                {
                    "episodes": report.episodes,
                    "tool_calls": calls,
                    "tools": report.tools,
                    "entities": report.entities,
                    "handlers": kinds,
                    "generate_s": round(generated, 2),
                    "synth_s": round(synth_s, 2),
                    "peak_rss_mib": round(peak, 1),
                    "pack_mib": round(size, 2),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
