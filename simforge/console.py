"""The CLI's rich consoles.

Rich lays tables out at 80 columns when its output is not a terminal (a pipe, a file, CI logs),
which cuts the tool and task names of the reports (``acme/can…``); such output gets 160 columns
instead. ``$COLUMNS`` still decides when it is set.
"""

from __future__ import annotations

import os

from rich.console import Console

PIPED_WIDTH = 160


def make_console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPED_WIDTH)
    return console
