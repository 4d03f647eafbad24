"""The quarantine file: every rejected record, one JSON object per line.

Each entry says where the record was (file, line, byte offset, index or pointer), why it was
rejected, and the record's text. The text is cut to its head and tail when long: enough to find
and fix the record, without copying a multi-megabyte document into the quarantine.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import IO, Final

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
        self._file: IO[bytes] | None = None

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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("wb")
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
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Quarantine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
