"""The derived-data cache: a second process reads the seed tables the first one built, the
same as building them; any change to the pack's files is a new entry; a damaged entry is a miss
and is rewritten; ``SIMFORGE_CACHE=off`` writes nothing."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge import cache
from simforge.scenario.plugins import load_pack
from simforge.tools.pack import Pack
from simforge.world.schema import validate_tables

from .conftest import FIXTURES


@pytest.fixture
def pack_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "pack"
    shutil.copytree(FIXTURES / "packs" / "mini", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SIMFORGE_CACHE", str(root))
    return root


def _fresh(folder: Path) -> Pack:
    """The pack as a new process would have it: nothing derived in memory yet (the module
    stays imported: a test cannot unimport it, a new process has it anew)."""
    pack = load_pack(str(folder))
    return dataclasses.replace(pack, _bases={}, _fingerprint=None, _catalog=None,
                               _schemas=None, _lock=threading.Lock())


def _entries(root: Path) -> list[Path]:
    """The seed-table entries (the pack's schemas have an entry of their own)."""
    worlds = root / "worlds"
    return sorted(worlds.rglob("*.json")) if worlds.is_dir() else []


def test_a_second_load_reads_the_tables_the_first_built(pack_copy, cache_dir):
    first = _fresh(pack_copy)
    built = first.base(3, 12)
    (entry,) = _entries(cache_dir)
    second = _fresh(pack_copy)
    assert second is not first
    assert second.base(3, 12) == built
    assert built == validate_tables(first.schemas, first.seed(3, 12))
    assert _entries(cache_dir) == [entry]
    # another seed or size is another entry
    second.base(4, 12)
    assert len(_entries(cache_dir)) == 2


def test_a_changed_pack_file_is_a_new_entry(pack_copy, cache_dir):
    _fresh(pack_copy).base(0, 5)
    (pack_copy / "notes.txt").write_text("a new file changes the pack's fingerprint\n")
    _fresh(pack_copy).base(0, 5)
    assert len(_entries(cache_dir)) == 2


def test_a_damaged_entry_is_a_miss_and_is_rewritten(pack_copy, cache_dir):
    built = _fresh(pack_copy).base(0, 5)
    (entry,) = _entries(cache_dir)
    for damage in (b"", b'{"format": "simforge-cache/1", "key": "x", "value": {}}',
                   entry.read_bytes()[:100], b"\xff\xfe not json"):
        entry.write_bytes(damage)
        assert _fresh(pack_copy).base(0, 5) == built
        assert orjson.loads(entry.read_bytes())["value"] == built


def test_off_writes_nothing(pack_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", "off")
    assert cache.cache_root() is None
    pack = _fresh(pack_copy)
    assert pack.base(0, 5) == validate_tables(pack.schemas, pack.seed(0, 5))
    assert not cache.store("worlds", "k" * 64, {"a": 1})
    assert cache.load("worlds", "k" * 64) is None


def test_writers_racing_on_one_entry_leave_a_whole_file(cache_dir):
    value = {"rows": [{"id": i, "text": "x" * 200} for i in range(2000)]}
    key = cache.entry_key("race")
    threads = [threading.Thread(target=cache.store, args=("t", key, value)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.load("t", key) == value
    assert not list(cache_dir.rglob("*.tmp"))


def test_an_unwritable_cache_only_costs_time(pack_copy, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SIMFORGE_CACHE", str(blocker / "cache"))
    pack = _fresh(pack_copy)
    assert pack.base(0, 5) == validate_tables(pack.schemas, pack.seed(0, 5))


def test_another_process_uses_the_entry(pack_copy, cache_dir):
    """What a stress worker or a Ray task gets: the entry a first process wrote."""
    built = _fresh(pack_copy).base(0, 7)
    code = (
        "import sys\n"
        "from unittest import mock\n"
        "from simforge.scenario.plugins import load_pack\n"
        "from simforge.world import schema\n"
        "pack = load_pack(sys.argv[1])\n"
        "with mock.patch.object(schema, 'validate_tables', side_effect=AssertionError):\n"
        "    import simforge.tools.pack as p\n"
        "    with mock.patch.object(p, 'validate_tables', side_effect=AssertionError):\n"
        "        import orjson; sys.stdout.buffer.write(orjson.dumps(pack.base(0, 7)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(pack_copy)], capture_output=True,
                         check=True, env={**__import__("os").environ}).stdout
    assert orjson.loads(out) == built


names = st.text(st.sampled_from("ab._-Z"), min_size=1, max_size=3).filter(
    lambda n: n not in (".", ".."))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=st.lists(st.lists(names, min_size=1, max_size=3), min_size=1, max_size=12))
def test_the_listing_is_rglob_sorted_without_caches_or_hidden_names(tmp_path_factory, paths):
    root = tmp_path_factory.mktemp("tree")
    for parts in paths:
        target = root.joinpath(*parts)
        if any(p.is_file() for p in [*target.parents, target] if p != root and
               root in p.parents):
            continue  # a file where a folder should be
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("/".join(parts))
    (root / "__pycache__").mkdir(exist_ok=True)
    (root / "__pycache__" / "m.py").write_text("bytecode cache")
    everything = sorted(p for p in root.rglob("*") if p.is_file() and
                        "__pycache__" not in p.relative_to(root).parts)
    visible = [p for p in everything
               if not any(part.startswith(".") for part in p.relative_to(root).parts)]
    assert cache._listing(root) == [(p.relative_to(root).as_posix(), str(p)) for p in everything]
    assert [(n, p) for n, p in cache._listing(root, hidden=False)] == [
        (p.relative_to(root).as_posix(), str(p)) for p in visible]
    endings = [p for p in everything if p.name.endswith("a")]
    assert [p for _, p in cache._listing(root, "a")] == [str(p) for p in endings]


def test_the_source_digest_is_the_bytes_remembered_by_times(tmp_path, cache_dir, monkeypatch):
    package = tmp_path / "package"
    package.mkdir()
    (package / "a.py").write_text("a = 1\n")
    (package / "b.py").write_text("b = 2\n")

    def digest() -> str:
        return cache._source_digest(package, cache._listing(package, ".py"))

    first = digest()
    hashed: list[int] = []
    real = cache._hash_files
    monkeypatch.setattr(cache, "_hash_files", lambda d, f: (hashed.append(1), real(d, f)))
    assert digest() == first and hashed == []  # same times: remembered, nothing read
    os.utime(package / "a.py", ns=(1, 1))  # a checkout: new times, same bytes
    assert digest() == first and hashed == [1]
    (package / "a.py").write_text("a = 3\n")  # an edit
    assert digest() != first
    monkeypatch.setenv("SIMFORGE_CACHE", "off")
    assert digest() == cache._source_digest(package, cache._listing(package, ".py"))


def test_an_entry_is_renamed_into_place_without_flushing_to_disk(cache_dir, monkeypatch):
    """A cache entry that does not read back is a miss, so it is not worth two ``fsync`` calls;
    other atomic outputs still flush (a run's results must survive a crash)."""
    from simforge import atomic

    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    assert cache.store("x", "k" * 64, {"a": 1})
    assert synced == [] and cache.load("x", "k" * 64) == {"a": 1}
    assert not [p for p in cache_dir.rglob("*") if p.name.endswith(".tmp")]
    atomic.write_bytes(cache_dir / "result.json", b"{}")
    assert len(synced) == 2  # the file, then its folder
    path = cache._path("x", "k" * 64)
    assert path is not None
    path.write_bytes(b'{"format": "simforge-cache/1", "key": "')  # torn by a power cut
    assert cache.load("x", "k" * 64) is None
