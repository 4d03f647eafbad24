"""Domain validators from plugins: every ``*.py`` in the ``validators/`` folders (loaded by
path, see ``simforge.scenario.plugins``: the folder is not a package, because ``validators`` is
also an unrelated PyPI package) and every entry point of the group ``simforge.validators``.

Importing a plugin registers its ``@validator``, ``@invariant`` and ``@policy_check`` functions.
Loading is eager (the scenario registry calls it before it checks a scenario's validator
names) and happens once per file; a file that fails raises ``PluginError`` naming it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from simforge.paths import resource_dirs
from simforge.plugins import entry_points
from simforge.scenario.plugins import PluginError, load_file

_lock = threading.RLock()
_loaded_files: set[Path] = set()
_entry_points_loaded = False


def validator_plugin_files(dirs: list[Path] | None = None) -> list[Path]:
    """The plugin files, in a stable order (files starting with ``_`` are helpers, skipped)."""
    roots = dirs if dirs is not None else resource_dirs("validators")
    return [
        path.resolve()
        for root in roots
        for path in sorted(root.glob("*.py"))
        if not path.name.startswith("_")
    ]


def load_validator_plugins(dirs: list[Path] | None = None) -> list[Path]:
    """Import every validator plugin not imported yet; returns the files loaded by this call."""
    global _entry_points_loaded
    loaded: list[Path] = []
    with _lock:
        for path in validator_plugin_files(dirs):
            if path in _loaded_files:
                continue
            load_file(path, "validators")
            _loaded_files.add(path)
            loaded.append(path)
        if not _entry_points_loaded:
            for ep in entry_points(group="simforge.validators"):
                try:
                    ep.load()
                except Exception as exc:
                    raise PluginError(
                        f"validator entry point {ep.name!r} ({ep.value}): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
            _entry_points_loaded = True
    return loaded
