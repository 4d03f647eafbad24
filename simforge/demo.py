"""The demo: the whole pipeline on the shipped examples, in one place, showing what simforge is
for: how much a fault profile costs an agent, measured so that the number can be trusted.

Example production traces are ingested, a pack is synthesized from them, and then every
hand-written scenario and the synthesized one are run with four baseline policies, without
faults and under a fault profile, paired by seed: the reference solution played by a careful
client (retrying transient errors) and by one that gives up at the first error (``no-retry``),
then two floors (a no-op and a cheater). The two clients are played on 3 seeds x 2 trials per
task, and each fault kind of the profile is also played alone (``--attribute``), so the report
says which kind costs what. Every episode is scored by the validators and stored in a run
store; ``compare`` pairs the two clients cell by cell and says whether the gap is real.

Written next to the store: ``report.html`` (the client that does not retry: its drop under
faults with intervals, pass^k curves, the attributed fault kinds, every failed verdict with its
call and trajectory), ``compare.html`` (the two clients, paired), and ``reports/`` (every other
run), each page linking the others. The terminal gets a per-scenario summary that fits 80
columns. When a new stage joins the pipeline it joins here, so that the demo stays the one place
where all of it is shown.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from simforge.config import NotFound
from simforge.paths import resource_dirs
from simforge.scenario import ScenarioRegistry, default_registry

CAREFUL, CARELESS = "retrying", "no-retry"
POLICIES = (CAREFUL, CARELESS, "noop", "cheater")
"""The reference solution played by a careful client (retrying transient errors), so that its
faulty column shows whether a task is solvable under the profile; by a client that gives up at
the first error, so that the profile's cost shows; then the two floors."""
FAULTS = "flaky-network"
"""Declared solvable by every shipped scenario; the synthesized one is run under it as well."""
SEEDS, TRIALS = 3, 2
SUMMARY_LINES = 40
"""The terminal summary's most lines (it fits 80 columns too)."""

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
    compare_page: Path | None = None
    store: str = ""
    seeds: int = SEEDS
    trials: int = TRIALS
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per run name: pass rate, by profile, attribution, noise (the report's own figures)."""
    compare: dict[str, Any] = field(default_factory=dict)
    """``simforge compare`` of the careful client (A) and the careless one (B)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "ingest": self.ingest,
            "synth": self.synth,
            "runs": self.runs,
            "store": self.store,
            "seeds": self.seeds,
            "trials": self.trials,
            "report": str(self.report) if self.report else None,
            "compare_report": str(self.compare_page) if self.compare_page else None,
            "summaries": self.summaries,
            "compare": {k: self.compare.get(k) for k in (
                "verdict", "significant", "pass_rate", "mean_reward", "mcnemar",
                "shared_cells", "warnings")},
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
    seeds: int = SEEDS,
    trials: int = TRIALS,
    workers: int = 0,
    registry: ScenarioRegistry = default_registry,
    advance: Advance | None = None,
) -> DemoResult:
    from simforge.report.compare import compare
    from simforge.report.html import write_compare_html, write_html
    from simforge.report.stored import load_run
    from simforge.runs.matrix import RunConfig
    from simforge.runs.runner import execute, prepare
    from simforge.runs.store import RunStore
    from simforge.synth.pipeline import synthesize
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
        seeds=seeds,
        trials=trials,
    )
    profiles = ["none", FAULTS]
    prepared = {}
    for policy in POLICIES:
        client = policy in (CAREFUL, CARELESS)  # the floors need one trial and no attribution
        k = trials if client else 1
        prepared[policy] = prepare(store, RunConfig(
            scenarios=hand_written, policy=policy, profiles=profiles, seeds=seeds, trials=k,
            attribute=client,
        ))
        if gold:
            config = RunConfig(scenarios=[synth_ref], policy=policy, profiles=profiles,
                               seeds=seeds, trials=k, tasks=gold)
            prepared[f"{policy} (synthesized)"] = prepare(store, config)
    total = sum(len(p.todo) for p in prepared.values())
    done = 0

    def on_record(record: dict[str, Any], _fresh: bool) -> None:
        nonlocal done
        done += 1
        result.episodes.append(_row(record))
        tick("simulating and scoring", done, total)

    for name, run in prepared.items():
        keep = name.split(" ")[0] in (CAREFUL, CARELESS)  # the two clients' trajectories
        execute(store, run, workers=workers, trajectories=keep, on_record=on_record)
        result.runs[name] = run.run_id
    tick("reporting", 0, len(result.runs))
    loaded = {name: load_run(store, run_id) for name, run_id in result.runs.items()}
    result.compare = compare(loaded[CAREFUL][1], loaded[CARELESS][1],
                             a_run=loaded[CAREFUL][0], b_run=loaded[CARELESS][0])
    files = {name: "report.html" if name == CARELESS else f"reports/{_slug(name)}.html"
             for name in result.runs}
    result.compare_page = write_compare_html(
        out / "compare.html", result.compare,
        links={"a": files[CAREFUL], "b": files[CARELESS]})
    for n, (name, (run_row, episodes, trajectories, summary)) in enumerate(loaded.items()):
        result.summaries[name] = _figures(summary)
        here = (out / files[name]).parent
        others = [
            {"name": other, "run_id": s["run_id"], "episodes": s["episodes"],
             "invalid": s["invalid"], "pass_rate": s["pass_rate"], "mean_reward": s["mean_reward"],
             "href": None if other == name
             else os.path.relpath(out / files[other], start=here)}
            for other, (_, _, _, s) in loaded.items()
        ]
        scenarios = "the synthesized scenario" if name.endswith("(synthesized)") else \
            f"{len(hand_written)} scenarios"
        title = f"simforge demo: {name.split(' ')[0]} on {scenarios}, without faults and " \
                f"under {FAULTS}"
        path = write_html(
            out / files[name], summary, run_row, episodes, others, title=title,
            trajectories=trajectories,
            compare={"verdict": result.compare["verdict"],
                     "href": os.path.relpath(out / "compare.html", start=here)}
            if name in (CAREFUL, CARELESS) else None,
        )
        if name == CARELESS:
            result.report = path
        tick("reporting", n + 1, len(result.runs))
    store.close()
    return result


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    noise = summary["noise"]
    return {
        "run_id": summary["run_id"], "episodes": summary["episodes"],
        "ablation_episodes": summary["ablation_episodes"], "pass_rate": summary["pass_rate"],
        "pass_hat_k": {str(k): v for k, v in summary["pass_hat_k"].items()},
        "by_fault": summary["by_fault"], "attribution": summary["attribution"],
        "noise": {"flip_rate": noise["flip_rate"], "noise_floor": noise["noise_floor"]["sd"],
                  "mdd": noise["mdd"], "recommendation": (noise["recommendation"] or {}).get(
                      "best")},
        "safety_violations": summary["safety_violations"],
    }


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
        "trial": record["trial"],
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


# -- the terminal summary ----------------------------------------------------------------------


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _rate(passed: int, valid: int) -> Text:
    if not valid:
        return Text("-", style="yellow")
    rate = passed / valid
    style = "green" if rate >= 0.995 else ("yellow" if rate >= 0.7 else "red")
    return Text(f"{100 * rate:.0f}%", style=style)


def demo_summary(result: DemoResult, *, lines: int = SUMMARY_LINES,
                 width: int = 80) -> RenderableType:
    """The demo in at most ``lines`` lines of ``width`` columns: what went in, a row per
    scenario (pass rate of each policy without faults and under the profile, worst first; the
    scenarios past the budget folded into one line), the comparison's sentence, what each kind
    of fault costs alone, and where the HTML is (per-task detail, evidence, trajectories)."""
    import io

    from rich.console import Console

    ordered = _ordered(result)
    for rows in range(len(ordered), 0, -1):
        summary = _summary(result, ordered, rows)
        probe = Console(width=width, file=io.StringIO(), record=True)
        probe.print(summary)
        if len(probe.export_text().splitlines()) <= lines:
            return summary
    return _summary(result, ordered, 0)


def _counts(result: DemoResult) -> dict[tuple[str, str, str], list[int]]:
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in result.episodes:
        if e["faults"] not in ("none", FAULTS) or e["reward"] is None:
            continue
        c = counts[(e["scenario"], e["policy"], e["faults"])]
        c[0] += bool(e["passed"])
        c[1] += 1
    return counts


def _ordered(result: DemoResult) -> list[str]:
    """Scenarios, the ones the profile costs most first."""
    counts = _counts(result)

    def cost(s: str) -> tuple[float, str]:
        p, n = counts[(s, CARELESS, FAULTS)]
        q, m = counts[(s, CAREFUL, FAULTS)]
        return ((p / n if n else 1.0) + (q / m if m else 1.0), s)

    return sorted({s for s, _, _ in counts}, key=cost)


def _summary(result: DemoResult, ordered: list[str], rows: int) -> RenderableType:
    ing, syn = result.ingest, result.synth
    counts = _counts(result)
    intro = Text(
        f"{ing['episodes']} traces ingested ({ing['tool_calls']} calls, {ing['rejected']} "
        f"rejected) and synthesized into {syn['tools']} tools, {syn['entities']} entities and "
        f"{syn['tasks']} tasks ({syn['gold_tasks']} gold); {len(result.episodes):,} episodes "
        f"scored: {result.seeds} seeds x {result.trials} trials per task, each fault kind of "
        f"{FAULTS} also alone.")
    domains = {s.split("/", 1)[0] for s in ordered}
    prefix = domains.pop() if len(domains) == 1 and all("/" in s for s in ordered) else ""
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold underline",
                  title=f"pass rate per scenario, worst first (+flaky: under {FAULTS})",
                  title_justify="left", title_style="bold")
    table.add_column(f"scenario ({prefix}/…)" if prefix else "scenario", no_wrap=True,
                     max_width=28, overflow="ellipsis")
    for header in (CAREFUL, "+flaky", CARELESS, "+flaky", "noop", "cheater"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    shown, folded = ordered[:rows], ordered[rows:]
    for s in shown:
        name = s[len(prefix) + 1:] if prefix and s.startswith(prefix + "/") else s
        table.add_row(_short(name, 28), *[
            _rate(*counts[(s, pol, prof)])
            for pol, prof in ((CAREFUL, "none"), (CAREFUL, FAULTS), (CARELESS, "none"),
                              (CARELESS, FAULTS), ("noop", "none"), ("cheater", "none"))
        ])
    parts: list[RenderableType] = [intro, table]
    if folded:
        clean = sum(
            all(counts[(s, pol, prof)][0] == counts[(s, pol, prof)][1]
                for pol in (CAREFUL, CARELESS) for prof in ("none", FAULTS))
            for s in folded)
        parts.append(Text(f"{len(folded)} more scenarios ({clean} where neither client failed "
                          "anything): see the report", style="dim"))
    verdict = result.compare.get("verdict")
    if verdict:
        parts.append(Text(f"{verdict}.", style="bold green" if result.compare.get("significant")
                          else "bold"))
    attributed = _attributed(result)
    if attributed:
        parts.append(Text(attributed))
    parts.append(Text(f"report: {result.report}  (per task, evidence, trajectories)\n"
                      f"compare: {result.compare_page}\nstore: {result.store}"))
    return Group(*parts)


def _attributed(result: DemoResult) -> str:
    """``no-retry under flaky-network: -33 pp; alone: error_status -20, ...``."""
    figures = result.summaries.get(CARELESS) or {}
    rows = [r for r in figures.get("attribution", []) if r["profile"] == FAULTS]
    together = next((r for r in rows if r["kind"] is None), None)
    alone = sorted((r for r in rows if r["kind"] is not None and r["how"] == "alone"),
                   key=lambda r: r["delta_vs_none"] or 0)
    if together is None or together["delta_vs_none"] is None or not alone:
        return ""
    return (f"{CARELESS} under {FAULTS}: {100 * together['delta_vs_none']:+.1f} pp; each kind "
            "alone: " + ", ".join(f"{r['kind']} {100 * (r['delta_vs_none'] or 0):+.1f}"
                                  for r in alone))
