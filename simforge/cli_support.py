"""What every command-line module shares: the consoles, the user-error guard, the progress bar.

The root CLI (:mod:`simforge.cli`) registers each layer's commands, so a layer's CLI importing
back into it would import every other layer's; they import this small module instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from simforge.console import make_console

console = make_console()
err_console = make_console(stderr=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn errors about the user's input (:class:`simforge.errors.UserError`: a scenario, a
    config, an action, a trace, a plugin) into one clear line and exit code 2, no traceback.
    Anything else is a bug or an infrastructure failure and keeps its traceback."""
    from simforge.errors import UserError

    try:
        yield
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None


def progress(console_: Console | None = None) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console_ or err_console,
        transient=True,
        disable=not (console_ or err_console).is_terminal,
    )
