"""The audit of synthesized packs: the shipped example traces and the real traces of
``../shared/data``, each synthesized and audited with every check (AUDIT.md, "Synthesized
packs").

    .venv/bin/python benchmarks/synth_audit.py [--out /tmp/synth-audit] [--data ../shared/data]
        [--seeds 3] [--fault-seeds 10] [--only examples,retail,...] [--json FILE]

Per pack: the tasks, how many the audit keeps and rejects (by check), the tasks synthesis left
out because nothing in them proves the work, and each adversary's mean and best reward over
every task and over the kept ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # measure the checkout this file is in
EXAMPLES = ROOT / "examples" / "traces" / "acme-otlp.json"
PACKS: dict[str, tuple[str, str | None, float]] = {
    # name: (traces, snapshot, holdout), the paths under --data
    "retail": (
        "tau2-bench/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json",
        "tau-bench/envs/retail/data",
        0.25,
    ),
    "airline": (
        "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json",
        "tau-bench/envs/airline/data",
        0.25,
    ),
    "telecom": (
        "tau2-bench/results/gpt-4.1_telecom_default_gpt-4.1_1trials.json",
        "tau2-bench/domains/telecom",
        0.25,
    ),
    "telecom-no-user": (
        "tau2-bench/results/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json",
        "tau2-bench/domains/telecom",
        0.25,
    ),
    "tau-bench-airline": (
        "tau-bench/historical_trajectories/gpt-4o-airline.json",
        "tau-bench/envs/airline/data",
        0.25,
    ),
}


def audit_pack(scenario: Path, seeds: int, fault_seeds: int) -> dict[str, Any]:
    from simforge.audit.context import AuditConfig
    from simforge.audit.runner import audit
    from simforge.scenario.registry import ScenarioRegistry

    loaded = ScenarioRegistry.load_path(scenario)
    report = audit([loaded], AuditConfig(seeds=seeds, fault_seeds=fault_seeds))
    data = report.to_json()
    rewards: dict[str, dict[str, list[float]]] = {}
    for task in report.tasks:
        for result in task.results:
            for name, reward in result.details.get("rewards", {}).items():
                entry = rewards.setdefault(name, {"all": [], "kept": []})
                entry["all"].append(reward)
                if task.kept:
                    entry["kept"].append(reward)

    def stats(values: list[float]) -> dict[str, float] | None:
        return {"mean": sum(values) / len(values), "max": max(values)} if values else None

    rejected_by: dict[str, int] = {}
    for task in report.tasks:
        for result in task.results:
            if not result.passed:
                rejected_by[result.check] = rejected_by.get(result.check, 0) + 1
    return {
        "tasks": data["tasks"],
        "kept": data["kept"],
        "rejected": data["rejected"],
        "rejected_by": rejected_by,
        "adversaries": {
            name: {"all": stats(v["all"]), "kept": stats(v["kept"])}
            for name, v in rewards.items()
        },
        "rejections": data["rejections"],
    }


def main() -> None:
    from simforge.synth.pipeline import synthesize

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/synth-audit"))
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--fault-seeds", type=int, default=10)
    parser.add_argument("--only", default="", help="Comma-separated pack names.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()
    chosen = set(filter(None, args.only.split(",")))
    results: dict[str, Any] = {}
    for name in ["examples", *PACKS]:
        if chosen and name not in chosen:
            continue
        out = args.out / name
        start = time.process_time()
        if name == "examples":
            report = synthesize([EXAMPLES], out)
        else:
            traces, snapshot, holdout = PACKS[name]
            if not (args.data / traces).is_file():
                print(f"{name}: {args.data / traces} not present, skipped")
                continue
            data = [args.data / snapshot] if snapshot else []
            report = synthesize([args.data / traces], out, data=data, holdout=holdout, seed=0)
        row = audit_pack(out / "scenario.yaml", args.seeds, args.fault_seeds)
        row["synth"] = {
            "tasks": report.tasks,
            "gold_tasks": report.gold_tasks,
            "eval_tasks": report.eval_tasks,
            "unproven": list(getattr(report, "unproven", [])),
        }
        row["cpu_seconds"] = round(time.process_time() - start, 1)
        results[name] = row
        adv = ", ".join(
            f"{a} {s['all']['mean']:.3f}/{s['all']['max']:.2f}"
            for a, s in row["adversaries"].items()
            if s["all"] and s["all"]["max"] > 0
        )
        print(
            f"{name}: {row['tasks']} tasks, {row['kept']} kept, rejected by {row['rejected_by']}; "
            f"left out by synthesis {len(row['synth']['unproven'])}; "
            f"adversaries paid (mean/max over all tasks): {adv or 'none'}; "
            f"{row['cpu_seconds']} s CPU",
            flush=True,
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
