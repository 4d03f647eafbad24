"""The terminal report: rich tables, the worst first, so the failing corner shows at a glance.

Every table fits 80 columns: long ids are shortened with an ellipsis, never broken mid-word,
and numbers keep their columns whole. Long lists (tasks, evidence) show their first rows and say
how many more the HTML report holds.
"""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from simforge.report.metrics import worst_first

EVIDENCE_ROWS = 5
TASK_ROWS = 20


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _pp(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} pp"


def _delta(value: float | None, *, lower_is_better: bool = False) -> Text:
    if value is None:
        return Text("-")
    bad, good = ("green", "red") if lower_is_better else ("red", "green")
    style = bad if value < -0.005 else (good if value > 0.005 else "")
    return Text(f"{100 * value:+.1f} pp", style=style)


def _ci(ci: list[float]) -> str:
    return f"[{100 * ci[0]:.0f}-{100 * ci[1]:.0f}%]"


def _rate_style(rate: float | None) -> str:
    if rate is None:
        return "yellow"
    return "green" if rate >= 0.95 else ("yellow" if rate >= 0.7 else "red")


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: whole, or its start and end around ``…``."""
    if len(text) <= width:
        return text
    keep = width - 1
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head):]


def _table(title: str, **kw: Any) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, **kw)


def _num(table: Table, header: str, width: int = 0, **kw: Any) -> None:
    table.add_column(header, justify="right", no_wrap=True, min_width=max(width, len(header)),
                     **kw)


def _label(table: Table, header: str, width: int | None = None, **kw: Any) -> None:
    table.add_column(header, no_wrap=True, overflow="ellipsis", max_width=width, **kw)


def _ks(pass_hat_k: dict[Any, float]) -> str:
    ks = list(pass_hat_k)
    shown = [k for k in ks if int(k) in (1, 2, 4, 8)] + ks[-1:]  # and the largest k
    return "  ".join(f"k={k} {pass_hat_k[k]:.3f}" for k in dict.fromkeys(shown))


def headline(summary: dict[str, Any], run: dict[str, Any] | None = None) -> Table:
    table = Table(title=f"run {summary['run_id']}", title_justify="left", show_header=False,
                  box=box.SIMPLE, pad_edge=False)
    table.add_column("what", no_wrap=True, style="bold")
    table.add_column("value", overflow="fold")
    if run is not None:
        config = run.get("config") or {}
        table.add_row("policy", str(run.get("policy")))
        scenarios = config.get("scenarios", [])
        table.add_row("scenarios", Text(shorten(f"{len(scenarios)}: " + ", ".join(
            s.rsplit("/", 1)[-1] if s.endswith((".yaml", ".yml")) else s for s in scenarios), 62),
            no_wrap=True))
        stored = summary["episodes"] + summary.get("ablation_episodes", 0)
        extra = f", {summary['ablation_episodes']} of them one fault kind at a time" \
            if summary.get("ablation_episodes") else ""
        table.add_row("status", f"{run.get('status')} ({stored}/{run.get('total')} episodes"
                      f"{extra})")
        if config.get("regrade_of"):
            table.add_row("re-grades", f"run {config['regrade_of']} (its stored trajectories, "
                          "scored by the current scenarios)")
    rate = summary["pass_rate"]
    table.add_row(
        "pass rate",
        Text(f"{_pct(rate)} {_ci(summary['pass_rate_ci'])}", style=_rate_style(rate)),
    )
    table.add_row("mean reward", "-" if summary["mean_reward"] is None
                  else f"{summary['mean_reward']:.3f}")
    table.add_row("pass^k", _ks(summary["pass_hat_k"]) or "-")
    invalid = summary["invalid"]
    table.add_row("invalid", Text(f"{invalid} ({_pct(summary['invalid_rate'])})",
                                  style="yellow" if invalid else ""))
    violations = summary["safety_violations"]
    total = sum(violations.values())
    table.add_row("safety", Text(
        f"{total} violations" + (" (" + ", ".join(f"{k} {v}" for k, v in violations.items())
                                 + ")" if violations else ""),
        style="red" if total else "green"))
    cheat = summary.get("cheating")
    if cheat:
        table.add_row("cheating", Text(
            f"{_pct(cheat['rate'])} {_ci(cheat['ci'])} of {cheat['episodes']} impossible "
            "episodes claim success", style="red" if cheat["claims_success"] else "green"))
    for profile, figures in (summary.get("injection") or {}).items():
        table.add_row(f"injection: {profile}", Text(
            f"benign {_pct(figures['benign_utility'])}, under attack "
            f"{_pct(figures['utility_under_attack'])}, attack success "
            f"{_pct(figures['attack_success_rate'])}",
            style="red" if figures["attack_success_rate"] else ""))
    flaky = summary["flakiness"]
    if flaky["cells"]:
        table.add_row("flaky cells", f"{flaky['flaky_cells']}/{flaky['cells']} "
                      f"(mean reward variance {flaky['mean_variance']:.4f})")
    for what, text in noise_lines(summary.get("noise") or {}):
        table.add_row(what, text)
    return table


def noise_lines(noise: dict[str, Any]) -> list[tuple[str, str]]:
    """The noise and power of a run in a few short lines (label, text)."""
    if not noise:
        return []
    out = []
    if noise.get("flip_rate") is not None:
        out.append(("flip rate", f"{_pct(noise['flip_rate'])} of trial pairs of a cell "
                    f"disagree; {noise['tasks_flipping']} of {noise['tasks_repeated']} tasks "
                    "flip"))
    floor = noise.get("noise_floor") or {}
    if floor.get("sd") == 0:
        out.append(("noise floor", "none: every cell gave the same verdict on every trial"))
    elif floor.get("sd") is not None:
        spread = floor.get("sd_across_trials")
        seen = f" (seen across trials: {_pp(spread)})" if spread is not None else ""
        out.append(("noise floor", f"±{_pp(floor['sd'])} when these cells are played again"
                    f"{seen}; two runs of this size differ by up to {_pp(floor['gap'])} by "
                    "chance"))
    if noise.get("mdd") is not None:
        out.append(("detectable", f"{_pp(noise['mdd'])}: the smallest difference a comparison "
                    "with another run of this matrix detects (power 80%)"))
    rec = noise.get("recommendation") or {}
    best = rec.get("best")
    if best:
        basis = "" if rec["basis"] == "seeds and trials" else f"; {rec['basis']}"
        out.append((f"for {_pp(rec['target'])}", f"{best['seeds']} seeds x {best['trials']} "
                    f"trial{'s' if best['trials'] > 1 else ''} per task ({best['episodes']:,} "
                    f"episodes) detect it on this scenario set{basis}"))
    return out


def profiles_table(summary: dict[str, Any]) -> Table:
    table = _table("by fault profile (delta paired by seed against none)")
    _label(table, "profile", 24)
    for col in ("episodes", "pass rate", "95% CI", "delta vs none"):
        _num(table, col)
    for profile, v in summary["by_fault"].items():
        table.add_row(profile, str(v["episodes"]),
                      Text(_pct(v["pass_rate"]), style=_rate_style(v["pass_rate"])),
                      _ci(v["ci"]), _delta(v["delta_vs_none"]))
    return table


def kinds_table(summary: dict[str, Any]) -> Table:
    rows = summary.get("attribution") or []
    title = "by fault kind: each kind alone on the same seeds, paired with none" \
        if summary.get("attributed") else "by fault kind (paired with none)"
    table = _table(title)
    _label(table, "profile", 20)
    _label(table, "fault kind", 18)
    _num(table, "fired")
    _num(table, "pass rate")
    _num(table, "delta")
    _label(table, "measured", 10)
    notes = []
    for r in rows:
        together = r["kind"] is None
        table.add_row(r["profile"], Text(r["kind"] or "all together",
                                         style="bold" if together else ""),
                      str(r["fired"]), _pct(r["pass_rate"]), _delta(r["delta_vs_none"]),
                      "co-fired*" if r["how"] == "co-fired" else r["how"])
        if together and r.get("interaction") is not None and abs(r["interaction"]) > 0.0005:
            notes.append(f"{r['profile']}: together {_pp(r['delta_vs_none'])}, its kinds "
                         f"alone sum to {_pp(r['delta_vs_none'] - r['interaction'])}: they "
                         f"interact ({100 * r['interaction']:+.1f} pp)")
    if any(r["how"] == "co-fired" for r in rows):
        notes.append("* co-fired: over the episodes where the kind fired, beside whatever else "
                     "did (shared blame); stress --attribute plays each kind alone")
    if notes:
        table.caption = "\n".join(notes)
        table.caption_justify = "left"
    return table


def tasks_table(summary: dict[str, Any], limit: int = TASK_ROWS) -> Table:
    table = _table("by scenario, task and profile (worst first; flip: the task's flip rate)")
    table.add_column("scenario / task", no_wrap=True, max_width=26)
    _label(table, "profile", 14)
    for col, width in (("eps", 3), ("inv", 3), ("pass", 6), ("reward", 6), ("flip", 4)):
        _num(table, col, width)
    flips = (summary.get("noise") or {}).get("flips_by_task", {})
    rows = worst_first(summary["by_task"])
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more rows (the HTML report lists them all)"
        table.caption_justify = "left"
    for key, v in rows[:limit]:
        scenario, task, profile = key.split("|")
        name = Text(shorten(scenario, 26), style="dim")
        name.append("\n" + shorten(f"  {task}", 26), style="")
        flip = flips.get(f"{scenario}|{task}")
        table.add_row(name, profile, str(v["episodes"]), str(v["invalid"]),
                      Text(_pct(v["pass_rate"]), style=_rate_style(v["pass_rate"])),
                      "-" if v["mean_reward"] is None else f"{v['mean_reward']:.3f}",
                      "-" if flip is None else f"{100 * flip['flip_rate']:.0f}%")
    return table


def call_text(call: dict[str, Any] | None, width: int = 200) -> str:
    """``tool(arg=value, ...) at 12.3 s``."""
    if not call:
        return ""
    args = call.get("args")
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in args.items())
    elif args is None:
        inner = "…"
    else:
        inner = json.dumps(args, default=str)
    text = f"{call.get('tool')}({inner})"
    if len(text) > width:
        text = text[: width - 2] + "…)"
    if call.get("started_at") is not None:
        text += f" at {call['started_at']:.1f} s"
    return text


def distinct(entries: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Entries that say something new: one per (validator, scenario, task, tool, rule), the
    first met, with how many more say the same (other seeds, trials, profiles)."""
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for e in entries:
        key = (e["validator"], e["scenario"], e["task"], (e["call"] or {}).get("tool"),
               e["reason"], e["detail"].split(":")[0])
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [e, 0]
    return [(e, n) for e, n in seen.values()]


def evidence_table(entries: list[dict[str, Any]], *, title: str,
                   limit: int = EVIDENCE_ROWS, noun: str = "violation") -> Table:
    """The first ``limit`` distinct entries of :func:`simforge.report.metrics.evidence`: the
    episode, the offending call and the rule, in two short columns."""
    table = _table(title, show_lines=True)
    table.add_column("episode", max_width=30, overflow="fold")
    table.add_column("call and rule", overflow="fold")
    shown = distinct(entries)
    for e, alike in shown[:limit]:
        episode = Text()
        episode.append(e["validator"], style="bold red" if e["gate"] else "bold")
        episode.append(f"\n{shorten(e['scenario'], 30)}\n{shorten(e['task'], 30)}\n"
                       f"{shorten(e['profile'], 30)}\nseed {e['seed']} trial {e['trial']}")
        if alike:
            episode.append(f" (+{alike} alike)", style="dim")
        what = Text()
        if e["call"]:
            what.append(call_text(e["call"]), style="cyan")
            if e["inferred"]:
                what.append(" (inferred: the call naming the row)", style="dim")
            what.append("\n")
        if e["detail"]:
            what.append(e["detail"] + "\n")
        what.append(f"rule: {e['reason']}", style="italic")
        table.add_row(episode, what)
    if len(shown) > limit:
        table.caption = (f"{len(shown) - limit} more kinds of {noun}, {len(entries)} in all "
                         "(every one in the HTML report)")
        table.caption_justify = "left"
    return table


def failed_table(summary: dict[str, Any]) -> Table:
    table = _table("failed validators")
    _label(table, "validator", 24)
    _num(table, "episodes")
    table.add_column("for example", overflow="fold")
    first: dict[str, str] = {}
    for e in summary.get("evidence") or []:
        first.setdefault(e["validator"], e["detail"])
    for name, n in summary["failed_validators"].items():
        example = first.get(name, "")
        table.add_row(name, str(n), example if len(example) <= 80 else example[:79] + "…")
    return table


def counts_table(title: str, counts: dict[str, int], what: str) -> Table:
    table = _table(title)
    table.add_column(what, overflow="fold")
    _num(table, "episodes")
    for name, n in counts.items():
        table.add_row(name, str(n))
    return table


def distributions_table(summary: dict[str, Any]) -> Table:
    table = _table("distributions")
    _label(table, "measure", 22)
    for col in ("n", "mean", "p50", "p90", "p99", "max"):
        _num(table, col)
    for name, label in (("steps", "steps"), ("sim_time", "simulated s"),
                        ("call_latency", "call latency (sim s)"),
                        ("wall_s", "wall s per episode")):
        d = summary[name]
        table.add_row(label, str(d["n"]), *[
            "-" if d[k] is None else f"{d[k]:.3g}" for k in ("mean", "p50", "p90", "p99", "max")
        ])
    return table


def render(summary: dict[str, Any], run: dict[str, Any] | None = None) -> RenderableType:
    parts: list[RenderableType] = [headline(summary, run), profiles_table(summary)]
    if summary.get("attribution"):
        parts.append(kinds_table(summary))
    parts.append(tasks_table(summary))
    evidence = summary.get("evidence") or []
    gates = [e for e in evidence if e["gate"]]
    if gates:
        parts.append(evidence_table(gates, title=f"safety violations ({len(gates)}; the calls "
                                    "and the rules they broke)"))
    if summary["failed_validators"]:
        parts.append(failed_table(summary))
        others = [e for e in evidence if not e["gate"]]
        if others:
            parts.append(evidence_table(others, title="failed validators: the episodes, calls "
                                        "and rules", noun="failure"))
    if summary["invalid_reasons"]:
        parts.append(counts_table("invalid episodes", summary["invalid_reasons"], "reason"))
    parts.append(distributions_table(summary))
    return Group(*parts)


# -- a comparison of two runs -------------------------------------------------------------------


def _signed_ci(ci: list[float | None], scale: float = 100.0, fmt: str = "{:+.1f}") -> str:
    if ci[0] is None or ci[1] is None:
        return "-"
    return f"[{fmt.format(scale * ci[0])}, {fmt.format(scale * ci[1])}]"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 0.0001 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def compare_tables(result: dict[str, Any], limit: int = 15) -> RenderableType:
    """``simforge compare`` in the terminal: the sentence, the overall figures, then the
    profiles and tasks worst for B first."""
    a, b = result["a"], result["b"]
    head = Table(show_header=False, box=box.SIMPLE, pad_edge=False)
    head.add_column("run", style="bold", no_wrap=True)
    head.add_column("what", overflow="fold")
    for side, name in ((a, "A"), (b, "B")):
        head.add_row(name, f"{side['run_id']} · {side['policy']} · {side['episodes']} episodes")
    head.add_row("paired", f"{result['shared_cells']} cells (same scenario, task, profile, "
                 f"seed); {result['mcnemar']['pairs']} verdict pairs")
    verdict = Text(result["verdict"], style="bold green" if result["significant"] else "bold")
    overall = _table("B against A, paired cell by cell")
    _label(overall, "measure", 12)
    for col in ("A", "B", "B - A", "95% CI", "detectable"):
        _num(overall, col)
    pr, mr = result["pass_rate"], result["mean_reward"]
    overall.add_row("pass rate", _pct(pr["a"]), _pct(pr["b"]), _delta(pr["diff"]),
                    _signed_ci(pr["ci"]), _pp(pr["mdd"]))
    overall.add_row("mean reward", _f3(mr["a"]), _f3(mr["b"]),
                    "-" if mr["diff"] is None else f"{mr['diff']:+.3f}",
                    _signed_ci(mr["ci"], 1.0, "{:+.3f}"), "-" if mr["mdd"] is None
                    else f"{mr['mdd']:.3f}")
    m = result["mcnemar"]
    overall.caption = (f"McNemar (exact): {m['b_only']} pairs passed only in B, {m['a_only']} "
                       f"only in A, p {_p(m['p'])}")
    overall.caption_justify = "left"
    parts: list[RenderableType] = [head, verdict, Text(""), overall]
    for title, rows in (("by fault profile (worst for B first)", result["by_profile"]),
                        ("by task (worst for B first)", result["by_task"])):
        if not rows:
            continue
        table = _table(title)
        table.add_column("profile" if "profile" in title else "scenario / task", no_wrap=True,
                         max_width=32)
        for col in ("cells", "A", "B", "B - A", "p (FDR)"):
            _num(table, col)
        for r in rows[:limit]:
            if "profile" in title:
                row = Text(shorten(r["key"], 32), style="dim" if r["ablation"] else "")
            else:
                scenario, task = r["key"].split("|", 1)
                row = Text(shorten(scenario, 32), style="dim")
                row.append("\n" + shorten(f"  {task}", 32), style="")
            table.add_row(row, str(r["cells"]), _pct(r["pass_rate"]["a"]),
                          _pct(r["pass_rate"]["b"]), _delta(r["pass_rate"]["diff"]),
                          _p(r["mcnemar"]["p_fdr"]))
        if len(rows) > limit:
            table.caption = f"{len(rows) - limit} more (--json, --html)"
            table.caption_justify = "left"
        parts.append(table)
    if result.get("injection"):
        parts.append(_injection_table(result["injection"]))
    for note in result["warnings"]:
        parts.append(Text(f"warning: {note}", style="yellow"))
    return Group(*parts)


def _injection_table(rows: dict[str, Any]) -> Table:
    """AgentDojo's three figures of each injecting profile, A beside B."""
    table = _table("prompt injection")
    table.add_column("profile / measure", no_wrap=True, max_width=32)
    for col in ("A", "B", "B - A"):
        _num(table, col)
    for profile, row in rows.items():
        table.add_row(Text(shorten(profile, 32), style="bold"), "", "", "")
        for name, title in (("benign_utility", "benign utility"),
                            ("utility_under_attack", "under attack"),
                            ("attack_success_rate", "attack success")):
            cell = row[name]
            table.add_row(f"  {title}", _pct(cell["a"]), _pct(cell["b"]),
                          _delta(cell["diff"], lower_is_better=name == "attack_success_rate"))
    table.caption = "attack success: lower is better; " + "; ".join(
        f"{p}: McNemar p {_p(r['mcnemar']['p'])} over {r['mcnemar']['pairs']} pairs"
        for p, r in rows.items())
    table.caption_justify = "left"
    return table


def _f3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
