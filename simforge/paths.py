"""Where the shipped packs, scenarios, validators and examples are.

In a source checkout (or an editable install) they are the top-level folders beside the
``simforge`` package; a wheel carries them under ``simforge/_bundled``. ``SIMFORGE_<KIND>``
(for example ``SIMFORGE_SCENARIOS``) adds further folders, separated by ``os.pathsep``.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dirs(kind: str) -> list[Path]:
    """Folders of ``kind`` (``tools_mock``, ``scenarios``, ``validators``, ``examples``)."""
    dirs: list[Path] = []
    extra = os.environ.get(f"SIMFORGE_{kind.upper()}")
    if extra:
        dirs.extend(Path(p) for p in extra.split(os.pathsep) if p)
    for candidate in (_PACKAGE.parent / kind, _PACKAGE / "_bundled" / kind):
        if candidate.is_dir():
            dirs.append(candidate)
            break
    return dirs
