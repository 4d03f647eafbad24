"""Loading ``--data`` snapshot files into raw tables: ``{table name: [records]}``.

A production snapshot arrives in whatever shape the team could export: a JSON dict keyed by id
(tau-bench's ``orders.json``), a JSON array, JSON Lines, CSV, an SQLite file, or TOML (tau2's
telecom ``db.toml``). Each becomes one or more raw tables of plain dict records; recognising
which table is which entity is :mod:`simforge.synth.entities.catalog`' job, not this module's.

A dict keyed by id loses the id when the record itself does not repeat it (airline
``users.json``); the key is kept under ``__key__`` so the entity layer can name the field once it
knows the primary key. A file that does not parse raises :class:`SnapshotError` naming the file
and the record (line, row or key), because "bad JSON somewhere in 2 MB" helps nobody.
"""

from __future__ import annotations

import csv
import re
import sqlite3
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from simforge.errors import UserError

KEY = "__key__"
"""Where the dict key of a keyed-by-id snapshot is kept when the record lacks it."""

Tables = dict[str, list[dict[str, Any]]]


class SnapshotError(UserError, ValueError):
    """A snapshot file that cannot be read; names the file and the record."""


def load_snapshots(paths: Iterable[Path | str], notes: list[str] | None = None) -> Tables:
    """Every table of every file (a folder stands for the files in it, sorted).

    A file named twice (a folder and a file in it) is read once. Two tables of the same name
    from different files are one table when their records have the same fields (an export split
    in parts); otherwise the later one is kept apart under a name qualified by the nearest part
    of its path that differs (``airline/data/users.json`` then ``retail/data/users.json``:
    ``users`` and ``retail_users``), and a note naming both files is appended to ``notes``.
    """
    tables: Tables = {}
    sources: dict[str, tuple[Path, frozenset[str]]] = {}
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.resolve() in seen:
                continue
            seen.add(file.resolve())
            for name, rows in load_snapshot(file).items():
                fields = _fields(rows)
                if name in sources and sources[name][1] != fields:
                    first = sources[name][0]
                    qualified = _qualified(name, file, first, tables)
                    if notes is not None:
                        notes.append(
                            f"snapshot table {name!r} of {file} has other fields than {name!r} "
                            f"of {first}; kept apart as {qualified!r}"
                        )
                    name = qualified
                sources.setdefault(name, (file, fields))
                tables.setdefault(name, []).extend(rows)
    return tables


def _fields(rows: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(k for row in rows for k in row if k != KEY)


def _qualified(name: str, file: Path, first: Path, tables: Tables) -> str:
    """``name`` prefixed by the last path component of ``file`` that differs from ``first``'s
    at the same depth (the file's stem when both sit in one folder); numbered if still taken."""
    mine = [*file.resolve().parent.parts, file.stem]
    theirs = [*first.resolve().parent.parts, first.stem]
    prefix = next(
        (a for a, b in zip(reversed(mine), reversed(theirs), strict=False) if a != b),
        file.stem,
    )
    base = re.sub(r"[^A-Za-z0-9]+", "_", f"{prefix}_{name}").strip("_") or name
    candidate, n = base, 2
    while candidate in tables:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


def load_snapshot(path: Path) -> Tables:
    suffix = path.suffix.lower()
    if not path.is_file():
        raise SnapshotError(f"{path}: no such file")
    loaders = {
        ".json": _json,
        ".jsonl": _jsonl,
        ".ndjson": _jsonl,
        ".csv": _csv,
        ".toml": _toml,
        ".sqlite": _sqlite,
        ".sqlite3": _sqlite,
        ".db": _sqlite,
    }
    loader = loaders.get(suffix)
    if loader is None:
        allowed = sorted(loaders)
        raise SnapshotError(f"{path}: unknown snapshot format {suffix!r}; allowed: {allowed}")
    return loader(path)


def _json(path: Path) -> Tables:
    data = path.read_bytes()
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        line = data[: exc.pos].count(b"\n") + 1
        raise SnapshotError(
            f"{path}: line {line}: {_record_at(data, exc.pos)}: not valid JSON: {exc.msg}"
        ) from None
    return _from_document(path, path.stem, doc)


def _record_at(data: bytes, pos: int) -> str:
    """The record a syntax error sits in: the last top-level key before it, if any."""
    head = data[:pos].decode("utf-8", "replace")
    depth = 0
    key = None
    i = 0
    while i < len(head):
        ch = head[i]
        if ch == '"':
            end = i + 1
            while end < len(head) and head[end] != '"':
                end += 2 if head[end] == "\\" else 1
            if depth == 1 and head[end + 1 : end + 2].lstrip() in (":", ""):
                key = head[i + 1 : end]
            i = end + 1
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        i += 1
    return f"record {key!r}" if key is not None else "record"


def _from_document(path: Path, name: str, doc: Any) -> Tables:
    if isinstance(doc, list):
        return {name: [_record(path, f"index {i}", r) for i, r in enumerate(doc)]}
    if isinstance(doc, dict):
        if doc and all(isinstance(v, dict) for v in doc.values()) and _keyed(doc):
            return {name: [{**v, KEY: k} for k, v in doc.items()]}
        # A document of several tables: {"orders": {...} or [...], "users": ...}
        out: Tables = {}
        for key, value in doc.items():
            if isinstance(value, list | dict):
                out.update(_from_document(path, str(key), value))
        if not out:
            raise SnapshotError(f"{path}: expected records (an array or a dict of records)")
        return out
    raise SnapshotError(f"{path}: expected an array or an object, found {type(doc).__name__}")


def _keyed(doc: dict[str, Any]) -> bool:
    """A dict of records keyed by id, rather than a dict of tables: the values share fields."""
    values = list(doc.values())[:20]
    if any(isinstance(v, list) for v in values):
        return False
    common = set(values[0])
    for v in values[1:]:
        common &= set(v)
    has_scalar = any(not isinstance(v, dict | list) for r in values for v in r.values())
    return bool(common) and has_scalar


def _record(path: Path, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SnapshotError(f"{path}: {where}: expected an object, found {type(value).__name__}")
    return value


def _jsonl(path: Path) -> Tables:
    rows = []
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise SnapshotError(f"{path}: line {n}: not valid JSON: {exc.msg}") from None
            rows.append(_record(path, f"line {n}", value))
    return {path.stem: rows}


def _csv(path: Path) -> Tables:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = []
        for n, row in enumerate(reader, 2):
            if None in row or any(v is None for v in row.values()):
                raise SnapshotError(
                    f"{path}: line {n}: expected {len(reader.fieldnames or [])} columns"
                )
            rows.append({k: _csv_value(v) for k, v in row.items()})
    return {path.stem: rows}


def _csv_value(text: str) -> Any:
    """CSV has no types: JSON-looking cells (numbers, booleans, objects) are parsed, ids with
    leading zeros stay strings (``"0042"`` is an id, not 42)."""
    if text == "":
        return None
    if text[0] in "{[" or text in ("true", "false", "null"):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    if text.lstrip("-").isdigit() and not (text.lstrip("-").startswith("0") and len(text) > 1):
        return int(text)
    try:
        return float(text) if any(c in text for c in ".eE") else text
    except ValueError:
        return text


def _toml(path: Path) -> Tables:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    return _from_document(path, path.stem, doc)


def _sqlite(path: Path) -> Tables:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        out: Tables = {}
        for name in names:
            cursor = con.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            out[name] = [
                {c: _sql_value(v) for c, v in zip(columns, row, strict=True)} for row in cursor
            ]
        return out
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"{path}: not a readable SQLite database: {exc}") from None
    finally:
        con.close()


def _sql_value(value: Any) -> Any:
    """JSON stored in TEXT columns (how SQLModel's JSON columns land) comes back structured."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
