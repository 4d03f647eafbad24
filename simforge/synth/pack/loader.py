"""A pack directory as a :class:`~simforge.tools.Pack`, like a hand-written one.

Entities become SQLModel tables created at load time on a fresh :func:`entity_base`, one JSON
column per field (learned rows are nested JSON; typed columns would coerce ``92`` to ``92.0`` and
break exact replay). Tools become :class:`~simforge.tools.Tool` objects whose handler runs the
learned description, compiled once (:mod:`simforge.synth.runtime.compiled`, answering exactly as the
interpreter :func:`simforge.synth.runtime.interpreter.run` does), on the call's
:class:`~simforge.tools.ToolContext`, so reads honour stale-read faults and writes are versioned.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Union

from pydantic import BaseModel, ConfigDict, StringConstraints, create_model
from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel
from typing_extensions import TypedDict

from simforge.synth.entities.catalog import parents_from_rows
from simforge.synth.learn.json_schemas import FORMAT_PATTERNS, close_objects
from simforge.synth.pack.files import TOOLS, read_json, read_manifest, read_tools
from simforge.synth.runtime.compiled import compile_handler
from simforge.synth.runtime.interpreter import Runtime, run
from simforge.synth.runtime.replay_table import ReplayTable
from simforge.synth.runtime.text_model import Model
from simforge.tools.context import ToolContext
from simforge.tools.pack import Pack
from simforge.tools.spec import ToolSpec
from simforge.tools.tool import RECORD_SUFFIX, Tool
from simforge.world.schema import entity_base

_SCALARS: dict[str, Any] = {
    "integer": int,
    # int first, so that 92 stays 92 (a float would break exact replay)
    "number": int | float,
    "boolean": bool,
    "null": None,
}
_CLOSED = ConfigDict(extra="forbid")
_OPEN = ConfigDict(extra="allow")
_PORTABLE = re.compile(r"\(\?[=!<]|\\[1-9]")
"""Lookarounds and back-references: what pydantic's regex engine (Rust's) has not; a pattern
with them is not enforced (it still stands in the schema served)."""


def entity_models(entities: dict[str, Any]) -> list[type[SQLModel]]:
    base = entity_base()
    models = []
    for name, info in entities.items():
        pk = info["pk"]
        annotations: dict[str, Any] = {pk: str}
        namespace: dict[str, Any] = {pk: Field(primary_key=True), "__module__": __name__}
        for field in info["fields"]:
            if field == pk:
                continue
            annotations[field] = Any | None
            namespace[field] = Field(default=None, sa_column=Column(field, JSON))
        namespace["__annotations__"] = annotations
        namespace["__simforge_entity__"] = {
            "id_prefix": info.get("id_prefix", ""),
            "id_width": info.get("id_width", 4),
        }
        models.append(type(name, (base,), namespace, table=True))
    return models


def input_model(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """The validator of a synthesized tool's arguments: the whole learned schema (nested objects
    and arrays, ``required``, ``additionalProperties``, enums and formats; an id's pattern is
    served but not enforced, see :func:`schema_type`), as
    pydantic types, so a call is checked by pydantic-core like a hand-written tool's and a 422
    names the argument's path, what the schema expects there and what was sent."""
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for prop, sub in (schema.get("properties") or {}).items():
        kind = schema_type(sub, f"{name}_{prop}")
        fields[prop] = (kind, ...) if prop in required else (kind, None)
    extra = schema.get("additionalProperties", False)
    config = _CLOSED if extra is False else _OPEN
    model: type[BaseModel] = create_model(f"{name}_args", __config__=config, **fields)
    return model


def schema_type(schema: Any, name: str) -> Any:
    """The pydantic type of one JSON schema (the subset inferred schemas use; anything else is
    ``Any``). Objects with properties are TypedDicts (the handler gets plain dicts), closed
    unless the schema leaves them open; maps are ``dict[str, value]``."""
    if not isinstance(schema, dict) or not schema:
        return Any
    if schema.get("enum"):
        return Literal[tuple(schema["enum"])]
    if "const" in schema:
        return Literal[schema["const"]]
    options = schema.get("anyOf")
    kinds = schema.get("type")
    if isinstance(kinds, list):
        options = [{**schema, "type": k} for k in kinds]
    if isinstance(options, list):
        members = tuple(schema_type(o, f"{name}_{i}") for i, o in enumerate(options))
        return Any if Any in members else Union[members]  # noqa: UP007 (a runtime tuple)
    if kinds == "string":
        # An id's learned shape (``pattern``) is told to the agent, not enforced: production
        # answered a malformed id with its own error (tau2 retail: ``#9502127`` is "Error:
        # Order not found", not a validation error), which the handler's not-found path gives.
        # Formats (dates, emails) are checked.
        pattern = FORMAT_PATTERNS.get(schema.get("format", ""))
        if isinstance(pattern, str) and not _PORTABLE.search(pattern):
            return Annotated[str, StringConstraints(pattern=pattern)]
        return str
    if kinds in _SCALARS:
        return _SCALARS[kinds]
    if kinds == "array":
        items = schema.get("items")
        item = schema_type(items, f"{name}_item") if isinstance(items, dict) else Any
        return list[item]  # type: ignore[valid-type]
    if kinds == "object":
        return _object_type(schema, name)
    return Any


def _object_type(schema: dict[str, Any], name: str) -> Any:
    props = schema.get("properties")
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or (not props and extra is not False):
        value = schema_type(extra, f"{name}_value") if isinstance(extra, dict) else Any
        return dict[str, value]  # type: ignore[valid-type]
    required = set(schema.get("required") or [])
    keys: dict[str, Any] = {}
    for key, sub in props.items():
        kind = schema_type(sub, f"{name}_{key}")
        keys[key] = kind if key in required else NotRequired[kind]
    make: Any = TypedDict  # built from data: mypy checks only literal TypedDicts
    record: Any = make(name + RECORD_SUFFIX, keys)
    record.__pydantic_config__ = _CLOSED if extra is False else _OPEN
    return record


def load_synth_pack(folder: Path | str, *, compiled: bool = True) -> Pack:
    """The pack in ``folder`` (a directory written by ``simforge synth``). ``compiled=False``
    runs every handler through the interpreter (the reference the compiled form is tested
    against)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    files = manifest["files"]
    models = entity_models(manifest.get("entities") or {})
    world_path = folder / files["world"]
    replay_raw = read_json(folder / files["replay"])
    replays = {tool: ReplayTable(entries) for tool, entries in replay_raw.items()}
    cache: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def seed(seed: int, scale: int) -> dict[str, list[dict[str, Any]]]:
        if "world" not in cache:
            cache["world"] = read_json(world_path)
        return cache["world"]

    entities = manifest.get("entities") or {}
    subs = {name: info.get("subs") or {} for name, info in entities.items()}
    pks = {name: info["pk"] for name, info in entities.items()}
    state = files.get("state")
    runtime = Runtime({}, replays, Model.from_json(read_json(folder / state)) if state else None)
    loaded = {"parents": False}

    def ensure_parents() -> None:
        if not loaded["parents"]:
            runtime.parent_of = parents_from_rows(seed(0, 1), subs, pks)
            loaded["parents"] = True

    tools = []
    for entry in read_tools(folder / TOOLS):
        raw = copy.deepcopy(entry["spec"])
        # a pack written before arguments were closed: served as validated, closed
        close_objects(raw.get("input_schema"))
        spec = ToolSpec.model_validate(raw)
        desc = entry["handler"]
        model = input_model(spec.name, spec.input_schema)
        handler = compile_handler(desc, entities) if compiled else functools.partial(run, desc)
        flat = _flat_fields(model, spec.input_schema)
        tools.append(Tool(spec, model, _handler(handler, runtime, ensure_parents, flat)))
    return Pack(
        name=manifest.get("name", folder.name),
        description=manifest.get("description", "synthesized from traces"),
        entities=models,
        tools=tools,
        seed=seed,
        path=folder,
    )


_FLAT_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})


def _flat_fields(model: type[BaseModel], schema: dict[str, Any]) -> tuple[str, ...] | None:
    """The argument names in order when every argument is a scalar (a string, number, boolean
    or null, or an enum of those) and the model is closed; else ``None``. For such a model the
    validated values are immutable scalars, so the dict of the fields set, in declaration order,
    is what ``model_dump(exclude_unset=True)`` returns, without the serializer's pass."""
    if model.model_config.get("extra") != "forbid":
        return None
    props = schema.get("properties") or {}
    for sub in props.values():
        if not isinstance(sub, dict) or "anyOf" in sub:
            return None
        if "enum" in sub or "const" in sub:
            values = sub.get("enum") or [sub.get("const")]
            if not all(type(v) in (str, int, float, bool, type(None)) for v in values):
                return None
        elif not isinstance(sub.get("type"), str) or sub["type"] not in _FLAT_TYPES:
            return None
    names = tuple(model.model_fields)
    return names if set(names) == set(props) else None


def _handler(
    compiled: Any, runtime: Runtime, ensure: Any, flat: tuple[str, ...] | None = None
) -> Any:
    if flat is None:

        def handler(ctx: ToolContext, args: BaseModel) -> Any:
            ensure()
            return compiled(ctx, args.model_dump(exclude_unset=True), runtime)

        return handler

    def flat_handler(ctx: ToolContext, args: BaseModel) -> Any:
        ensure()
        values, given = args.__dict__, args.__pydantic_fields_set__
        return compiled(ctx, {k: values[k] for k in flat if k in given}, runtime)

    return flat_handler
