"""`simforge audit`: screen environments before anyone trains on them; `simforge fidelity`:
replay recorded calls against a synthesized pack (:mod:`simforge.audit.fidelity`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from simforge.console import make_console

console = make_console()
err_console = make_console(stderr=True)


def audit_command(
    targets: list[str] = typer.Argument(..., help="Scenario ids, scenario YAML paths, or 'all'."),
    seeds: int = typer.Option(3, "--seeds", "-n", help="Seeds per task (fault checks use more)."),
    fault_seeds: int = typer.Option(10, "--fault-seeds", help="Seeds per declared fault profile."),
    checks: list[str] = typer.Option(None, "--check", help="Only these checks (repeatable)."),
    as_json: bool = typer.Option(False, "--json"),
    html: Path = typer.Option(None, "--html", help="Also write a self-contained HTML page."),
    fail_on_reject: bool = typer.Option(
        False, "--fail-on-reject", help="Exit 1 when any task is rejected."
    ),
    write_kept: Path = typer.Option(
        None, "--write-kept",
        help="Write the scenario with only its kept tasks (a folder for several scenarios).",
    ),
) -> None:
    """Audit every task of the given scenarios: solvable, floor gap, determinism, leaks, fault
    sanity, well-formed rewards, Gymnasium API."""
    from simforge.audit.checks import CHECKS
    from simforge.audit.context import AuditConfig
    from simforge.audit.html import render_html
    from simforge.audit.runner import audit
    from simforge.cli_support import err_console, progress, user_errors
    from simforge.config import NotFound
    from simforge.scenario import default_registry

    with user_errors():
        unknown = sorted(set(checks or []) - set(CHECKS))
        if unknown:
            raise NotFound(f"unknown checks {unknown}; available: {sorted(CHECKS)}")
        loaded = (
            default_registry.all()
            if targets == ["all"]
            else [default_registry.get(t) for t in targets]
        )
        total = sum(len(item.scenario.tasks) for item in loaded)
        with progress() as bar:
            job = bar.add_task("auditing", total=total)
            report = audit(
                loaded,
                AuditConfig(seeds=seeds, fault_seeds=fault_seeds),
                checks=checks or None,
                advance=lambda _key: bar.advance(job),
            )
    data = report.to_json()
    if write_kept is not None:
        from simforge.audit.kept import write_kept_scenarios

        with user_errors():
            for path, kept, total in write_kept_scenarios(report, loaded, write_kept):
                said = f"wrote {path}: {kept} of {total} tasks kept" if kept else (
                    f"{path}: none of {total} tasks kept, nothing written")
                err_console.print(said, highlight=False)
    if html is not None:
        html.write_text(render_html(report), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        table = Table(
            title=f"audit: {data['kept']} of {data['tasks']} tasks kept", title_justify="left"
        )
        table.add_column("task")
        names = [r.check for r in report.tasks[0].results] if report.tasks else []
        for name in names:
            table.add_column(name)
        table.add_column("verdict")
        for t in report.tasks:
            cells = ["[green]pass[/]" if r.passed else "[red]reject[/]" for r in t.results]
            table.add_row(t.key, *cells, "[green]keep[/]" if t.kept else "[red]reject[/]")
        console.print(table)
        for r in data["rejections"]:
            console.print(f"[red]{r['task']}[/] {r['check']}: {r['reason']}", highlight=False)
    if fail_on_reject and data["rejected"]:
        raise typer.Exit(1)


def fidelity_command(
    pack: Path = typer.Argument(..., help="A pack directory written by `simforge synth`."),
    traces: list[Path] = typer.Argument(..., help="Trace files whose calls to replay."),
    holdout_only: bool = typer.Option(
        False, "--holdout-only", help="Only the episodes the pack held out."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    no_drift: bool = typer.Option(
        False,
        "--no-drift",
        help="Compare answers in the pack's own schema, without learning renamed or "
        "omitted fields of the traces' generation.",
    ),
) -> None:
    """Replay every recorded call against the pack and count exact answers."""
    from simforge.audit.fidelity import fidelity, holdout_ids
    from simforge.synth.pack.files import PackFormatError

    try:
        only = holdout_ids(pack) if holdout_only else None
        result = fidelity(pack, traces, only=only, drift=not no_drift)
    except PackFormatError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                          soft_wrap=True)
        raise typer.Exit(2) from None
    if as_json:
        console.print_json(json.dumps(result))
        return
    table = Table(title=f"fidelity of {pack} ({result['episodes']} episodes)")
    for column in ("tool", "kind", "reads", "writes", "errors"):
        table.add_column(column)

    def cell(bucket: dict[str, object]) -> str:
        return f"{bucket['exact']}/{bucket['calls']}" if bucket["calls"] else ""

    for tool, entry in result["by_tool"].items():
        table.add_row(
            tool,
            entry["kind"],
            cell(entry["reads"]),
            cell(entry["writes"]),
            cell(entry["errors"]),
        )
    table.add_row(
        "[bold]all",
        "",
        *(
            f"[bold]{cell(result[k])} ({result[k]['rate']})"
            for k in ("reads", "writes", "errors")
        ),
    )
    console.print(table)
    reward = result["reward"]
    confusion = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in reward["confusion"].items())
    console.print(
        f"reward agreement: {reward['agree']}/{reward['episodes']} scored episodes "
        f"({reward['rate']}); {confusion}",
        highlight=False,
    )
    for tool, paths in (result.get("drift") or {}).items():
        for path, rule in paths.items():
            console.print(f"schema drift {tool} {path or '.'}: {rule}", highlight=False)
    for word, theirs in (result.get("drift_words") or {}).items():
        console.print(f"error wording drift: {word!r} -> {theirs!r}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
    app.command("fidelity")(fidelity_command)
