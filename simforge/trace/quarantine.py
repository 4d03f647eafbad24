"""The quarantine file: every rejected record, one JSON object per line.

Each entry says where the record was (file, line, byte offset, index or pointer), why it was
rejected, and the record's text. The text is cut to its head and tail when long: enough to find
and fix the record, without copying a multi-megabyte document into the quarantine.

The file is written under a temporary sibling name and renamed onto its name when the run
completes (:meth:`Quarantine.close`); a run killed half way leaves the previous quarantine as
it was. A completed run with nothing rejected leaves no file: a quarantine from an earlier run
is removed, so what is there always describes the last run.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType
from typing import Final

from simforge.atomic import AtomicFile
from simforge.jsonio import dumps
from simforge.trace.errors import Location

RAW_HEAD: Final = 2000
RAW_TAIL: Final = 500


def truncate(text: str, head: int = RAW_HEAD, tail: int = RAW_TAIL) -> tuple[str, bool]:
    """``(text, truncated)`` with the middle replaced by a marker that says how much went."""
    if len(text) <= head + tail + 40:
        return text, False
    omitted = len(text) - head - tail
    return f"{text[:head]}…[{omitted} characters omitted]…{text[-tail:]}", True


class Quarantine:
    """Writes rejected records; opened lazily, so a clean run leaves no empty file behind."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self.count = 0
        self._file: AtomicFile | None = None

    def write(
        self,
        location: Location | None,
        reason: str,
        raw: str,
        fmt: str | None = None,
        records: int = 1,
    ) -> None:
        """One entry; ``records`` > 1 when a whole group (a trace's spans) is rejected at once."""
        self.count += records
        if self.path is None:
            return
        if self._file is None:
            self._file = AtomicFile(self.path)
        text, cut = truncate(raw)
        entry: dict[str, object] = dict(location.as_dict()) if location else {}
        if fmt:
            entry["format"] = fmt
        entry["reason"] = reason
        if records != 1:
            entry["records"] = records
        entry["raw"] = text
        if cut:
            entry["raw_chars"] = len(raw)
        self._file.write(dumps(entry) + b"\n")

    def close(self) -> None:
        """The run is complete: the entries replace any earlier quarantine file (and with no
        entries, an earlier file is removed)."""
        if self._file is not None:
            self._file.commit()
            self._file = None
        elif self.path is not None:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                self.path.unlink()

    def discard(self) -> None:
        """The run did not complete: drop the entries, leave any earlier file as it was."""
        if self._file is not None:
            self._file.discard()
            self._file = None

    def __enter__(self) -> Quarantine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()
