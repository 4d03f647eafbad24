"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network), so it
can be attached to a CI run, mailed, or opened years later.

Plots: pass rate per profile with its confidence interval, pass^k curves per profile, a
robustness heatmap of scenario x injected fault kind (coloured by the paired delta against
``none``), and histograms of tool-call latency, steps, simulated time and wall time.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import jinja2

from simforge import atomic
from simforge.report import svg
from simforge.report.metrics import by_fault_kind, pass_hat_ks, worst_first

TEMPLATES = Path(__file__).resolve().parent / "templates"


def charts(summary: dict[str, Any], episodes: list[dict[str, Any]]) -> dict[str, str]:
    by_profile: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in episodes:
        by_profile[e["profile"]].append(e)
    order = sorted(by_profile, key=lambda p: (p != "none", p))
    curves = {p: pass_hat_ks(by_profile[p]) for p in order}
    curves = {p: c for p, c in curves.items() if c}
    if summary["pass_hat_k"]:
        curves = {"all": summary["pass_hat_k"], **curves}
    # one colour per profile in every chart; "all" in a neutral dark grey
    colors = {p: svg.PALETTE[i % len(svg.PALETTE)]
              for i, p in enumerate(sorted(summary["by_fault"] | by_profile,
                                           key=lambda p: (p != "none", p)))}
    colors["all"] = "#333333"
    split = by_fault_kind(episodes, split="scenario")
    rows = sorted({k.split("\t")[0] for k in split})
    cols = sorted({k.split("\t")[1] for k in split})
    cells = {(k.split("\t")[0], k.split("\t")[1]): v for k, v in split.items()}
    valid = [e for e in episodes if e["reward"] is not None]
    latencies = [c["ended_at"] - c["started_at"] for e in valid for c in e.get("calls", [])
                 if c.get("ended_at") is not None and c.get("started_at") is not None]
    return {
        "profiles": svg.bars_with_ci(summary["by_fault"], title="pass rate by fault profile "
                                     "(95% Wilson interval)", colors=colors),
        "pass_hat_k": svg.line_chart(curves, title="pass^k by fault profile", colors=colors)
        if any(len(c) > 1 for c in curves.values())
        else svg.note("pass^k by fault profile", "pass^k needs two or more attempts per task "
                      "and profile (seeds x trials); this run has one"),
        "heatmap": svg.heatmap(rows, cols, cells, title="robustness: scenario x fault kind "
                               "(pass rate, delta vs none)") if cells else "",
        "latency": svg.histogram(latencies, title="tool call latency",
                                 xlabel="simulated seconds"),
        "steps": svg.histogram([float(e["steps"]) for e in valid], title="steps per episode",
                               xlabel="steps", color=svg.PALETTE[2], whole=True),
        "sim_time": svg.histogram([float(e["sim_time"]) for e in valid],
                                  title="simulated time per episode", xlabel="seconds",
                                  color=svg.PALETTE[3]),
        "wall": svg.histogram([float(e["wall_s"]) for e in episodes],
                              title="wall time per episode", xlabel="seconds",
                              color=svg.PALETTE[4]),
    }


def render_html(
    summary: dict[str, Any],
    run: dict[str, Any] | None,
    episodes: list[dict[str, Any]],
    others: list[dict[str, Any]] | None = None,
) -> str:
    """The report of one run; ``others`` lists runs shown beside it (``name``, ``run_id``,
    ``episodes``, ``invalid``, ``pass_rate``, ``mean_reward``, ``href`` to their own report, or
    ``None`` for this one)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    template = env.get_template("report.html.j2")
    return template.render(
        summary=summary,
        tasks=worst_first(summary["by_task"]),
        others=others or [],
        run=run or {},
        charts=charts(summary, episodes),
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        pct=lambda v: "-" if v is None else f"{100 * v:.1f}%",
        pp=lambda v: "-" if v is None else f"{100 * v:+.1f} pp",
    )


def write_html(
    path: str | os.PathLike[str],
    summary: dict[str, Any],
    run: dict[str, Any] | None,
    episodes: list[dict[str, Any]],
    others: list[dict[str, Any]] | None = None,
) -> Path:
    """Write the report to ``path`` atomically: a report cut short never replaces a whole one."""
    out = Path(path)
    atomic.write_text(out, render_html(summary, run, episodes, others))
    return out
