"""The `simforge` command line."""

from __future__ import annotations

import typer

from simforge.trace.cli import register as register_trace

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
register_trace(app)


def main() -> None:
    app()
