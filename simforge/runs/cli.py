"""CLI commands of the runs layer."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach this layer's commands to the main CLI app."""
