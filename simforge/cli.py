"""The `simforge` command line: demo, run, and listings of what is registered."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from simforge.audit.cli import register as register_audit
from simforge.cli_support import console, err_console, progress, user_errors
from simforge.faults.cli import register as register_faults
from simforge.runs.cli import register as register_runs
from simforge.serve.cli import register as register_serve
from simforge.synth.cli import register as register_synth
from simforge.trace.cli import register as register_trace

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Production agent traces in; perturbed, scored environments out.",
)
scenarios_app = typer.Typer(no_args_is_help=True, help="Scenarios that are registered.")
tools_app = typer.Typer(no_args_is_help=True, help="Tools of the registered packs.")
app.add_typer(scenarios_app, name="scenarios")
app.add_typer(tools_app, name="tools")
register_trace(app)
register_faults(app)
register_synth(app)
register_serve(app)
register_runs(app)
register_audit(app)

@app.command()
def run(
    scenario: str = typer.Argument(
        ..., help="Scenario id (domain/name-vN) or a scenario YAML path."
    ),
    policy: str = typer.Option(
        "oracle", "--policy", "-p", help="Policy: NAME or NAME:ARG (as for stress)."
    ),
    seeds: int = typer.Option(
        None, "--seeds", "-n", min=1, help="Number of seeds (default: the scenario's)."
    ),
    task: str = typer.Option(None, "--task", "-t", help="Only this task."),
    faults: str = typer.Option(None, "--faults", "-f", help="Fault profile (name or YAML path)."),
    user: str = typer.Option(
        None, "--user", "-u", help="Simulated user: scripted or llm:MODEL ($SIMFORGE_USER)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a scenario's tasks with a policy over seeds; print results."""
    from simforge.env import make
    from simforge.runs import run_episode
    from simforge.runs.cli import run_errors
    from simforge.runs.matrix import seeds_for
    from simforge.runs.specs import build_policy

    with run_errors():
        env = make(scenario, faults=faults, user=user)
        chosen = seeds_for(env.scenario.seeds, seeds)
        tasks = [env.scenario.task(task).id] if task else [t.id for t in env.scenario.tasks]
        pol = build_policy(policy)
        if getattr(pol, "privileged", False):  # it plays the tasks' reference solutions
            _require_oracles(env, tasks)
        episodes = []
        try:
            with progress() as bar:
                job = bar.add_task(f"{env.scenario.id} [{policy}]",
                                   total=len(chosen) * len(tasks))
                for task_id in tasks:
                    for seed in chosen:
                        episodes.append(run_episode(
                            env, pol, seed=seed, task=task_id, faults=faults
                        ).to_dict())
                        bar.advance(job)
        finally:
            close = getattr(pol, "close", None)
            if close is not None:
                close()
    _say_invalid(episodes)
    if as_json:
        sys.stdout.write(json.dumps({"episodes": episodes}) + "\n")
        return
    console.print(
        _results_table(episodes, title=f"{scenario} · {policy} · faults: {faults or 'none'}")
    )


def _require_oracles(env: Any, tasks: list[str]) -> None:
    from simforge.config import ConfigError, at_line

    missing = [(i, t) for i, t in enumerate(env.scenario.tasks) if t.id in tasks and not t.oracle]
    if missing:
        path = env.loaded.path
        raise ConfigError(path or env.scenario.id, [
            at_line(path, ["tasks", i], f"task {t.id!r} has no oracle: steps for this policy "
                    "to play") for i, t in missing
        ])


def _say_invalid(episodes: list[dict[str, Any]]) -> None:
    """Invalid episodes (a model's endpoint down, a user simulator failing) are results, not a
    crash: each distinct reason in one line on stderr, the rest of the run kept."""
    reasons: dict[str, int] = {}
    for e in episodes:
        if e["reward"] is None and e.get("invalid_reason"):
            reasons[e["invalid_reason"]] = reasons.get(e["invalid_reason"], 0) + 1
    for reason, n in list(reasons.items())[:5]:
        err_console.print(
            f"[yellow]invalid:[/] {n} of {len(episodes)} episode(s): {reason}", highlight=False
        )


@app.command()
def demo(
    out: Path = typer.Option(
        Path("simforge-demo"), "--out", "-o", help="Where the pack, store and report go."
    ),
    seeds: int = typer.Option(3, "--seeds", "-n", min=1, help="Seeds per task."),
    trials: int = typer.Option(2, "--trials", "-k", min=1, help="Trials per cell."),
    workers: int = typer.Option(0, "--workers", "-w", help="Worker processes (0: in this one)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object instead of the summary."
    ),
) -> None:
    """The whole pipeline on the shipped examples: traces ingested, a pack synthesized, every
    scenario run by a careful client, one that does not retry and two floors, without and with
    faults (each fault kind also alone), scored, stored, compared and reported."""
    from simforge.demo import demo_summary, run_demo
    from simforge.runs.cli import LineProgress

    lines: dict[str, LineProgress] = {}
    with user_errors(), progress(err_console) as bar:
        job = bar.add_task("starting", total=None)

        def advance(stage: str, done: int, total: int) -> None:
            bar.update(job, description=stage, completed=done, total=total)
            if not err_console.is_terminal:  # piped: a line now and then, never silence
                if stage not in lines:
                    lines[stage] = LineProgress(err_console, stage, total)
                lines[stage].update(done)

        result = run_demo(out, seeds=seeds, trials=trials, workers=workers, advance=advance)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
        return
    console.print(demo_summary(result), width=min(console.width, 80))


def _results_table(episodes: list[dict[str, Any]], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col, justify in [
        ("scenario", "left"),
        ("task", "left"),
        ("policy", "left"),
        ("faults", "left"),
        ("seed", "right"),
        ("steps", "right"),
        ("sim time", "right"),
        ("reward", "right"),
        ("outcome", "left"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for e in episodes:
        table.add_row(
            e["scenario"],
            e["task"],
            e["policy"],
            _faults_cell(e),
            str(e["seed"]),
            str(e["steps"]),
            f"{e['sim_time']:.1f} s",
            "invalid" if e["reward"] is None else f"{e['reward']:.2f}",
            _outcome(e),
        )
    return table


def _faults_cell(e: dict[str, Any]) -> str:
    fired = len(e.get("faults_injected", []))
    return e.get("faults", "none") + (f" ({fired} fired)" if fired else "")


def _outcome(e: dict[str, Any]) -> str:
    if e["reward"] is None:
        return f"[yellow]invalid: {e['invalid_reason']}[/]"
    if e["truncated"]:
        return "[red]truncated[/]"
    if e["failed"]:
        return "[red]failed: " + ", ".join(e["failed"]) + "[/]"
    return "[green]passed[/]"


@scenarios_app.command("list")
def scenarios_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """List registered scenarios."""
    from simforge.scenario import default_registry

    with user_errors():
        items = default_registry.all()
    rows = [
        {
            "id": i.scenario.id,
            "pack": i.pack.name,
            "tasks": [t.id for t in i.scenario.tasks],
            "seeds": i.scenario.seeds,
            "description": i.scenario.description,
            "path": str(i.path) if i.path else None,
        }
        for i in items
    ]
    _emit(rows, as_json, ["id", "pack", "tasks", "description"], "scenarios")


@tools_app.command("list")
def tools_list(
    as_json: bool = typer.Option(False, "--json"),
    pack: str = typer.Option(None, "--pack", help="Only this pack (name or folder)."),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="OpenAI strict-mode schemas: optional parameters nullable and required, every "
        "object closed (implies --json; one OpenAI function tool per row under 'openai').",
    ),
) -> None:
    """List the tools of every pack (or one), with schemas in --json."""
    from simforge.scenario.plugins import load_pack, pack_dirs

    with user_errors():
        packs = [load_pack(pack)] if pack else [load_pack(str(d)) for d in pack_dirs()]
    rows = []
    for p in packs:
        for t in p.catalog.values():
            row: dict[str, Any] = {
                "pack": p.name,
                "name": t.spec.name,
                "system": t.spec.system,
                "kind": t.spec.kind,
                "entities": list(t.spec.entities),
                "description": t.spec.description,
                "input_schema": t.spec.input_schema,
                "output_schema": t.spec.output_schema,
                "capacity": t.spec.capacity,
                "latency": t.spec.latency.model_dump(),
            }
            if strict:
                exported = t.spec.to_openai(strict=True)
                row["openai"] = exported
                row["strict"] = exported["function"]["strict"]
            rows.append(row)
    if strict:
        loose = [f"{r['pack']}/{r['name']}" for r in rows if not r["strict"]]
        if loose:
            err_console.print(
                f"[yellow]warning:[/] {len(loose)} tools cannot be strict (exported with "
                f"strict false): {', '.join(loose[:10])}",
                highlight=False,
            )
    _emit(rows, as_json or strict, ["pack", "system", "name", "kind", "description"], "tools")


def _emit(rows: list[dict[str, Any]], as_json: bool, columns: list[str], what: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps({what: rows}) + "\n")
        return
    table = Table(title=f"{len(rows)} {what}", title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(
            *[
                ", ".join(map(str, v)) if isinstance(v, list) else str(v or "")
                for v in (row[c] for c in columns)
            ]
        )
    console.print(table)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
