"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network), so it
can be attached to a CI run, mailed, or opened years later.

Plots: pass rate per profile with its confidence interval, pass^k curves per profile, a
robustness heatmap of scenario x fault kind (coloured by the paired delta against ``none``,
each kind alone where the run has its ablation), and histograms of tool-call latency, steps,
simulated time and wall time. Every failed verdict is listed with its episode, offending call
and rule, filterable by validator, category and profile (radio buttons and CSS ``:has``, no
script); each links to its episode's trajectory view (messages, calls and injected faults on a
timeline), shown when its anchor is the page's target.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from simforge import atomic
from simforge.report import svg
from simforge.report.metrics import ablations, attribution, by_fault_kind, pass_hat_ks, worst_first
from simforge.report.terminal import call_text

TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_VIEWS = 200
"""Trajectory views a page holds at most (gate failures first): a few kB each."""


def _heatmap(episodes: list[dict[str, Any]]) -> str:
    """Scenario x fault kind: each kind alone where the run played it alone, else co-fired
    (marked ``*``)."""
    rows = [r for r in attribution(episodes, split="scenario") if r["kind"] is not None]
    if rows:
        bases = {r["profile"] for r in rows}
        cells = {}
        for r in rows:
            label = r["kind"] if len(bases) == 1 else f"{r['profile']}: {r['kind']}"
            if r["how"] == "co-fired":
                label += "*"
            cells[(r["scenario"], label)] = r
        title = ("robustness: scenario x fault kind (pass rate, delta vs none; "
                 "* co-fired, the rest alone)")
    else:
        split = by_fault_kind(episodes, split="scenario")
        cells = {(k.split("\t")[0], k.split("\t")[1]): v for k, v in split.items()}
        title = "robustness: scenario x fault kind (pass rate, delta vs none)"
    if not cells:
        return ""
    names = sorted({r for r, _ in cells})
    kinds = sorted({c for _, c in cells})
    return svg.heatmap(names, kinds, cells, title=title)


def charts(summary: dict[str, Any], episodes: list[dict[str, Any]]) -> dict[str, str]:
    """The page's plots; ``episodes`` are all of the run's (ablated ones feed the heatmap)."""
    parts = ablations(episodes)
    main = [e for e in episodes if e["profile"] not in parts]
    by_profile: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in main:
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
    valid = [e for e in main if e["reward"] is not None]
    latencies = [c["ended_at"] - c["started_at"] for e in valid for c in e.get("calls", [])
                 if c.get("ended_at") is not None and c.get("started_at") is not None]
    return {
        "profiles": svg.bars_with_ci(summary["by_fault"], title="pass rate by fault profile "
                                     "(95% Wilson interval)", colors=colors),
        "pass_hat_k": svg.line_chart(curves, title="pass^k by fault profile", colors=colors)
        if any(len(c) > 1 for c in curves.values())
        else svg.note("pass^k by fault profile", "pass^k needs two or more attempts per task "
                      "and profile (seeds x trials); this run has one"),
        "heatmap": _heatmap(episodes),
        "latency": svg.histogram(latencies, title="tool call latency",
                                 xlabel="simulated seconds"),
        "steps": svg.histogram([float(e["steps"]) for e in valid], title="steps per episode",
                               xlabel="steps", color=svg.PALETTE[2], whole=True),
        "sim_time": svg.histogram([float(e["sim_time"]) for e in valid],
                                  title="simulated time per episode", xlabel="seconds",
                                  color=svg.PALETTE[3]),
        "wall": svg.histogram([float(e["wall_s"]) for e in main],
                              title="wall time per episode", xlabel="seconds",
                              color=svg.PALETTE[4]),
    }


def trajectory_views(
    summary: dict[str, Any], episodes: list[dict[str, Any]], trajectories: dict[str, Any] | None,
    limit: int = MAX_VIEWS,
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``({cell key: anchor}, views)``: one view per episode the evidence names that has a
    stored trajectory, in the evidence's order (gates first), at most ``limit``."""
    if not trajectories:
        return {}, []
    by_key = {e["key"]: e for e in episodes if "key" in e}
    anchors: dict[str, str] = {}
    views: list[dict[str, Any]] = []
    for entry in summary.get("evidence") or []:
        key = entry["key"]
        if key in anchors or key not in trajectories or len(views) >= limit:
            continue
        anchors[key] = f"ep-{len(views) + 1}"
        raw = trajectories[key]
        data = json.loads(raw) if isinstance(raw, str) else raw
        sim = data.get("simulation") or {}
        calls = data.get("tool_calls", [])
        faults = sim.get("faults", [])
        messages = data.get("messages", [])
        episode = by_key.get(key, {})
        views.append({
            "anchor": anchors[key], "key": key, "episode": episode,
            "timeline": svg.timeline(calls, faults, messages,
                                     title="calls, faults and messages in simulated time"),
            "messages": [
                {"role": m.get("role"), "at": m.get("timestamp"),
                 "text": _clip(m.get("content") or ", ".join(m.get("tool_call_ids") or []), 600)}
                for m in messages if m.get("role") != "tool"
            ],
            "calls": [
                {"n": i + 1, "call": call_text(c, 400), "ok": not c.get("error"),
                 "answer": _clip(c.get("error") or json.dumps(c.get("result"), default=str),
                                 300),
                 "faults": ", ".join(f["kind"] for f in faults
                                     if f.get("call_id") == c.get("call_id"))}
                for i, c in enumerate(calls)
            ],
            "faults": faults,
            "final_answer": _clip(sim.get("final_answer") or "", 600),
            "verdicts": [v for v in episode.get("verdicts", []) if not v["passed"]],
        })
    return anchors, views


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def default_title(summary: dict[str, Any], run: dict[str, Any] | None) -> str:
    """What the page is about, in words: the policy, how many scenarios, under which faults."""
    run = run or {}
    scenarios = (run.get("config") or {}).get("scenarios") or []
    profiles = [p for p in summary["by_fault"] if p != "none"]
    faults = f" under {', '.join(profiles)}" if profiles else " without faults"
    where = f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}" if scenarios \
        else "a run"
    policy = run.get("policy") or "a policy"
    return f"{policy} on {where}{faults}"


def render_html(
    summary: dict[str, Any],
    run: dict[str, Any] | None,
    episodes: list[dict[str, Any]],
    others: list[dict[str, Any]] | None = None,
    *,
    title: str | None = None,
    trajectories: dict[str, Any] | None = None,
    compare: dict[str, Any] | None = None,
) -> str:
    """The report of one run; ``others`` lists runs shown beside it (``name``, ``run_id``,
    ``episodes``, ``invalid``, ``pass_rate``, ``mean_reward``, ``href`` to their own report, or
    ``None`` for this one); ``trajectories`` (by cell key) feed the evidence's call arguments
    and the trajectory views; ``compare`` (``verdict`` and ``href``) puts a comparison's
    sentence at the top."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    template = env.get_template("report.html.j2")
    anchors, views = trajectory_views(summary, episodes, trajectories)
    evidence = summary.get("evidence") or []
    validators = sorted({e["validator"] for e in evidence})
    profiles = sorted({e["profile"] for e in evidence}, key=lambda p: (p != "none", p))
    return template.render(
        summary=summary,
        title=title or default_title(summary, run),
        tasks=worst_first(summary["by_task"]),
        flips=(summary.get("noise") or {}).get("flips_by_task", {}),
        others=others or [],
        run=run or {},
        charts=charts(summary, episodes),
        evidence=evidence,
        validators=validators,
        validator_index={v: i for i, v in enumerate(validators)},
        ev_profiles=profiles,
        profile_index={p: i for i, p in enumerate(profiles)},
        anchors=anchors,
        views=views,
        compare=compare,
        call_text=call_text,
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        pct=lambda v: "-" if v is None else f"{100 * v:.1f}%",
        pp=lambda v: "-" if v is None else f"{100 * v:+.1f} pp",
        points=lambda v: "-" if v is None else f"{100 * v:.1f} pp",
    )


def write_html(
    path: str | os.PathLike[str],
    summary: dict[str, Any],
    run: dict[str, Any] | None,
    episodes: list[dict[str, Any]],
    others: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> Path:
    """Write the report to ``path`` atomically: a report cut short never replaces a whole one."""
    out = Path(path)
    atomic.write_text(out, render_html(summary, run, episodes, others, **kw))
    return out


def _group_table(rows: list[dict[str, Any]], what: str) -> Markup:
    from html import escape

    out = ['<table><tr><th class="l">' + escape(what) + '</th><th>cells</th><th>A</th>'
           "<th>B</th><th>B - A</th><th>95% CI</th><th>only B / only A</th><th>p</th>"
           "<th>p (FDR)</th></tr>"]
    for r in rows:
        pr, m = r["pass_rate"], r["mcnemar"]
        css = "bad" if (pr["diff"] or 0) < 0 else "good" if (pr["diff"] or 0) > 0 else ""
        name = escape(r["key"]) + (' <span class="dim">(one kind alone)</span>'
                                   if r.get("ablation") else "")
        ci = "-" if pr["ci"][0] is None else f"{100 * pr['ci'][0]:+.1f} to {100 * pr['ci'][1]:+.1f}"
        out.append(f'<tr><td class="l">{name}</td><td>{r["cells"]}</td>'
                   f'<td>{_pct(pr["a"])}</td><td>{_pct(pr["b"])}</td>'
                   f'<td class="{css}">{100 * (pr["diff"] or 0):+.1f} pp</td><td>{ci}</td>'
                   f'<td>{m["b_only"]} / {m["a_only"]}</td><td>{m["p"]:.3g}</td>'
                   f'<td>{m["p_fdr"]:.3g}</td></tr>')
    out.append("</table>")
    return Markup("".join(out))


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _forest(rows: list[dict[str, Any]], title: str, limit: int = 40) -> str:
    shown = rows[:limit]
    if not shown:
        return ""
    return svg.forest([(r["key"], r["pass_rate"]["diff"] or 0.0, r["pass_rate"]["ci"][0],
                        r["pass_rate"]["ci"][1]) for r in shown],
                      title=title + (f" (the {limit} worst of {len(rows)})"
                                     if len(rows) > limit else ""))


def render_compare_html(result: dict[str, Any], *, links: dict[str, str] | None = None) -> str:
    """The comparison of two runs (:func:`simforge.report.compare.compare`) as one
    self-contained page; ``links`` (``a``, ``b``) point at the runs' own reports."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("compare.html.j2").render(
        result=result,
        links=links or {},
        charts={"profiles": _forest(result["by_profile"], "B - A by fault profile (95% CI)"),
                "tasks": _forest(result["by_task"], "B - A by task (95% CI)")},
        table=_group_table,
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        pct=_pct,
        pp=lambda v: "-" if v is None else f"{100 * v:+.1f} pp",
        points=lambda v: "-" if v is None else f"{100 * v:.1f} pp",
        f3=lambda v: "-" if v is None else f"{v:.3f}",
        signed=lambda v: "-" if v is None else f"{v:+.3f}",
    )


def write_compare_html(path: str | os.PathLike[str], result: dict[str, Any],
                       links: dict[str, str] | None = None) -> Path:
    """Write the comparison page to ``path`` atomically."""
    out = Path(path)
    atomic.write_text(out, render_compare_html(result, links=links))
    return out
