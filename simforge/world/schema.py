"""Entity declarations: SQLModel table classes, read once into a plain :class:`EntitySchema`.

A pack declares its entities as SQLModel tables on a base of its own (:func:`entity_base`), so
two packs may both have a ``Customer`` without clashing in SQLAlchemy's global metadata. The
kernel never touches the ORM on the hot path: the schema is read once into plain data (primary
key, defaults, JSON schema, id format), and rows live as plain dicts in the :class:`World`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, create_model
from sqlalchemy.orm import registry
from sqlmodel import SQLModel

from simforge.errors import PluginError, UserError

T = TypeVar("T", bound=type[SQLModel])


def entity_base() -> type[SQLModel]:
    """A fresh SQLModel base with its own metadata, one per pack."""

    class PackBase(SQLModel, registry=registry()):
        pass

    return PackBase


def entity(
    *,
    id_prefix: str = "",
    id_width: int = 4,
    id_start: int = 0,
    plural: str | None = None,
    searchable: Iterable[str] = (),
    system: str | None = None,
) -> Any:
    """Class decorator: how new ids look, which fields ``search_*`` matches, the owning system."""

    def apply(cls: T) -> T:
        cls.__simforge_entity__ = {
            "id_prefix": id_prefix,
            "id_width": id_width,
            "id_start": id_start,
            "plural": plural,
            "searchable": tuple(searchable),
            "system": system,
        }
        return cls

    return apply


@dataclass(frozen=True)
class EntitySchema:
    """What the world and the CRUD generator need to know about one entity table."""

    name: str
    model: type[SQLModel]
    primary_key: str
    fields: tuple[str, ...]
    required: tuple[str, ...]
    defaults: dict[str, Any]
    json_schema: dict[str, Any]
    id_prefix: str = ""
    id_width: int = 4
    id_start: int = 0
    plural: str = ""
    searchable: tuple[str, ...] = ()
    system: str | None = None
    field_types: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, model: type[SQLModel]) -> EntitySchema:
        table = getattr(model, "__table__", None)
        if table is None:
            raise EntityDefinitionError(
                f"{model.__name__} is not a SQLModel table (declare table=True)")
        keys = list(table.primary_key.columns.keys())
        if len(keys) != 1:
            raise EntityDefinitionError(
                f"{model.__name__} needs exactly one primary key, has {keys}")
        config = dict(getattr(model, "__simforge_entity__", {}))
        from simforge.derived import derived, name_of

        if not model.__pydantic_complete__:
            # forward references (a type declared below the class) resolved now, as building
            # the JSON schema would: the CRUD tools and the row model read the annotations
            model.model_rebuild()
        json_schema = derived(f"entity {name_of(model)}", model, model.model_json_schema)
        properties = json_schema.get("properties", {})
        defaults: dict[str, Any] = {}
        required: list[str] = []
        for name, info in model.model_fields.items():
            if info.default_factory is not None:
                defaults[name] = info.default_factory()  # type: ignore[call-arg]
            elif not info.is_required():
                defaults[name] = info.default
            elif name != keys[0]:
                required.append(name)
        name = model.__name__
        plural = config.pop("plural", None) or _plural(_snake(name))
        return cls(
            name=name,
            model=model,
            primary_key=keys[0],
            fields=tuple(model.model_fields),
            required=tuple(required),
            defaults=defaults,
            json_schema=json_schema,
            plural=plural,
            field_types={k: _json_type(v) for k, v in properties.items()},
            **config,
        )

    @property
    def snake(self) -> str:
        return _snake(self.name)

    def validate_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row checked against the model and dumped as JSON-ready values."""
        return self._row_model.__pydantic_validator__.validate_python(
            dict(row)).model_dump(mode="json")

    @cached_property
    def _row_model(self) -> type[BaseModel]:
        """A plain pydantic model of the table's fields, built on first use. Validating through
        the SQLModel table class itself goes through SQLAlchemy's instrumented construction,
        about 12x slower a row (30 us against 2.5): the seed tables of a world are thousands of
        rows, validated on a process's first reset. The fields (types, constraints, defaults)
        are the table's own, so a row passes, fails and dumps alike."""
        return create_model(
            f"{self.name}Row",
            **{f: (info.annotation, info) for f, info in self.model.model_fields.items()},
        )  # type: ignore[call-overload]


class EntityDefinitionError(PluginError, TypeError):
    """An entity a pack declares wrongly (not a SQLModel table, not exactly one primary key);
    names the model."""


class SeedDataError(UserError, ValueError):
    """A seed row that does not fit its entity; names the entity, the row and the field."""


def validate_tables(
    schemas: Mapping[str, EntitySchema], tables: Mapping[str, Iterable[Mapping[str, Any]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Seed rows validated and keyed by primary key: the read-only base of a world."""
    out: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in schemas}
    for name, rows in tables.items():
        schema = schemas.get(name)
        if schema is None:
            raise SeedDataError(
                f"seed data names unknown entity {name!r}; known: {sorted(schemas)}"
            )
        table = out[name]
        for index, row in enumerate(rows):
            try:
                clean = schema.validate_row(row)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise SeedDataError(
                    f"{name} row {index}: field {where!r}: {first['msg']} "
                    f"(got {first.get('input')!r})"
                ) from None
            key = str(clean[schema.primary_key])
            if key in table:
                raise SeedDataError(f"{name} row {index}: duplicate id {key!r}")
            table[key] = clean
    return out


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _plural(word: str) -> str:
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy", "uy")):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def _json_type(prop: Mapping[str, Any]) -> str:
    if "type" in prop:
        return str(prop["type"])
    for option in prop.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return str(option["type"])
    return "any"
