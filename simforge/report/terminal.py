"""The terminal report: rich tables, the worst first, so the failing corner shows at a glance."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from simforge.report.metrics import worst_first


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _delta(value: float | None) -> Text:
    if value is None:
        return Text("-")
    style = "red" if value < -0.005 else ("green" if value > 0.005 else "")
    return Text(f"{100 * value:+.1f} pp", style=style)


def _ci(ci: list[float]) -> str:
    return f"[{100 * ci[0]:.0f}-{100 * ci[1]:.0f}%]"


def _rate_style(rate: float | None) -> str:
    if rate is None:
        return "yellow"
    return "green" if rate >= 0.95 else ("yellow" if rate >= 0.7 else "red")


def headline(summary: dict[str, Any], run: dict[str, Any] | None = None) -> Table:
    table = Table(title=f"run {summary['run_id']}", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    if run is not None:
        config = run.get("config") or {}
        table.add_row("policy", str(run.get("policy")))
        table.add_row("scenarios", ", ".join(config.get("scenarios", [])))
        table.add_row("status", f"{run.get('status')} ({summary['episodes']}/{run.get('total')})")
    rate = summary["pass_rate"]
    table.add_row(
        "pass rate",
        Text(f"{_pct(rate)} {_ci(summary['pass_rate_ci'])}", style=_rate_style(rate)),
    )
    table.add_row("mean reward", "-" if summary["mean_reward"] is None
                  else f"{summary['mean_reward']:.3f}")
    table.add_row("pass^k", "  ".join(f"k={k}: {v:.3f}" for k, v in summary["pass_hat_k"].items()))
    invalid = summary["invalid"]
    table.add_row("invalid", Text(f"{invalid} ({_pct(summary['invalid_rate'])})",
                                  style="yellow" if invalid else ""))
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
    return table


def profiles_table(summary: dict[str, Any]) -> Table:
    table = Table(
        title="by fault profile (delta paired by seed against none)", title_justify="left"
    )
    for col in ("profile", "episodes", "pass rate", "95% CI", "delta vs none"):
        table.add_column(col, justify="left" if col == "profile" else "right")
    for profile, v in summary["by_fault"].items():
        table.add_row(profile, str(v["episodes"]),
                      Text(_pct(v["pass_rate"]), style=_rate_style(v["pass_rate"])),
                      _ci(v["ci"]), _delta(v["delta_vs_none"]))
    return table


def kinds_table(summary: dict[str, Any]) -> Table:
    table = Table(title="by injected fault kind (episodes where it fired)", title_justify="left")
    for col in ("fault kind", "fired", "episodes", "pass rate", "delta vs none"):
        table.add_column(col, justify="left" if col == "fault kind" else "right")
    rows = sorted(summary["by_fault_kind"].items(),
                  key=lambda kv: (kv[1]["delta_vs_none"] is None, kv[1]["delta_vs_none"] or 0))
    for kind, v in rows:
        table.add_row(kind, str(v["fired"]), str(v["episodes"]),
                      Text(_pct(v["pass_rate"]), style=_rate_style(v["pass_rate"])),
                      _delta(v["delta_vs_none"]))
    return table


def tasks_table(summary: dict[str, Any], limit: int = 30) -> Table:
    table = Table(title="by scenario, task and profile (worst first)", title_justify="left")
    for col in ("scenario", "task", "profile", "episodes", "invalid", "pass rate", "mean reward"):
        table.add_column(col, justify="left" if col in ("scenario", "task", "profile") else "right")
    rows = worst_first(summary["by_task"])
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more rows (the HTML report lists them all)"
        table.caption_justify = "left"
    for key, v in rows[:limit]:
        scenario, task, profile = key.split("|")
        table.add_row(scenario, task, profile, str(v["episodes"]), str(v["invalid"]),
                      Text(_pct(v["pass_rate"]), style=_rate_style(v["pass_rate"])),
                      "-" if v["mean_reward"] is None else f"{v['mean_reward']:.3f}")
    return table


def counts_table(title: str, counts: dict[str, int], what: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(what)
    table.add_column("episodes", justify="right")
    for name, n in counts.items():
        table.add_row(name, str(n))
    return table


def distributions_table(summary: dict[str, Any]) -> Table:
    table = Table(title="distributions", title_justify="left")
    for col in ("measure", "n", "mean", "p50", "p90", "p99", "max"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    for name, label in (("steps", "steps"), ("sim_time", "simulated s"),
                        ("call_latency", "tool call latency (sim s)"),
                        ("wall_s", "wall s per episode")):
        d = summary[name]
        table.add_row(label, str(d["n"]), *[
            "-" if d[k] is None else f"{d[k]:.3g}" for k in ("mean", "p50", "p90", "p99", "max")
        ])
    return table


def render(summary: dict[str, Any], run: dict[str, Any] | None = None) -> RenderableType:
    parts: list[RenderableType] = [headline(summary, run), profiles_table(summary)]
    if summary["by_fault_kind"]:
        parts.append(kinds_table(summary))
    parts.append(tasks_table(summary))
    if summary["safety_violations"]:
        parts.append(counts_table("safety violations", summary["safety_violations"], "validator"))
    if summary["failed_validators"]:
        parts.append(counts_table("failed validators", summary["failed_validators"], "validator"))
    if summary["invalid_reasons"]:
        parts.append(counts_table("invalid episodes", summary["invalid_reasons"], "reason"))
    parts.append(distributions_table(summary))
    return Group(*parts)
