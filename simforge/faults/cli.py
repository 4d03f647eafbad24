"""`simforge faults list` and `simforge faults show PROFILE`."""

from __future__ import annotations

import json
import sys

import typer
from rich.table import Table

from simforge.console import make_console

faults_app = typer.Typer(no_args_is_help=True, help="Fault kinds and profiles.")
console = make_console()


@faults_app.command("list")
def faults_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """Every fault kind with its parameters and defaults, and the built-in profiles."""
    from simforge.faults.library import builtin_profiles, describe_kinds

    kinds = describe_kinds()
    profiles = {name: p.description for name, p in builtin_profiles().items()}
    if as_json:
        sys.stdout.write(json.dumps({"kinds": kinds, "profiles": profiles}) + "\n")
        return
    table = Table(title=f"{len(kinds)} fault kinds", title_justify="left")
    for col in ("kind", "stage", "parameters (default)", "what it does"):
        table.add_column(col, overflow="fold")
    for k in kinds:
        params = ", ".join(f"{n}={v['default']!r}" for n, v in k["params"].items())
        table.add_row(
            k["kind"],
            k["stage"] + (f" ({k['only_for']}s)" if k["only_for"] else ""),
            params,
            k["description"],
        )
    console.print(table)
    listing = Table(title="profiles", title_justify="left")
    listing.add_column("name")
    listing.add_column("description", overflow="fold")
    for name, description in profiles.items():
        listing.add_row(name, description)
    console.print(listing)


@faults_app.command("show")
def faults_show(
    profile: str = typer.Argument(..., help="A built-in profile name or a profile YAML path."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print one profile's rules and background processes."""
    from simforge.cli_support import user_errors
    from simforge.faults.library import resolve_profile

    with user_errors():
        found = resolve_profile(profile)
    data = found.model_dump(mode="json")
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        return
    table = Table(title=f"{found.name}: {found.description}", title_justify="left")
    for col in ("rule", "fault", "target", "when", "p"):
        table.add_column(col, overflow="fold")
    for rule in data["rules"]:
        table.add_row(
            rule["id"],
            json.dumps(rule["fault"]),
            json.dumps(rule["target"]),
            json.dumps(rule["when"]),
            f"{rule['probability']:g}",
        )
    console.print(table)
    for bg in data["background"]:
        console.print(f"background {bg['kind']}: {json.dumps(bg)}")


def register(app: typer.Typer) -> None:
    app.add_typer(faults_app, name="faults")
