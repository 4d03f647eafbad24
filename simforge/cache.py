"""Derived data cached on disk by content hash, shared by every process of a machine.

What a process derives from files that do not change between runs (a pack's validated seed
tables for a world seed and size, the JSON schemas of a pack folder's tools and entities, see
:mod:`simforge.derived`, the id of a scenario file that validated) is written once
under ``$SIMFORGE_CACHE`` (default ``$XDG_CACHE_HOME/simforge`` or ``~/.cache/simforge``;
``SIMFORGE_CACHE=off`` disables it) and read back by the next process: a stress worker, a Ray
task, the next ``simforge run``.

An entry's key is a SHA-256 over everything the value is derived from: the bytes of every file
of the pack folder (or of the one scenario file; not their times: a checkout or a copy keeps the
cache), the source of simforge itself and the versions of the libraries that shape the value
(Faker generates the seed rows, pydantic validates them), and the parameters. A change to any of
them is a new key; nothing is ever invalidated in place. Entries are written atomically (a
temporary sibling renamed onto the name), so two processes filling the same entry at once both
leave a whole file, and a reader never sees half of one. An entry that does not read back
(truncated by a full disk or a power cut, edited, from another format version) is a miss, and
is overwritten; so entries are not flushed to disk before the rename (``fsync`` was most of the
CPU time of writing one: 33 scenario ids cost 48 ms with it, 8 ms without).

The cache is local and trusted like the pack's own files: an entry is JSON checked for its
format and key, not validated again row by row (that is the work it saves). Values over
``MAX_ENTRY_BYTES`` are not written.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

from simforge import atomic

FORMAT = "simforge-cache/1"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_OFF = ("off", "none", "0", "false", "no")


def cache_root() -> Path | None:
    """The cache folder, or ``None`` when ``SIMFORGE_CACHE`` turns it off."""
    raw = os.environ.get("SIMFORGE_CACHE", "").strip()
    if raw.lower() in _OFF:
        return None
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join("~", ".cache")
    return Path(base).expanduser() / "simforge"


def _listing(root: Path, suffix: str = "", *, hidden: bool = True) -> list[tuple[str, str]]:
    """``(relative POSIX name, path)`` of the files under ``root`` (``__pycache__`` folders left
    out, names ending in ``suffix``, hidden names too unless ``hidden``), in the order of
    ``sorted(root.rglob(...))``: one ``os.walk``, no ``Path`` a file (``rglob`` and sorting
    paths cost 10 ms for simforge's 200 files, more than hashing them)."""
    found: list[tuple[tuple[str, ...], str]] = []
    top = str(root)
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__" and (hidden or not d.startswith("."))]
        rel = os.path.relpath(folder, top)
        parts = () if rel == os.curdir else tuple(rel.split(os.sep))
        for name in names:
            if name.endswith(suffix) and (hidden or not name.startswith(".")):
                found.append(((*parts, name), os.path.join(folder, name)))
    found.sort()
    return [("/".join(parts), path) for parts, path in found]


def _hash_files(digest: Any, files: Iterable[tuple[str, str]]) -> None:
    for name, path in files:
        digest.update(name.encode())
        digest.update(b"\0")
        try:
            with open(path, "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(b"\1unreadable")
        digest.update(b"\0")


def folder_fingerprint(folder: Path) -> str:
    """SHA-256 of the names and bytes of every file under ``folder`` (bytecode caches and
    hidden files left out)."""
    digest = hashlib.sha256()
    files = [(n, p) for n, p in _listing(folder, hidden=False) if os.path.isfile(p)]
    _hash_files(digest, files)
    return digest.hexdigest()


def _version(dist: str) -> str:
    module = sys.modules.get(dist.replace("-", "_"))
    found = getattr(module, "__version__", None) or getattr(module, "VERSION", None)
    if isinstance(found, str):  # already imported: no metadata file to parse (1 ms each)
        return found
    try:
        return version(dist)
    except PackageNotFoundError:
        return "-"


@cache
def code_fingerprint() -> str:
    """SHA-256 of simforge's own source and of the versions of the libraries that shape derived
    values (computed once a process: about 200 files)."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    digest.update(_source_digest(package, _listing(package, ".py")).encode())
    for dist in ("faker", "pydantic", "pydantic-core", "sqlmodel", "sqlalchemy", "orjson"):
        digest.update(f"{dist}={_version(dist)}\0".encode())
    return digest.hexdigest()


def _source_digest(package: Path, files: list[tuple[str, str]]) -> str:
    """SHA-256 of the names and bytes of ``files``, remembered in the cache under their names,
    sizes and modification times (how CPython checks a ``.pyc`` against its source): a process
    stats the 200 files of simforge instead of reading and hashing them. A checkout or an edit
    changes the times, a miss that hashes the bytes again (to the same digest when the bytes
    are the same, so what is keyed by it stays valid)."""
    stats = hashlib.sha256(f"{FORMAT}\0{package}\0".encode())
    for _, path in files:
        try:
            st = os.stat(path)
            stats.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            stats.update(f"{path}\0unreadable\0".encode())
    key = stats.hexdigest()
    known = load("source", key)
    if isinstance(known, str):
        return known
    digest = hashlib.sha256()
    _hash_files(digest, files)
    value = digest.hexdigest()
    store("source", key, value)
    return value


def entry_key(*parts: Any) -> str:
    """The key of an entry derived from ``parts`` (strings, numbers, fingerprints)."""
    return hashlib.sha256(orjson.dumps([FORMAT, code_fingerprint(), *parts])).hexdigest()


def _path(namespace: str, key: str) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    return root / namespace / key[:2] / f"{key}.json"


def load(namespace: str, key: str) -> Any | None:
    """The value stored under ``key``, or ``None`` (absent, off, or not readable as an entry)."""
    path = _path(namespace, key)
    if path is None:
        return None
    try:
        entry = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    return entry.get("value")


def store(namespace: str, key: str, value: Any) -> bool:
    """Write ``value`` under ``key``, atomically; whether it was written (not when the cache is
    off, the value is too big or not JSON, or the folder is not writable: a cache that cannot
    be filled only costs the time it would have saved)."""
    path = _path(namespace, key)
    if path is None:
        return False
    try:
        data = orjson.dumps({"format": FORMAT, "key": key, "value": value})
    except (TypeError, orjson.JSONEncodeError):
        return False
    if len(data) > MAX_ENTRY_BYTES:
        return False
    try:
        atomic.write_bytes(path, data, sync=False)  # a torn entry reads as a miss
    except OSError:
        return False
    return True
