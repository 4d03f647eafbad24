"""CLI command of the synth layer: ``simforge synth`` (``simforge fidelity``, which runs
environments, is the audit layer's).

Exit codes, as for ``simforge ingest``: 0 when a pack was written (rejected trace records are
counted and reported, not fatal), 1 when nothing could be read or learned from (no pack is
written), 2 for a snapshot file or a pack directory that cannot be read.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from simforge.console import make_console

_err = make_console(stderr=True)
_out = make_console()


def _fail(message: str, code: int) -> typer.Exit:
    """One line on stderr (never wrapped, so scripts can grep it); the exit to raise."""
    _err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _peak_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def register(app: typer.Typer) -> None:
    """Attach this layer's commands to the main CLI app."""

    @app.command("synth")
    def synth_command(
        traces: list[Path] = typer.Argument(
            ...,
            help="Trace files or folders (any ingestible format). A path that is no trace but "
            "a data snapshot is read as --data, so `--data A B C` works.",
        ),
        out: Path = typer.Option(..., "--out", help="The pack directory to write."),
        data: list[Path] = typer.Option(
            [],
            "--data",
            help="Snapshot files or folders (JSON, JSONL, CSV, SQLite, TOML); repeatable.",
        ),
        holdout: float = typer.Option(
            0.0, "--holdout", min=0.0, max=1.0, help="Fraction of episodes kept out of learning."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the train/holdout split."),
        keep_nongold: bool = typer.Option(
            False,
            "--keep-nongold",
            help="Keep the training episodes labelled failed among the scenario's training "
            "tasks (by default they go to scenario-nongold.yaml).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Synthesize an environment pack (tools, world, tasks, scenario) from traces."""
        from simforge.synth.pack.files import PackFormatError, check_out
        from simforge.synth.pipeline import SynthWarning, synthesize
        from simforge.synth.read.snapshot import SnapshotError
        from simforge.synth.read.traces import NothingToLearn

        try:
            check_out(out)  # before the learning, not after it
        except PackFormatError as exc:
            raise _fail(str(exc), 2) from None
        started = time.perf_counter()
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=_err,
            transient=True,
            disable=not _err.is_terminal,
        ) as bar:
            tasks: dict[str, object] = {}

            def tick(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total or None)
                bar.update(tasks[stage], completed=done, total=total or None)  # type: ignore[arg-type]

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SynthWarning)
                try:
                    report = synthesize(
                        traces,
                        out,
                        data=data,
                        holdout=holdout,
                        seed=seed,
                        progress=tick,
                        keep_nongold=keep_nongold,
                    )
                except SnapshotError as exc:
                    raise _fail(str(exc), 2) from None
                except NothingToLearn as exc:
                    if as_json:
                        typer.echo(json.dumps(exc.to_json(), indent=2))
                    raise _fail(str(exc), 1) from None
        for warning in caught:
            _err.print(f"[yellow]warning:[/] {escape(str(warning.message))}", highlight=False)
        summary = {
            "out": str(report.out),
            "episodes": report.episodes,
            "empty_episodes": report.empty_episodes,
            "train": report.train,
            "holdout": len(report.holdout),
            "tools": report.tools,
            "entities": report.entities,
            "handlers": report.handlers,
            "tasks": report.tasks,
            "gold_tasks": report.gold_tasks,
            "eval_tasks": report.eval_tasks,
            "nongold_tasks": report.nongold_tasks,
            "unproven": report.unproven,
            "eval_skipped": report.eval_skipped,
            "policy_chars": report.policy_chars,
            "declared_only": report.declared_only,
            "warnings": report.warnings,
            "rejected": report.rejected,
            "rejections": report.rejections,
            "read_as_data": report.read_as_data,
            "seconds": round(time.perf_counter() - started, 3),
            "peak_rss_mib": round(_peak_mib(), 1),
        }
        if as_json:
            _out.print_json(json.dumps(summary))
            return
        table = Table(title=f"pack {report.out}")
        table.add_column("tool")
        table.add_column("handler")
        for tool, kind in sorted(report.handlers.items()):
            table.add_row(tool, kind)
        _out.print(table)
        policy = f"a policy of {report.policy_chars} characters; " if report.policy_chars else ""
        _out.print(
            f"{report.episodes} episodes ({report.empty_episodes} without tool calls skipped), "
            f"{report.train} learned from, {len(report.holdout)} held out; "
            f"{report.tasks} tasks ({report.gold_tasks} gold, {report.eval_tasks} in the eval "
            f"split; {report.nongold_tasks} failed episodes kept out of training; "
            f"{len(report.unproven)} left out, nothing in them proving the work); {policy}"
            f"{summary['seconds']} s, peak memory {summary['peak_rss_mib']} MiB",
            highlight=False,
        )
        if report.read_as_data:
            _out.print(
                f"read as --data (not traces): {', '.join(report.read_as_data)}", highlight=False
            )
        if report.rejected:
            _out.print(f"[yellow]{report.rejected} trace records rejected[/yellow]")
            for rejection in report.rejections[:5]:
                _out.print(f"  {rejection}", highlight=False, markup=False)
