"""A pack directory as a :class:`~simforge.tools.Pack`, like a hand-written one.

Entities become SQLModel tables created at load time on a fresh :func:`entity_base`, one JSON
column per field (learned rows are nested JSON; typed columns would coerce ``92`` to ``92.0`` and
break exact replay). Tools become :class:`~simforge.tools.Tool` objects whose handler runs the
learned description through :func:`simforge.synth.handlers.run` on the call's
:class:`~simforge.tools.ToolContext`, so reads honour stale-read faults and writes are versioned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from simforge.synth.entities import parents_from_rows
from simforge.synth.handlers import Runtime, run
from simforge.synth.pack_files import TOOLS, read_json, read_manifest
from simforge.synth.replay import ReplayTable
from simforge.synth.textstate import Model
from simforge.tools.context import ToolContext
from simforge.tools.pack import Pack
from simforge.tools.spec import ToolSpec
from simforge.tools.tool import Tool
from simforge.world.schema import entity_base

_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": int | float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


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
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for prop, sub in (schema.get("properties") or {}).items():
        kind = _TYPES.get(sub.get("type") if isinstance(sub.get("type"), str) else "", Any)
        fields[prop] = (kind, ...) if prop in required else (kind | None, None)
    model: type[BaseModel] = create_model(
        f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def load_synth_pack(folder: Path | str) -> Pack:
    """The pack in ``folder`` (a directory written by ``simforge synth``)."""
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
    for entry in read_json(folder / TOOLS):
        spec = ToolSpec.model_validate(entry["spec"])
        desc = entry["handler"]
        model = input_model(spec.name, spec.input_schema)
        tools.append(Tool(spec, model, _handler(desc, runtime, ensure_parents)))
    return Pack(
        name=manifest.get("name", folder.name),
        description=manifest.get("description", "synthesized from traces"),
        entities=models,
        tools=tools,
        seed=seed,
        path=folder,
    )


def _handler(desc: dict[str, Any], runtime: Runtime, ensure: Any) -> Any:
    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        ensure()
        return run(desc, ctx, args.model_dump(exclude_unset=True), runtime)

    return handler
