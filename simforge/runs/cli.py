"""CLI commands of the runs layer: ``stress`` (run a matrix into the store), ``report`` (read a
run back as tables or HTML), ``compare`` (two runs, paired), ``regrade`` (a run's trajectories
scored again) and ``export`` (trajectories for training)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

from simforge.errors import UsageError
from simforge.report.stored import load_run

STORE_HELP = (
    "Run store: a SQLite path, sqlite:///FILE or postgresql+psycopg://... ($SIMFORGE_STORE)."
)


def _store_url(store: str | None) -> str:
    from simforge.runs.store import DEFAULT_STORE

    return store or os.environ.get("SIMFORGE_STORE") or DEFAULT_STORE


@contextmanager
def run_errors() -> Iterator[None]:
    """The main CLI's one-line errors (every :class:`~simforge.errors.UserError`), plus the
    infrastructure failures a user fixes outside simforge and that a traceback would not help
    with (a policy's endpoint down, a store that cannot be opened, no ray). Anything else, a
    bare ``ValueError`` included, is a bug and keeps its traceback. Every command that runs a
    policy or opens a store uses it."""
    from simforge.cli_support import err_console, user_errors
    from simforge.policies.base import PolicyUnavailable
    from simforge.runs.ray_backend import RayUnavailable
    from simforge.runs.store import StoreError

    with user_errors():
        try:
            yield
        except (PolicyUnavailable, RayUnavailable, StoreError) as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            raise typer.Exit(2) from None


def _split(values: list[str] | None) -> list[str]:
    return [v for raw in values or [] for v in raw.split(",") if v]


class LineProgress:
    """Progress where a bar cannot be drawn (a pipe, a file, CI logs): one line per tenth of the
    work, and one at least every ``every`` seconds, so long work is never silent."""

    def __init__(self, console: Console, description: str, total: int, *, done: int = 0,
                 every: float = 30.0) -> None:
        self.console, self.description, self.total = console, description, max(1, total)
        self.every = every
        self.started = self.last = time.monotonic()
        self.step = 0 if not done else done * 10 // self.total

    def update(self, done: int, extra: str = "") -> None:
        tenth = done * 10 // self.total
        now = time.monotonic()
        if tenth > self.step or now - self.last >= self.every or done >= self.total:
            if done >= self.total and self.step >= 10:
                return
            self.step, self.last = max(tenth, self.step), now
            self.console.print(
                f"{self.description}: {done:,}/{self.total:,} ({100 * done // self.total}%)"
                f"{', ' + extra if extra else ''}, {now - self.started:.0f} s",
                highlight=False, soft_wrap=True)
            if done >= self.total:
                self.step = 10


def _resolve_run(store: Any, run_id: str) -> str:
    if run_id == "latest":
        runs = store.runs()
        if not runs:
            raise UsageError(f"no runs in {store.display_url}")
        return str(runs[-1]["id"])
    return run_id


def stress(
    scenarios: list[str] = typer.Argument(None, help="Scenario ids or YAML paths."),
    policy: str = typer.Option(None, "--policy", "-p", help="Policy: NAME or NAME:ARG."),
    faults: list[str] = typer.Option(None, "--faults", "-f", help="Fault profiles (repeatable)."),
    seeds: int = typer.Option(None, "--seeds", "-n", min=1,
                              help="Seeds per task (default: scenario's)."),
    trials: int = typer.Option(1, "--trials", "-k", min=1,
                               help="Trials per cell (policy reseeded)."),
    tasks: list[str] = typer.Option(None, "--task", "-t", help="Only these tasks (repeatable)."),
    user: str = typer.Option(
        None, "--user", "-u", help="Simulated user: scripted or llm:MODEL ($SIMFORGE_USER)."
    ),
    workers: int = typer.Option(None, "--workers", "-w", help="Processes (0: in-process)."),
    backend: str = typer.Option("local", "--backend", help="local or ray."),
    ray_address: str = typer.Option(None, "--ray-address", help="Ray cluster (auto, ray://...)."),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    resume: str = typer.Option(None, "--resume", help="Complete this run (its stored plan)."),
    no_trajectories: bool = typer.Option(False, "--no-trajectories", help="Store summaries only."),
    attribute: bool = typer.Option(
        False, "--attribute",
        help="Also play each fault kind of a profile alone, to attribute the drop (with "
        "--resume: add this to a stored run)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary object."),
) -> None:
    """Run tasks x fault profiles x seeds x trials in parallel, streaming every finished episode
    into the run store; interrupted runs complete with --resume RUN_ID."""
    from simforge.cli_support import console, err_console
    from simforge.report.metrics import stress_summary
    from simforge.report.terminal import render
    from simforge.runs.matrix import RunConfig, normalise_ref
    from simforge.runs.runner import prepare
    from simforge.runs.store import RunStore

    if backend not in ("local", "ray"):
        err_console.print(f"[bold red]error:[/] --backend: {backend!r}; use local or ray")
        raise typer.Exit(2)
    with run_errors():
        run_store = RunStore(_store_url(store), create=not resume)  # a resumed run's must exist
        if resume:
            if scenarios or policy:
                raise UsageError("--resume replays the stored plan; give no scenarios or policy")
            prepared = prepare(run_store, resume=resume, backend=backend,  # type: ignore[arg-type]
                               attribute=attribute)
        else:
            if not scenarios or not policy:
                raise UsageError("give SCENARIO... and --policy (or --resume RUN_ID)")
            config = RunConfig(
                scenarios=list(dict.fromkeys(normalise_ref(s) for s in scenarios)),
                policy=policy,
                profiles=[normalise_ref(f) for f in _split(faults)] or ["none"], seeds=seeds,
                trials=trials,
                tasks=_split(tasks) or None,
                user=user or os.environ.get("SIMFORGE_USER") or None,
                attribute=attribute,
            ).with_baseline()
            prepared = prepare(run_store, config, backend=backend)  # type: ignore[arg-type]
        for warning in prepared.warnings:
            err_console.print(f"[yellow]warning:[/] {warning}", highlight=False)
        n_workers = workers if workers is not None else (os.cpu_count() or 1)
        err_console.print(
            f"run [bold]{prepared.run_id}[/]: {len(prepared.plan)} episodes "
            f"({prepared.done} stored, {len(prepared.todo)} to run) on {backend} "
            f"x{n_workers} -> {run_store.display_url}", highlight=False,
        )
        try:
            _run_with_progress(run_store, prepared, backend, n_workers, ray_address,
                               not no_trajectories)
        except KeyboardInterrupt:
            err_console.print(f"interrupted; finish it with: simforge stress --resume "
                              f"{prepared.run_id} --store {run_store.display_url}")
            raise typer.Exit(130) from None
        run, _, _, summary = load_run(run_store, prepared.run_id)
    if as_json:
        sys.stdout.write(json.dumps(stress_summary(summary)) + "\n")
        return
    console.print(render(summary, run))
    console.print(f"report: simforge report {prepared.run_id} --store {run_store.display_url}",
                  highlight=False)


def _run_with_progress(
    store: Any, prepared: Any, backend: str, workers: int, ray_address: str | None,
    trajectories: bool,
) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from simforge.cli_support import err_console
    from simforge.runs.runner import execute

    counts = {"valid": 0, "passed": 0, "invalid": 0}
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("pass {task.fields[rate]}"), TextColumn("invalid {task.fields[invalid]}"),
        TimeElapsedColumn(), TimeRemainingColumn(),
        console=err_console, transient=True, disable=not err_console.is_terminal,
    )
    job = bar.add_task(f"{prepared.config.policy}", total=len(prepared.plan),
                       completed=prepared.done, rate="-", invalid=0)
    lines = None if err_console.is_terminal else LineProgress(
        err_console, f"{prepared.config.policy}", len(prepared.plan), done=prepared.done)
    finished = prepared.done
    try:

        def advance(record: dict[str, Any], fresh: bool) -> None:
            nonlocal finished
            finished += 1
            if lines is None and not bar.live.is_started:  # once the workers are forked
                bar.start()
            if record["reward"] is None:
                counts["invalid"] += 1
            else:
                counts["valid"] += 1
                counts["passed"] += bool(record["passed"])
            rate = f"{100 * counts['passed'] / counts['valid']:.1f}%" if counts["valid"] else "-"
            bar.update(job, advance=1, rate=rate, invalid=counts["invalid"])
            if lines is not None:
                lines.update(finished, f"pass {rate}, invalid {counts['invalid']}")

        execute(store, prepared, backend=backend, workers=workers,  # type: ignore[arg-type]
                ray_address=ray_address, trajectories=trajectories, on_record=advance)
    finally:
        bar.stop()


def report(
    run_id: str = typer.Argument("latest", help="Run id, or 'latest'."),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    html: str = typer.Option(None, "--html", help="Also write a self-contained HTML report."),
    as_json: bool = typer.Option(False, "--json", help="Print every metric as JSON."),
) -> None:
    """A stored run's metrics: pass rate and CI, pass^k, noise and power, robustness per fault
    and per fault kind, safety violations with the calls that broke each rule."""
    from simforge.cli_support import console, err_console
    from simforge.report.terminal import render
    from simforge.runs.store import RunStore

    with run_errors():
        run_store = RunStore(_store_url(store), create=False)
        run_id = _resolve_run(run_store, run_id)
        run, episodes, trajectories, summary = load_run(run_store, run_id)
        if html:
            from simforge.report.html import write_html

            write_html(html, summary, run, episodes, trajectories=trajectories)
            err_console.print(f"wrote {html}", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps({"run": run, **summary}, default=str) + "\n")
        return
    console.print(render(summary, run))


def compare(
    run_a: str = typer.Argument(..., help="Run A (the reference), or 'latest'."),
    run_b: str = typer.Argument(..., help="Run B (compared against A), or 'latest'."),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    html: str = typer.Option(None, "--html", help="Also write a self-contained HTML page."),
    as_json: bool = typer.Option(False, "--json", help="Print every figure as JSON."),
) -> None:
    """Two runs, paired over the cells both played (task, fault profile, seed): the difference
    in pass rate and reward with a 95% interval, McNemar's exact test, the smallest difference
    this size can detect, per task and profile worst first, and one sentence."""
    from simforge.cli_support import console, err_console
    from simforge.report.compare import compare as compare_runs
    from simforge.report.terminal import compare_tables
    from simforge.runs.store import RunStore

    with run_errors():
        run_store = RunStore(_store_url(store), create=False)
        ids = [_resolve_run(run_store, r) for r in (run_a, run_b)]
        runs = [run_store.run(r) for r in ids]
        result = compare_runs(run_store.episodes(ids[0]), run_store.episodes(ids[1]),
                              a_run=runs[0], b_run=runs[1])
        if html:
            from simforge.report.html import write_compare_html

            write_compare_html(html, result)
            err_console.print(f"wrote {html}", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(result, default=str) + "\n")
        return
    console.print(compare_tables(result))


def regrade(
    run_id: str = typer.Argument(..., help="The run to re-grade, or 'latest'."),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Score a run's stored trajectories again with the current scenarios and validators, into
    a new run linked to the old one (each episode replayed and checked against its record)."""
    from simforge.cli_support import console, err_console
    from simforge.runs.regrade import regrade as regrade_run
    from simforge.runs.store import RunStore

    with run_errors():
        run_store = RunStore(_store_url(store), create=False)
        run_id = _resolve_run(run_store, run_id)
        total = run_store.count(run_id)
        lines = LineProgress(err_console, f"re-grading {run_id}", total)
        result = regrade_run(run_store, run_id,
                             on_record=lambda _record, done, _total: lines.update(done))
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
        return
    console.print(
        f"re-graded {result.episodes} episodes of {run_id} into run [bold]{result.run_id}[/]: "
        f"{result.changed} changed verdict ({result.passed_to_failed} passed -> failed, "
        f"{result.failed_to_passed} failed -> passed), {result.reward_changed} changed reward",
        highlight=False)
    for reason, n in result.not_replayed.items():
        console.print(f"[yellow]not re-graded:[/] {n}: {reason}", highlight=False)
    for line in result.versions:
        console.print(f"grading changed: {line}", highlight=False)
    console.print(f"compare: simforge compare {run_id} {result.run_id} --store "
                  f"{run_store.display_url}", highlight=False)


def export(
    run_ids: list[str] = typer.Argument(..., help="Run ids (or 'latest')."),
    fmt: str = typer.Option("openai-jsonl", "--format",
                            help="openai-jsonl, hf-dataset, dpo-pairs or native."),
    out: str = typer.Option(None, "--out", "-o", help="Output file (a folder for hf-dataset)."),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    include_invalid: bool = typer.Option(False, "--include-invalid",
                                         help="Keep invalid episodes (no reward)."),
    margin: float = typer.Option(0.0, "--margin", help="dpo-pairs: least reward gap."),
    tools: str = typer.Option("ref", "--tools",
                              help="JSONL: 'ref' (each tool list once, in OUT.tools.json, "
                                   "rows name it by tools_id) or 'inline' (in every row)."),
) -> None:
    """Stored trajectories for training: SFT chat messages, a datasets folder, or DPO pairs."""
    from simforge.cli_support import err_console
    from simforge.runs.export import FORMATS, TOOLS_MODES, export_runs, tools_path
    from simforge.runs.store import RunStore

    with run_errors():
        if fmt not in FORMATS:
            raise UsageError(f"--format: {fmt!r}; use one of {list(FORMATS)}")
        if tools not in TOOLS_MODES:
            raise UsageError(f"--tools: {tools!r}; use one of {list(TOOLS_MODES)}")
        run_store = RunStore(_store_url(store), create=False)
        ids = [_resolve_run(run_store, r) for r in run_ids]
        target = out or FORMATS[fmt].format(run="_".join(ids))
        n = export_runs(run_store, ids, fmt, target, include_invalid=include_invalid,
                        margin=margin, tools=tools)
    what = "pairs" if fmt == "dpo-pairs" else "episodes"
    extra = (f" (tools in {tools_path(target)})"
             if tools == "ref" and fmt in ("openai-jsonl", "dpo-pairs") else "")
    err_console.print(f"wrote {n} {what} to {target}{extra}", highlight=False)
    if fmt == "dpo-pairs" and n == 0:
        err_console.print(
            "[yellow]warning:[/] no pair: a pair needs two episodes of one cell (task, fault "
            "profile, seed) whose rewards differ by more than --margin; export several runs "
            "of the same matrix, or stress with --trials > 1", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach this layer's commands to the main CLI app."""
    app.command()(stress)
    app.command()(report)
    app.command()(compare)
    app.command()(regrade)
    app.command()(export)
