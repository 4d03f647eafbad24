"""Loading packs and plugin files by path.

``tools_mock/``, ``validators/`` and ``scenarios/`` are plain folders, not importable packages
(``validators`` is also an unrelated PyPI package that a folder on ``sys.path`` would hide). Each
file or pack folder is imported under a private name, ``simforge_ext.<group>.<name>``, and a pack
folder becomes a package there, so its files can import each other relatively (``from .crm import
tools``). Third parties register through the entry-point groups ``simforge.packs`` (and, for later
layers, ``simforge.validators``, ``simforge.faults``, ``simforge.formats``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
import threading
import types
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from simforge.cache import folder_fingerprint
from simforge.derived import deriving
from simforge.errors import PluginError
from simforge.paths import resource_dirs
from simforge.plugins import PLUGINS, entry_points
from simforge.tools.pack import Pack

_lock = threading.RLock()
_packs: dict[Path, Pack] = {}


def _namespace(group: str) -> str:
    for name in ("simforge_ext", f"simforge_ext.{group}"):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = []
            sys.modules[name] = module
    return f"simforge_ext.{group}"


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _digest(path: Path) -> str:
    """Two plugins with the same name in different folders must not share a module."""
    return hashlib.sha1(str(path).encode()).hexdigest()[:8]


def load_file(path: Path, group: str) -> types.ModuleType:
    """Import one plugin file under ``simforge_ext.<group>.<stem>``."""
    path = path.resolve()
    module_name = f"{_namespace(group)}.{_safe(path.stem)}_{_digest(path)}"
    with _lock:
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise PluginError(f"{path}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise PluginError(f"{path}: failed to load: {type(exc).__name__}: {exc}") from exc
        return module


PackFormats = Mapping[str, Callable[[Path], Pack]]
"""Marker file -> loader of a pack folder holding it (:attr:`simforge.plugins.Plugins.pack_formats`;
synthesized packs: ``pack.yaml``)."""


def find_pack_dir(
    ref: str, *, relative_to: Path | None = None, formats: PackFormats | None = None
) -> Path:
    """A pack folder from a name (searched in ``tools_mock/``) or a path: one holding a
    ``pack.py`` or the marker file of a pack format."""
    markers = ("pack.py", *(PLUGINS.pack_formats if formats is None else formats))
    candidates = []
    if relative_to is not None:
        candidates.append(relative_to / ref)
    as_path = Path(ref)
    looks_like_path = as_path.is_absolute() or ref.startswith(".") or "/" in ref or "\\" in ref
    if looks_like_path:
        candidates.append(as_path)
    candidates.extend(d / ref for d in resource_dirs("tools_mock"))
    for candidate in candidates:
        if any((candidate / marker).is_file() for marker in markers):
            return candidate.resolve()
    searched = ", ".join(str(c) for c in candidates)
    raise PluginError(
        f"pack {ref!r} not found (looked for {' or '.join(markers)} in: {searched})"
    )


def load_pack(
    ref: str, *, relative_to: Path | None = None, formats: PackFormats | None = None
) -> Pack:
    """The pack a scenario names; loaded once per process. A folder with a ``pack.py`` is a
    hand-written pack; any other is loaded by the format whose marker file it holds
    (``formats``, default the process's :data:`~simforge.plugins.PLUGINS`)."""
    registered = _entry_point_packs()
    if ref in registered:
        return registered[ref]
    if formats is None:
        formats = PLUGINS.pack_formats
    folder = find_pack_dir(ref, relative_to=relative_to, formats=formats)
    with _lock:
        if folder in _packs:
            return _packs[folder]
        if not (folder / "pack.py").is_file():
            _packs[folder] = _load_by_format(folder, formats)
            return _packs[folder]
        package = f"{_namespace('packs')}.{_safe(folder.name)}_{_digest(folder)}"
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [str(folder)]
            sys.modules[package] = module
        fingerprint = folder_fingerprint(folder)
        with deriving(folder, fingerprint):  # schemas remembered per pack content hash
            try:
                entry = importlib.import_module(f"{package}.pack")
            except Exception as exc:
                raise PluginError(
                    f"pack {folder}: failed to load: {type(exc).__name__}: {exc}"
                ) from exc
            pack = getattr(entry, "PACK", None)
            if not isinstance(pack, Pack):
                raise PluginError(f"pack {folder}: pack.py must define PACK = Pack(...)")
            pack.path = folder
            pack.fingerprint = fingerprint
            if not pack.policy:
                pack.policy = read_policy(folder)
            if not pack.profiles:
                pack.profiles = read_profiles(folder)
            try:
                pack.catalog  # noqa: B018 - validate eagerly: duplicate tools, unknown entities
            except Exception as exc:
                raise PluginError(f"pack {folder}: {exc}") from exc
        _packs[folder] = pack
        return pack


POLICY_FILE = "policy.md"
POLICY_DIR = "policy"


PROFILE_DIR = "faults"


def read_profiles(folder: Path) -> list[Any]:
    """A pack folder's fault profiles: ``faults/*.yaml``, each named as its file."""
    from simforge.config import ConfigError
    from simforge.faults.library import load_profile

    out = []
    for path in sorted((folder / PROFILE_DIR).glob("*.yaml")):
        try:
            out.append(load_profile(path))
        except ConfigError as exc:
            raise PluginError(f"pack {folder}: {exc}") from exc
    return out


def read_policy(folder: Path) -> dict[str, str]:
    """A pack folder's policy: ``policy.md`` (every system) and ``policy/<system>.md``."""
    sections: dict[str, str] = {}
    general = folder / POLICY_FILE
    try:
        if general.is_file():
            sections[""] = general.read_text(encoding="utf-8")
        parts = folder / POLICY_DIR
        if parts.is_dir():
            for path in sorted(parts.glob("*.md")):
                sections[path.stem] = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"pack {folder}: policy: {exc}") from exc
    return sections


def _load_by_format(folder: Path, formats: PackFormats) -> Pack:
    """A pack of plain files (e.g. synthesized from traces, ``pack.yaml``), loaded by the format
    whose marker file the folder holds."""
    load = next((formats[m] for m in formats if (folder / m).is_file()), None)
    if load is None:
        raise PluginError(f"pack {folder}: no pack.py and no file of a known pack format "
                          f"({', '.join(sorted(formats)) or 'none registered'})")
    try:
        pack = load(folder)
        pack.policy = pack.policy or read_policy(folder)
        pack.catalog  # noqa: B018 - validate eagerly, like a hand-written pack
    except Exception as exc:
        raise PluginError(f"pack {folder}: failed to load: {type(exc).__name__}: {exc}") from exc
    return pack


def pack_dirs() -> list[Path]:
    """Every pack folder in the search path."""
    out = []
    for root in resource_dirs("tools_mock"):
        out.extend(sorted(p.parent for p in root.glob("*/pack.py")))
    return out


@cache
def _entry_point_packs() -> dict[str, Any]:
    found = {}
    for ep in entry_points(group="simforge.packs"):
        try:
            pack = ep.load()
        except Exception as exc:
            raise PluginError(f"entry point {ep.name!r} ({ep.value}): {exc}") from exc
        if not isinstance(pack, Pack):
            raise PluginError(f"entry point {ep.name!r} ({ep.value}): not a simforge Pack")
        found[ep.name] = pack
    return found
