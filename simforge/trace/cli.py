"""CLI commands of the trace layer (`simforge ingest`, `simforge export-episodes`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the trace commands to the main CLI app."""
