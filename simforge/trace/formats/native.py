"""simforge native JSONL: one Episode per line, the canonical export. Round-trips exactly.

Native input comes from outside like any other file, so every line is validated; pydantic
validates straight from the line's bytes, skipping a separate JSON parse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.reader import Record
from simforge.trace.registry import FormatAdapter, register_format


@register_format
class NativeFormat(FormatAdapter):
    name = "native"
    description = "simforge native JSONL (one Episode per line)"

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        source = value.get("source") if isinstance(value, dict) else None
        return 1.0 if isinstance(source, dict) and "format" in source and "id" in value else 0.0

    def decode(self, record: Record) -> Any:
        if record.raw is not None and record.error is None:
            return record.raw
        return record.value

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        try:
            if isinstance(record, bytes | str):
                return (Episode.model_validate_json(record),)
            return (Episode.model_validate(record),)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise TraceFormatError(
                location, f"not a valid Episode: {field}: {first['msg']}"
            ) from None
