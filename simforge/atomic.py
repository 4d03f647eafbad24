"""Outputs that appear whole or not at all.

A file or folder is written under a temporary sibling name (``.NAME.<random>.tmp``, hidden, and
ending in ``.tmp`` so that no ``*.jsonl`` or ``*.html`` glob takes it for an output) and renamed
onto its name once complete. A run killed half way leaves the previous output as it was and,
at worst, a ``.tmp`` sibling; never a truncated file under the real name. A run that fails
with an exception removes its temporary sibling.

Three ways in, for the three shapes of writer::

    write_bytes(path, data)                      # small outputs built in memory
    with AtomicFile(path) as f: f.write(...)     # streamed outputs (commit on a clean exit)
    with replacing(path) as tmp: build(tmp)      # anything that writes a path itself (folders)

A folder is swapped in with ``renameat2(RENAME_EXCHANGE)`` where Linux has it, so that the
target name never goes missing; elsewhere the old folder is moved aside first, then removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

PathLike = str | os.PathLike[str]


def temporary_sibling(path: PathLike) -> Path:
    """A fresh name beside ``path`` for its output in progress (nothing is created)."""
    target = Path(path)
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: object = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically (Linux ``renameat2``); False where unsupported."""
    global _renameat2
    if _renameat2 is None:
        found: object = False
        name = ctypes.util.find_library("c")
        if name:
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(name, use_errno=True)
                found = libc.renameat2
        _renameat2 = found
    if _renameat2 is False:
        return False
    fn = _renameat2
    result = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),  # type: ignore[operator]
                _RENAME_EXCHANGE)
    return bool(result == 0)


def commit(tmp: PathLike, path: PathLike, *, sync: bool = True) -> None:
    """Move the finished ``tmp`` onto ``path``: a file by ``os.replace``, a folder by an
    exchange with the previous folder (then removed); ``sync=False`` leaves the folder's entry
    to reach the disk when the system writes it back."""
    source, target = Path(tmp), Path(path)
    if source.is_dir() and target.exists() and not target.is_symlink():
        if target.is_dir() and _exchange(source, target):
            _remove(source)  # the previous folder, now under the temporary name
            _fsync_dir(target.parent)
            return
        aside = temporary_sibling(target)
        os.replace(target, aside)
        try:
            os.replace(source, target)
        except BaseException:
            os.replace(aside, target)
            raise
        _remove(aside)
    else:
        os.replace(source, target)
    if sync:
        _fsync_dir(target.parent)


@contextlib.contextmanager
def replacing(path: PathLike) -> Iterator[Path]:
    """A temporary sibling path to write (a file or a folder, not created yet); renamed onto
    ``path`` when the block ends cleanly, removed when it raises."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(target)
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    if not tmp.exists():
        raise FileNotFoundError(f"nothing was written to {tmp} for {target}")
    try:
        commit(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


class AtomicFile:
    """A binary file written under a temporary sibling name and renamed onto ``path`` by
    :meth:`commit` (or a clean ``with`` exit); :meth:`discard` (or an exception) removes it.

    Data is flushed to disk before the rename, so a crash right after it cannot expose a file
    whose blocks never reached the disk; ``sync=False`` skips both flushes to disk, for a file a
    reader checks and treats as missing when it does not read back whole (a cache entry: the
    two ``fsync`` calls are most of the CPU time of writing a small one, about a millisecond).
    """

    def __init__(self, path: PathLike, *, sync: bool = True) -> None:
        self.path = Path(path)
        self.sync = sync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = temporary_sibling(self.path)
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.file: IO[bytes] = os.fdopen(fd, "wb")
        self.closed = False

    def write(self, data: bytes) -> int:
        return self.file.write(data)

    def commit(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.file.flush()
            if self.sync:
                os.fsync(self.file.fileno())
            self.file.close()
            commit(self.tmp, self.path, sync=self.sync)
        except BaseException:
            self.file.close()
            _remove(self.tmp)
            raise

    def discard(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.file.close()
        _remove(self.tmp)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def write_bytes(path: PathLike, data: bytes, *, sync: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (``sync``: see :class:`AtomicFile`)."""
    with AtomicFile(path, sync=sync) as f:
        f.write(data)
    return Path(path)


def write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode(encoding))


__all__ = ["AtomicFile", "commit", "replacing", "temporary_sibling", "write_bytes", "write_text"]
