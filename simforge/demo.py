"""The demo: the whole pipeline on the shipped examples, in one place.

Example production traces are ingested, a pack is synthesized from them, and then every
hand-written scenario and the synthesized one are run with three baseline policies (the
reference solution played by a careful, retrying client; a no-op; a cheater), without faults and
under a fault profile, paired by seed. Every episode is scored by the validators and stored in a
run store; the table shows the rewards side by side with the validators that failed, and an HTML
report of every run is written next to the store (``report.html``, the careful client's, lists
them all and links to the others, in ``reports/``). When a new stage joins the
pipeline it joins here, so that the demo stays the one place where all of it is shown.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from simforge.config import NotFound
from simforge.paths import resource_dirs
from simforge.scenario import ScenarioRegistry, default_registry

POLICIES = ("retrying", "noop", "cheater")
"""The reference solution played as a careful client would (retrying transient errors), so that
its faulty column shows whether a task is solvable under the profile; then the two floors."""
FAULTS = "flaky-network"
"""Declared solvable by every shipped scenario; the synthesized one is run under it as well."""

Advance = Callable[[str, int, int], None]
"""``advance(stage, done, total)`` for a progress display."""


@dataclass
class DemoResult:
    out: Path
    ingest: dict[str, Any]
    synth: dict[str, Any]
    episodes: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, str] = field(default_factory=dict)
    report: Path | None = None
    store: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "ingest": self.ingest,
            "synth": self.synth,
            "runs": self.runs,
            "store": self.store,
            "report": str(self.report) if self.report else None,
            "episodes": self.episodes,
        }


def example_traces() -> list[Path]:
    found = [
        p
        for root in resource_dirs("examples")
        for p in sorted((root / "traces").glob("*"))
        if p.suffix in (".json", ".jsonl", ".gz")
    ]
    return [p for p in found if "otlp" in p.name] or found


def run_demo(
    out: Path,
    *,
    seeds: int = 1,
    workers: int = 0,
    registry: ScenarioRegistry = default_registry,
    advance: Advance | None = None,
) -> DemoResult:
    from simforge.report.html import write_html
    from simforge.report.metrics import summarize
    from simforge.runs.matrix import RunConfig
    from simforge.runs.runner import execute, prepare
    from simforge.runs.store import RunStore
    from simforge.synth.build import synthesize
    from simforge.trace import ingest

    tick = advance or (lambda stage, done, total: None)
    out.mkdir(parents=True, exist_ok=True)
    traces = example_traces()
    if not traces:
        raise NotFound("no example traces found (is the examples/ folder present?)")
    tick("ingesting traces", 0, 1)
    ingested = ingest(traces, quarantine=out / "quarantine.jsonl", keep=True)
    tick("ingesting traces", 1, 1)

    pack_dir = out / "synth-pack"
    shutil.rmtree(pack_dir, ignore_errors=True)
    tick("synthesizing a pack", 0, 1)
    synth = synthesize([], pack_dir, episodes=ingested.collected, name="examples")
    tick("synthesizing a pack", 1, 1)

    synth_ref = str(pack_dir / "scenario.yaml")
    synthesized = ScenarioRegistry.load_path(Path(synth_ref)).scenario
    hand_written = registry.ids()
    if not hand_written:
        raise NotFound("no scenarios found (is the scenarios/ folder present?)")
    # a synthesized task whose source episode did not succeed has no gold outcome to score
    gold = [t.id for t in synthesized.tasks if t.metadata.get("gold", True)]
    store_path = out / "runs.db"
    store_path.unlink(missing_ok=True)
    store = RunStore(f"sqlite:///{store_path}")
    result = DemoResult(
        out=out,
        ingest={k: v for k, v in ingested.to_json().items() if k != "by_tool"},
        synth=_synth_summary(synth, pack_dir),
        store=f"sqlite:///{store_path}",
    )
    profiles = ["none", FAULTS]
    prepared = {}
    for policy in POLICIES:
        prepared[policy] = prepare(
            store, RunConfig(scenarios=hand_written, policy=policy, profiles=profiles, seeds=seeds)
        )
        if gold:
            config = RunConfig(
                scenarios=[synth_ref], policy=policy, profiles=profiles, seeds=seeds, tasks=gold
            )
            prepared[f"{policy} (synthesized)"] = prepare(store, config)
    total = sum(len(p.todo) for p in prepared.values())
    done = 0

    def on_record(record: dict[str, Any], _fresh: bool) -> None:
        nonlocal done
        done += 1
        result.episodes.append(_row(record))
        tick("simulating and scoring", done, total)

    for name, run in prepared.items():
        keep = name == POLICIES[0]
        execute(store, run, workers=workers, trajectories=keep, on_record=on_record)
        result.runs[name] = run.run_id
    # one report per run, each listing all of them; report.html is the careful client's
    summaries = {}
    for name, run_id in result.runs.items():
        episodes = store.episodes(run_id)
        summaries[name] = (summarize(episodes, run_id=run_id), store.run(run_id), episodes)
    files = {name: "report.html" if name == POLICIES[0] else f"reports/{_slug(name)}.html"
             for name in result.runs}
    for name, (summary, run_row, episodes) in summaries.items():
        here = (out / files[name]).parent
        others = [
            {"name": other, "run_id": s["run_id"], "episodes": s["episodes"],
             "invalid": s["invalid"], "pass_rate": s["pass_rate"], "mean_reward": s["mean_reward"],
             "href": None if other == name
             else os.path.relpath(out / files[other], start=here)}
            for other, (s, _, _) in summaries.items()
        ]
        path = write_html(out / files[name], summary, run_row, episodes, others)
        if name == POLICIES[0]:
            result.report = path
    store.close()
    return result


def _slug(name: str) -> str:
    """``cheater (synthesized)`` -> ``cheater-synthesized``."""
    return "-".join("".join(c if c.isalnum() else " " for c in name).split())


def _synth_summary(report: Any, pack_dir: Path) -> dict[str, Any]:
    return {
        "pack": str(pack_dir),
        "episodes": report.episodes,
        "learned_from": report.train,
        "tools": report.tools,
        "entities": len(report.entities),
        "tasks": report.tasks,
        "gold_tasks": report.gold_tasks,
    }


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario": record["scenario"],
        "task": record["task"],
        "seed": record["seed"],
        "policy": record["policy"],
        "faults": record["profile"],
        "reward": record["reward"],
        "passed": record["passed"],
        "terminated": record["terminated"],
        "truncated": record["truncated"],
        "steps": record["steps"],
        "sim_time": record["sim_time"],
        "failed": record["failed"],
        "invalid_reason": record["invalid_reason"],
        "faults_injected": [
            {k: f[k] for k in ("kind", "tool", "call_index", "sim_time")} for f in record["faults"]
        ],
    }


def demo_table(episodes: list[dict[str, Any]]) -> Table:
    """One row per (scenario, task, seed): the careful client without and with faults, the
    no-op and the cheater side by side, and which validators failed for whom."""
    rows: dict[tuple[str, str, int], dict[tuple[str, str], dict[str, Any]]] = {}
    for e in episodes:
        rows.setdefault((e["scenario"], e["task"], e["seed"]), {})[(e["policy"], e["faults"])] = e
    careful, noop, cheater = POLICIES
    table = Table(
        title="simforge demo: every task, scored, without and with faults", title_justify="left"
    )
    for col, justify in [
        ("scenario", "left"),
        ("task", "left"),
        ("steps", "right"),
        ("sim time", "right"),
        (f"{careful}", "right"),
        (f"{careful} + {FAULTS}", "right"),
        ("noop", "right"),
        ("cheater", "right"),
        ("failed validators", "left"),
    ]:
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for (scenario, task, _seed), by in sorted(rows.items()):
        clean = by.get((careful, "none"))
        faulty = by.get((careful, FAULTS))
        failed = []
        for (policy, profile), e in sorted(by.items()):
            if e["failed"] or e["reward"] is None:
                what = ", ".join(e["failed"]) or f"invalid: {e['invalid_reason']}"
                failed.append(f"{policy}{'' if profile == 'none' else '+faults'}: {what}")
        table.add_row(
            scenario.rsplit("/", 1)[-1] if scenario.endswith(".yaml") else scenario,
            task if len(task) <= 28 else task[:27] + "…",
            str(clean["steps"]) if clean else "",
            f"{clean['sim_time']:.1f} s" if clean else "",
            _reward(clean),
            _reward(faulty, fired=True),
            _reward(by.get((noop, "none"))),
            _reward(by.get((cheater, "none"))),
            "; ".join(failed),
        )
    return table


def _reward(e: dict[str, Any] | None, *, fired: bool = False) -> str:
    if e is None:
        return ""
    if e["reward"] is None:
        return "[yellow]invalid[/]"
    color = "green" if e["reward"] >= 0.999 else "red"
    extra = f" ({len(e['faults_injected'])} faults)" if fired and e["faults_injected"] else ""
    return f"[{color}]{e['reward']:.2f}[/]{extra}"
