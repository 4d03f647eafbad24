"""Input and output JSON schemas inferred from observed arguments and results.

``genson`` does the structural part well and is well kept: it merges types across samples
(``anyOf``), nests objects and arrays, and marks as ``required`` the properties present in every
sample. What it cannot know, and an agent needs, is added here from the same samples:

- ``enum`` for a string that takes a small closed set of values often enough to believe the set
  is closed (a status, a cabin class), never for free text or ids;
- ``format`` for dates, date-times and emails, and a ``pattern`` for id-like strings
  (``#W1234567``, ``credit_card_123``) so that an agent learns the id's shape;
- descriptions, when the trace carried a tool definition, are kept by the caller.

The inferred schema always validates every observed sample: enums and patterns are built from
the values themselves, and a property seen only sometimes is left out of ``required``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from genson import SchemaBuilder

ENUM_MAX = 8
"""At most this many distinct values make an enum..."""
ENUM_MIN_REPEAT = 2.0
"""...and only when each value was seen this many times on average (a closed set repeats)."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_ID_SHAPES = [
    (re.compile(r"^#[A-Z]+\d+$"), r"^#[A-Z]+\d+$"),
    (re.compile(r"^[a-z]+(_[a-z]+)*_\d+$"), r"^[a-z]+(_[a-z]+)*_\d+$"),
    (re.compile(r"^[A-Z]{2,}-?\d+$"), r"^[A-Z]{2,}-?\d+$"),
    (re.compile(r"^\d{6,}$"), r"^\d{6,}$"),
    (re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$", re.I), None),
]


def infer_schema(samples: Iterable[Any], *, object_root: bool = False) -> dict[str, Any]:
    """A JSON schema that every sample validates against, with enums and formats added."""
    builder = SchemaBuilder(schema_uri=False)
    values: dict[str, list[Any]] = {}
    seen = False
    for sample in samples:
        seen = True
        builder.add_object(sample)
        _collect(sample, "", values)
    if not seen:
        return {"type": "object", "properties": {}} if object_root else {}
    schema: dict[str, Any] = builder.to_schema()
    schema.pop("$schema", None)
    _annotate(schema, "", values)
    if object_root and schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def _collect(value: Any, path: str, out: dict[str, list[Any]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _collect(v, f"{path}/{k}", out)
    elif isinstance(value, list):
        for v in value:
            _collect(v, f"{path}/*", out)
    elif isinstance(value, str):
        out.setdefault(path, []).append(value)


def _annotate(schema: dict[str, Any], path: str, values: dict[str, list[Any]]) -> None:
    for option in schema.get("anyOf", []):
        _annotate(option, path, values)
    for name, sub in schema.get("properties", {}).items():
        _annotate(sub, f"{path}/{name}", values)
    items = schema.get("items")
    if isinstance(items, dict):
        _annotate(items, f"{path}/*", values)
    if schema.get("type") == "string" and path in values:
        schema.update(string_facets(values[path]))


def string_facets(observed: list[str]) -> dict[str, Any]:
    """``format``, ``pattern`` or ``enum`` for one string field, from every value seen."""
    distinct = sorted(set(observed))
    if not distinct:
        return {}
    if all(_DATETIME.match(v) for v in distinct):
        return {"format": "date-time"}
    if all(_DATE.match(v) for v in distinct):
        return {"format": "date"}
    if all(_EMAIL.match(v) for v in distinct):
        return {"format": "email"}
    for shape, pattern in _ID_SHAPES:
        if all(shape.match(v) for v in distinct):
            return {"format": "uuid"} if pattern is None else {"pattern": pattern}
    if (
        len(distinct) <= ENUM_MAX
        and len(observed) >= ENUM_MIN_REPEAT * len(distinct)
        and all(len(v) <= 40 and "\n" not in v for v in distinct)
    ):
        return {"enum": distinct}
    return {}


def is_id_like(value: Any) -> bool:
    """A string shaped like an identifier (what entity recognition keys on)."""
    if not isinstance(value, str) or not value or len(value) > 64 or " " in value:
        return False
    return any(shape.match(value) for shape, _ in _ID_SHAPES)


def json_type(schema: dict[str, Any]) -> str:
    """The schema's one JSON type, or ``any`` for unions and empty schemas."""
    kind = schema.get("type")
    return kind if isinstance(kind, str) else "any"
