"""CLI commands of the trace layer (`simforge ingest`, `simforge export-episodes`).

Exit codes: 0 when anything could be read (bad records are quarantined, not fatal), 1 when
nothing could be read, 2 for a strict-mode stop, an unknown ``--format`` or a broken plugin.
Progress and tables go to stderr/stdout through rich; ``--json`` prints only the JSON object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from simforge.console import make_console
from simforge.trace.errors import FormatPluginError, StrictModeAbort
from simforge.trace.export import EpisodeWriter
from simforge.trace.ingest import IngestResult, ProgressCallback, ingest, iter_episodes
from simforge.trace.registry import formats

PathsArg = Annotated[list[Path], typer.Argument(help="Trace files or folders of them.")]
FormatOpt = Annotated[
    str | None, typer.Option("--format", "-f", help="Force a format instead of detecting it.")
]
QuarantineOpt = Annotated[
    Path | None, typer.Option("--quarantine", "-q", help="Write rejected records here (JSONL).")
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Stop at the first bad record.")]


def _fail(message: str, code: int) -> typer.Exit:
    make_console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


def _progress_bar(enabled: bool) -> tuple[Progress | None, ProgressCallback | None]:
    if not enabled:
        return None, None
    bar = Progress(
        TextColumn("[bold]ingesting"), BarColumn(), DownloadColumn(),
        TextColumn("{task.fields[episodes]} episodes"), TimeRemainingColumn(),
        console=make_console(stderr=True), transient=True,
    )
    task = bar.add_task("ingest", total=None, episodes=0)

    def update(done: int, total: int, episodes: int) -> None:
        bar.update(task, completed=done, total=total, episodes=episodes)

    return bar, update


def _table(result: IngestResult) -> Table:
    table = Table(title=f"{result.episodes} episodes, {result.tool_calls} tool calls, "
                        f"{result.tools} tools, {result.rejected} rejected "
                        "(latency in ms; par % = share of calls issued in parallel)")
    table.add_column("tool", no_wrap=True)
    for column in ("calls", "errors", "err %", "p50", "p95", "p99", "par %"):
        table.add_column(column, justify="right", no_wrap=True)
    stats = result.stats.by_tool()
    for name, row in stats.items():
        stat = result.stats.tools[name]

        def ms(value: float | int | None) -> str:
            return "-" if value is None else f"{value:,.1f}"

        table.add_row(
            name, f"{stat.calls:,}", f"{stat.errors:,}", f"{100 * stat.error_rate:.1f}",
            ms(row["p50_ms"]), ms(row["p95_ms"]), ms(row["p99_ms"]),
            f"{100 * stat.parallel / stat.calls:.0f}" if stat.calls else "-",
        )
    return table


def ingest_command(
    paths: PathsArg,
    format: FormatOpt = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write native JSONL.")] = None,
    quarantine: QuarantineOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    strict: StrictOpt = False,
) -> None:
    """Read traces of any supported format; print per-tool statistics."""
    try:
        known = formats()
    except FormatPluginError as exc:
        raise _fail(str(exc), 2) from None
    if format is not None and format not in known:
        raise _fail(f"unknown format {format!r}; known: {', '.join(known)}", 2)
    bar, callback = _progress_bar(not as_json and sys.stderr.isatty())
    try:
        if bar is not None:
            bar.start()
        result = ingest(paths, format=format, quarantine=quarantine, strict=strict,
                        progress=callback, out=out)
    except StrictModeAbort as exc:
        raise _fail(f"{exc} (strict mode)", 2) from None
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        console = make_console()
        console.print(_table(result))
        console.print(f"formats: {result.formats or '{}'}", highlight=False)
        if result.nonfinite:
            console.print(f"[yellow]{result.nonfinite} NaN/Infinity values read as null[/yellow]",
                          highlight=False)
        if result.rejected:
            where = f" (see {quarantine})" if quarantine else " (use --quarantine to keep them)"
            console.print(f"[yellow]{result.rejected} records rejected{where}[/yellow]")
            for rejection in result.rejections[:5]:
                console.print(f"  {rejection}", highlight=False, markup=False)
        if out is not None:
            console.print(f"wrote {result.episodes} episodes to {out}", highlight=False)
    if not result.ok:
        raise _fail("nothing could be read", 1)


def export_command(
    paths: PathsArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL file.")],
    to: Annotated[str, typer.Option("--to", help="native or openai")] = "native",
    format: FormatOpt = None,
    quarantine: QuarantineOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Write episodes read from any format as native JSONL or OpenAI-messages JSONL."""
    if to not in ("native", "openai"):
        raise _fail(f"--to must be 'native' or 'openai', not {to!r}", 2)
    try:
        known = formats()
    except FormatPluginError as exc:
        raise _fail(str(exc), 2) from None
    if format is not None and format not in known:
        raise _fail(f"unknown format {format!r}; known: {', '.join(known)}", 2)
    result = IngestResult()
    try:
        with EpisodeWriter(out, "openai" if to == "openai" else "native") as writer:
            for episode in iter_episodes(paths, format, quarantine, strict, result=result):
                writer.write(episode)
    except StrictModeAbort as exc:
        raise _fail(f"{exc} (strict mode)", 2) from None
    make_console(stderr=True).print(
        f"wrote {writer.count} episodes to {out} ({to}); {result.rejected} records rejected",
        highlight=False)
    if not result.ok:
        raise _fail("nothing could be read", 1)


def register(app: typer.Typer) -> None:
    """Attach the trace commands to the main CLI app."""
    app.command("ingest")(ingest_command)
    app.command("export-episodes")(export_command)
