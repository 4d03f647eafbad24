"""CRUD tools generated from an entity: get, list (filters, pagination), search, create, update,
delete. Schemas come from the entity's SQLModel fields, so a generated tool is as precise as a
hand-written one; business operations (refund, cancel, escalate) are written by hand beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache, partial
from typing import Any

from pydantic import BaseModel, Field, create_model

from simforge.derived import derived_later, name_of
from simforge.errors import UsageError
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError
from simforge.tools.spec import ErrorModel, ToolSpec
from simforge.tools.tool import _ARGS_CONFIG, Tool, clean_schema
from simforge.world.schema import EntitySchema

ALL_OPS = ("get", "list", "search", "create", "update", "delete")
_SCALAR = {"string", "integer", "number", "boolean"}


def crud_tools(
    schema: EntitySchema,
    *,
    ops: Iterable[str] = ALL_OPS,
    system: str | None = None,
    read_latency: Any = None,
    write_latency: Any = None,
    capacity: int | None = None,
    errors: ErrorModel | None = None,
) -> list[Tool]:
    """The generated tools of one entity, in the order of ``ops``."""
    builders = {
        "get": _get,
        "list": _list,
        "search": _search,
        "create": _create,
        "update": _update,
        "delete": _delete,
    }
    out = []
    for op in ops:
        if op not in builders:
            raise UsageError(f"unknown CRUD operation {op!r}; allowed: {list(ALL_OPS)}")
        name, description, kind, build, handler, output = builders[op](schema)
        model = cache(build)  # built on the tool's first use, or now for its schema
        latency = read_latency if kind == "read" else write_latency
        schemas = derived_later(f"crud {name_of(schema.model)} {op} {name}", schema.model,
                                partial(_schemas_of, model, output))
        spec_fields: dict[str, Any] = {
            "name": name,
            "description": description,
            "input_schema": {},  # made on the spec's first read (Tool.spec)
            "kind": kind,
            "system": system or schema.system,
            "entities": (schema.name,),
            "capacity": capacity,
        }
        if latency is not None:
            spec_fields["latency"] = latency
        if errors is not None:
            spec_fields["errors"] = errors
        out.append(Tool(ToolSpec(**spec_fields), model, handler, schemas))
    return out


def _schemas_of(model: Callable[[], type[BaseModel]], output: dict[str, Any]
                ) -> list[dict[str, Any]]:
    return [clean_schema(model().model_json_schema()), clean_schema(output)]


def _words(name: str) -> str:
    return name.replace("_", " ")


def _annotation(schema: EntitySchema, field: str) -> Any:
    return schema.model.model_fields[field].annotation


def _id_arg(schema: EntitySchema) -> str:
    return f"{schema.snake}_id"


def _page_schema(schema: EntitySchema) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": schema.json_schema},
            "total": {"type": "integer"},
            "next_offset": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["items", "total", "next_offset"],
    }


def _get(schema: EntitySchema) -> tuple[Any, ...]:
    id_arg = _id_arg(schema)
    model = partial(
        create_model,
        f"get_{schema.snake}_args",
        __config__=_ARGS_CONFIG,
        **{id_arg: (str, Field(description=f"The {schema.name} id."))},
    )

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        return ctx.require(schema.name, args.__dict__[id_arg])

    return (
        f"get_{schema.snake}",
        f"Get one {schema.name} by id.",
        "read",
        model,
        handler,
        schema.json_schema,
    )


def _filter_fields(schema: EntitySchema) -> list[str]:
    return [
        f for f in schema.fields if f != schema.primary_key and schema.field_types.get(f) in _SCALAR
    ]


def _list(schema: EntitySchema) -> tuple[Any, ...]:
    filters = _filter_fields(schema)
    types = {f: _annotation(schema, f) | None for f in filters}

    def model() -> type[BaseModel]:  # its fields made on first use too (a field each column)
        fields: dict[str, Any] = {
            f: (kind, Field(None, description=f"Only rows whose {f} equals this."))
            for f, kind in types.items()
        }
        fields["limit"] = (int, Field(20, ge=1, le=100, description="Page size."))
        fields["offset"] = (int, Field(0, ge=0, description="Rows to skip (from next_offset)."))
        return create_model(
            f"list_{schema.plural}_args", __config__=_ARGS_CONFIG, **fields)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        given = {f: args.__dict__[f] for f in filters if args.__dict__[f] is not None}
        rows = [r for r in ctx.rows(schema.name) if all(r.get(k) == v for k, v in given.items())]
        limit, offset = args.__dict__["limit"], args.__dict__["offset"]
        page = rows[offset : offset + limit]
        nxt = offset + limit if offset + limit < len(rows) else None
        return {"items": page, "total": len(rows), "next_offset": nxt}

    return (
        f"list_{schema.plural}",
        f"List {_words(schema.plural)} matching exact-value filters, a page at a time.",
        "read",
        model,
        handler,
        _page_schema(schema),
    )


def _search(schema: EntitySchema) -> tuple[Any, ...]:
    searchable = schema.searchable or tuple(
        f for f in _filter_fields(schema) if schema.field_types.get(f) == "string"
    )
    model = partial(
        create_model,
        f"search_{schema.plural}_args",
        __config__=_ARGS_CONFIG,
        query=(str, Field(min_length=1, description=f"Text found in {', '.join(searchable)}.")),
        limit=(int, Field(10, ge=1, le=100)),
    )

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        needle = args.__dict__["query"].casefold()
        hits = [
            r
            for r in ctx.rows(schema.name)
            if any(needle in str(r.get(f, "")).casefold() for f in searchable)
        ]
        return {"items": hits[: args.__dict__["limit"]], "total": len(hits), "next_offset": None}

    return (
        f"search_{schema.plural}",
        f"Search {_words(schema.plural)} by text in {', '.join(searchable)} (case-insensitive).",
        "read",
        model,
        handler,
        _page_schema(schema),
    )


def _create(schema: EntitySchema) -> tuple[Any, ...]:
    fields: dict[str, Any] = {}
    for f in schema.fields:
        if f == schema.primary_key:
            continue
        if f in schema.required:
            fields[f] = (_annotation(schema, f), ...)
        else:
            fields[f] = (_annotation(schema, f), schema.defaults.get(f))
    model = partial(create_model, f"create_{schema.snake}_args", __config__=_ARGS_CONFIG, **fields)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        return ctx.insert(schema.name, args.model_dump(mode="json"))

    return (
        f"create_{schema.snake}",
        f"Create a {schema.name}; its id is assigned and returned.",
        "write",
        model,
        handler,
        schema.json_schema,
    )


def _update(schema: EntitySchema) -> tuple[Any, ...]:
    id_arg = _id_arg(schema)
    fields: dict[str, Any] = {id_arg: (str, Field(description=f"The {schema.name} id."))}
    for f in schema.fields:
        if f != schema.primary_key:
            fields[f] = (_annotation(schema, f) | None, None)
    model = partial(create_model, f"update_{schema.snake}_args", __config__=_ARGS_CONFIG, **fields)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        changes = args.model_dump(mode="json", include=args.model_fields_set - {id_arg})
        if not changes:
            raise ToolError.invalid(id_arg, "give at least one field to change")
        for f in schema.required:
            if f in changes and changes[f] is None:
                raise ToolError.invalid(f, f"{f} cannot be null")
        return ctx.update(schema.name, args.__dict__[id_arg], changes)

    return (
        f"update_{schema.snake}",
        f"Change fields of a {schema.name}; fields not given keep their value.",
        "write",
        model,
        handler,
        schema.json_schema,
    )


def _delete(schema: EntitySchema) -> tuple[Any, ...]:
    id_arg = _id_arg(schema)
    fields: dict[str, Any] = {id_arg: (str, ...)}
    model = partial(create_model, f"delete_{schema.snake}_args", __config__=_ARGS_CONFIG, **fields)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        id = args.__dict__[id_arg]
        ctx.delete(schema.name, id)
        return {"deleted": True, "id": id}

    return (
        f"delete_{schema.snake}",
        f"Delete a {schema.name} permanently.",
        "write",
        model,
        handler,
        {
            "type": "object",
            "properties": {"deleted": {"type": "boolean"}, "id": {"type": "string"}},
        },
    )
