"""Input and output JSON schemas inferred from observed arguments and results.

``genson`` does the structural part well and is well kept: it merges types across samples
(``anyOf``), nests objects and arrays, and marks as ``required`` the properties present in every
sample. What it cannot know, and an agent needs, is added here from the same samples:

- ``enum`` for a string that takes a small closed set of values often enough to believe the set
  is closed (a status, a cabin class), never for free text or ids (the rule: :func:`is_closed`);
- ``format`` for dates, date-times and emails, and a ``pattern`` for id-like strings
  (``#W1234567``, ``credit_card_123``) so that an agent learns the id's shape;
- maps keyed by ids or dates (tau2 retail's ``payment_methods: {"paypal_3024827": {...}}``) as
  ``additionalProperties: <value schema>``, never as fixed properties: the keys are one record's
  data, and as properties they would put other users' ids in every tool description served;
- for a tool's arguments (``object_root``), ``additionalProperties: false`` on every object with
  named properties, since the served tool refuses an argument it never saw (a 422);
- descriptions, when the trace carried a tool definition, are kept by the caller.

The inferred schema always validates every observed sample: enums and patterns are built from
the values themselves, and a property seen only sometimes is left out of ``required``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson
from genson import SchemaBuilder
from genson.schema.node import SchemaNode
from genson.schema.strategies import BASIC_SCHEMA_STRATEGIES

ENUM_MAX = 8
"""At most this many distinct values make an enum..."""
ENUM_MIN_REPEAT = 2
"""...and only when every value was seen at least this many times (see :func:`is_closed`)."""
MAP_MIN_KEYS = 3
"""Objects whose keys are not ids are maps only with this many distinct keys (and more rules)."""

_DAY = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
_TIME = r"([01]\d|2[0-3]):[0-5]\d(:([0-5]\d|60)(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)?"
_DATE = re.compile(f"^{_DAY}$")
_DATETIME = re.compile(f"^{_DAY}[T ]{_TIME}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_UUID = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
_ID_SHAPES = [
    (re.compile(r"^#[A-Z]+\d+$"), r"^#[A-Z]+\d+$"),
    (re.compile(r"^[a-z]+(_[a-z]+)*_\d+$"), r"^[a-z]+(_[a-z]+)*_\d+$"),
    (re.compile(r"^[A-Z]{2,}-?\d+$"), r"^[A-Z]{2,}-?\d+$"),
    (re.compile(r"^\d{6,}$"), r"^\d{6,}$"),
    (re.compile(_UUID), None),
]
_WORD = re.compile(r"^[A-Za-z][A-Za-z _-]{0,39}$")
"""What a value of a closed set looks like: a word or a few (no digits: ids and amounts have)."""

FORMAT_PATTERNS = {
    "date": _DATE.pattern,
    "date-time": _DATETIME.pattern,
    "email": _EMAIL.pattern,
    "uuid": _UUID,
}
"""The shape each inferred ``format`` stands for (what the synthesized tools check)."""

_STRATEGY_TYPES = [
    (strategy, "number" if kind == "integer" else kind)
    for strategy in BASIC_SCHEMA_STRATEGIES
    if isinstance(kind := strategy(SchemaNode).to_schema().get("type"), str)
]
"""genson's strategies in the order it tries them, each with the JSON type of its schema."""


def value_type(value: Any) -> str:
    """The JSON type genson gives ``value`` (the type of the strategy it picks for it), with
    integers and other numbers one type, ``number``, as genson merges them in one schema;
    ``any`` for a value genson has no type for. The one type inference of synth: argument
    shapes, entity fields and map values are typed through it, schemas through genson."""
    for strategy, kind in _STRATEGY_TYPES:
        if strategy.match_object(value):
            return kind
    return "any"


def infer_schema(
    samples: Iterable[Any], *, object_root: bool = False, open_fields: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """A JSON schema that every sample validates against, with enums and formats added.

    ``object_root``: the samples are a tool's argument objects; the schema is an object and
    closed (``additionalProperties: false``) wherever it names its properties.
    ``open_fields``: property names the data snapshot shows to take more values than an enum
    holds (:func:`open_field_names`); a field of that name is never made an enum, however few
    values the calls showed (two held-out-free calls to Fort Worth and New York do not make
    ``city`` a closed set)."""
    builder = SchemaBuilder(schema_uri=False)
    observed: list[Any] = []
    seen: set[bytes] = set()
    for sample in samples:
        builder.add_object(sample)
        # facets count distinct observations: a call retried as it was is one piece of evidence
        key = _canonical(sample)
        if key not in seen:
            seen.add(key)
            observed.append(sample)
    if not observed:
        return (
            {"type": "object", "properties": {}, "additionalProperties": False}
            if (object_root)
            else {}
        )
    schema: dict[str, Any] = builder.to_schema()
    schema.pop("$schema", None)
    schema = _refine(schema, observed, root=True, sparse=not object_root, open_fields=open_fields)
    if object_root and schema.get("type") == "object":
        schema.setdefault("properties", {})
    if object_root:
        close_objects(schema)
    return schema


def _canonical(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return repr(value).encode()


def _refine(
    schema: dict[str, Any], values: list[Any], *, root: bool = False, sparse: bool = True,
    open_fields: frozenset[str] = frozenset(), name: str | None = None,
) -> dict[str, Any]:
    """genson's schema for ``values`` (what was observed at this place), with maps, enums and
    formats: each node sees exactly the values that reached it. A tool's arguments are never a
    map at the root, and in arguments only keys shaped like ids make one (``sparse`` off: a
    call gives some of its optional arguments, not a record's fields)."""
    if "anyOf" in schema:
        schema["anyOf"] = [
            _refine(o, [v for v in values if _fits(o, v)], root=root, sparse=sparse,
                    open_fields=open_fields, name=name)
            for o in schema["anyOf"]
        ]
        return schema
    if schema.get("type") == "object":
        objects = [v for v in values if isinstance(v, dict)]
        if not (root and not sparse) and is_map(objects, sparse=sparse):
            return _map_schema(objects, sparse)
        for prop, sub in schema.get("properties", {}).items():
            present = [o[prop] for o in objects if prop in o]
            schema["properties"][prop] = _refine(sub, present, sparse=sparse,
                                                 open_fields=open_fields, name=prop)
        return schema
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict):
        inner = [x for v in values if isinstance(v, list) for x in v]
        schema["items"] = _refine(items, inner, sparse=sparse, open_fields=open_fields,
                                  name=name)
        return schema
    if schema.get("type") == "string":
        facets = string_facets([v for v in values if isinstance(v, str)])
        if name in open_fields:
            facets.pop("enum", None)
        schema.update(facets)
    return schema


def open_field_names(rows: Iterable[Any], *, depth: int = 4) -> frozenset[str]:
    """Field names that take more than :data:`ENUM_MAX` distinct string values in ``rows``
    (a data snapshot's records, sub-records included): the data says such a field is open,
    whatever few values the calls happened to show."""
    seen: dict[str, set[str]] = {}

    def walk(value: Any, level: int) -> None:
        if level > depth:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str):
                    values = seen.setdefault(str(key), set())
                    if len(values) <= ENUM_MAX:
                        values.add(item)
                else:
                    walk(item, level + 1)
        elif isinstance(value, list):
            for item in value:
                walk(item, level + 1)

    for row in rows:
        walk(row, 0)
    return frozenset(k for k, values in seen.items() if len(values) > ENUM_MAX)


def _fits(option: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is of the type of ``option``, one of genson's ``anyOf`` (which never
    holds both ``integer`` and ``number``: genson merges them)."""
    kinds = option.get("type")
    names = kinds if isinstance(kinds, list) else [kinds]
    return value_type(value) in {"number" if n == "integer" else n for n in names}


def is_map(objects: list[dict[str, Any]], *, sparse: bool = True) -> bool:
    """Whether these objects (observed at one place) are maps from data keys to values of one
    shape rather than records with named fields:

    - every key is an id or a date (``"paypal_3024827"``, ``"1008292230"``, ``"2024-05-16"``);
    - or (``sparse``), with at least two observations and :data:`MAP_MIN_KEYS` keys, no key is
      in every observation, a key is in fewer than half of them on average, and every value is
      of one JSON type (records repeat their field names; maps of other users' data do not).
    """
    keys = Counter(k for o in objects for k in o)
    if not keys:
        return False
    if all(is_id_like(k) or _DATE.match(k) for k in keys):
        return True
    n = len(objects)
    if not sparse or n < 2 or len(keys) < MAP_MIN_KEYS or max(keys.values()) == n:
        return False
    if sum(keys.values()) / len(keys) >= n / 2:
        return False
    kinds = {value_type(v) for o in objects for v in o.values()}
    return len(kinds) == 1


def _map_schema(objects: list[dict[str, Any]], sparse: bool) -> dict[str, Any]:
    values = [v for o in objects for v in o.values()]
    builder = SchemaBuilder(schema_uri=False)
    for value in values:
        builder.add_object(value)
    value_schema = builder.to_schema()
    value_schema.pop("$schema", None)
    return {"type": "object", "additionalProperties": _refine(value_schema, values, sparse=sparse)}


def close_objects(schema: Any) -> Any:
    """``additionalProperties: false`` on every object schema (in place) that names its
    properties or says nothing of others; maps (``additionalProperties: <schema>``) keep theirs.
    The arguments of a served tool are closed: it refuses names it does not know."""
    if isinstance(schema, dict):
        kinds = schema.get("type")
        is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
        if (is_object or "properties" in schema) and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for key, sub in schema.items():
            if key in ("properties", "$defs"):
                for child in sub.values():
                    close_objects(child)
            elif key in ("items", "additionalProperties") or key == "anyOf":
                close_objects(sub)
    elif isinstance(schema, list):
        for sub in schema:
            close_objects(sub)
    return schema


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
    if is_closed(observed):
        return {"enum": distinct}
    return {}


def is_closed(observed: list[str]) -> bool:
    """Whether the values seen of one string field are believed to be all it takes: an enum,
    which the synthesized tool then enforces (a value outside it is a 422).

    The rule: 2 to :data:`ENUM_MAX` distinct values, each a word or a few (letters, spaces,
    ``_`` and ``-``: no digits, so never an id or an amount), and each seen at least
    :data:`ENUM_MIN_REPEAT` times. The last is Good-Turing's estimate: the chance that the next
    value is one never seen is about the share of values seen once, so a set with a value seen
    once (``cabin``: economy 9, business 1) is left open, and so is one value seen however often
    (a constant so far, not a set)."""
    counts = Counter(observed)
    return (
        2 <= len(counts) <= ENUM_MAX
        and all(_WORD.match(v) for v in counts)
        and min(counts.values()) >= ENUM_MIN_REPEAT
    )


def is_id_like(value: Any) -> bool:
    """A string shaped like an identifier (what entity recognition keys on)."""
    if not isinstance(value, str) or not value or len(value) > 64 or " " in value:
        return False
    return any(shape.match(value) for shape, _ in _ID_SHAPES)


def json_type(schema: dict[str, Any]) -> str:
    """The schema's one JSON type, or ``any`` for unions and empty schemas."""
    kind = schema.get("type")
    return kind if isinstance(kind, str) else "any"
