"""Entity declarations: SQLModel table classes, read once into a plain :class:`EntitySchema`.

A pack declares its entities as SQLModel tables on a base of its own (:func:`entity_base`), so
two packs may both have a ``Customer`` without clashing in SQLAlchemy's global metadata. The
kernel never touches the ORM on the hot path: the schema is read once into plain data (primary
key, defaults, JSON schema, id format), and rows live as plain dicts in the :class:`World`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, create_model
from sqlalchemy import Column
from sqlalchemy.orm import registry
from sqlmodel import SQLModel
from sqlmodel.main import SQLModelMetaclass, get_column_from_field

from simforge.errors import PluginError, UserError

T = TypeVar("T", bound=type[SQLModel])

_UNMAPPED = "__simforge_unmapped__"
"""Set on an entity table class whose SQLAlchemy mapping waits for its first use: the arguments
SQLModel's metaclass would have mapped it with."""
_PENDING = "__simforge_pending__"
"""On a pack's base: its entity classes not mapped yet, in declaration order."""
_MAPPING = "__table__", "__mapper__", "_sa_class_manager"
_map_lock = threading.RLock()


class _EntityMeta(SQLModelMetaclass):
    """SQLModel's metaclass, but an entity table declared by a pack whose very content was
    imported before (:func:`simforge.derived.proven`) is mapped to SQLAlchemy on its first use,
    not when its class statement runs, and its pydantic validator built on first validation
    (``defer_build``): the two are most of a warm ``make`` (41 entity classes in Acme) and the
    environment never needs them (rows are plain dicts; the schemas are remembered). What the
    earlier import accepted is accepted again, so no error moves; any other class is built as
    SQLModel builds it. First use: ``__table__``, ``__mapper__``, a column attribute, an
    instance (``Model(...)``, ``model_validate``), or :func:`map_entities`."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                **kwargs: Any) -> Any:
        if not _deferrable(bases, namespace, kwargs):
            for base in bases:  # the tables mapped in declaration order, as SQLModel maps them
                if getattr(base, _PENDING, None):
                    map_entities(base)
            return super().__new__(mcs, name, bases, namespace, **kwargs)
        plain = {k: v for k, v in kwargs.items() if k != "table"}
        deferred = {**namespace, "model_config": {**namespace.get("model_config", {}),
                                                  "defer_build": True}}
        cls = super().__new__(mcs, name, bases, deferred, **plain)
        del cls.model_config["defer_build"]
        # what SQLModel sets for a table, but the columns: made when the class is mapped
        cls.model_config["table"] = True
        cls.model_config["read_from_attributes"] = True
        cls.model_config["read_with_orm_mode"] = True
        type.__setattr__(cls, _UNMAPPED, (name, bases, namespace, kwargs))
        getattr(cls, _PENDING).append(cls)
        return cls

    def __init__(cls, classname: str, bases: tuple[type, ...], dict_: dict[str, Any],
                 **kw: Any) -> None:
        if _UNMAPPED in cls.__dict__:
            type.__init__(cls, classname, bases, dict_)
        else:
            super().__init__(classname, bases, dict_, **kw)

    def __getattr__(cls, name: str) -> Any:
        if _UNMAPPED in cls.__dict__ and (
                name in _MAPPING or name in cls.__dict__.get("__pydantic_fields__", ())
                or name in cls.__dict__.get("__sqlmodel_relationships__", ())):
            map_entities(cls)  # type: ignore[arg-type]
            return getattr(cls, name)
        return super().__getattr__(name)  # type: ignore[misc]


def _deferrable(bases: tuple[type, ...], namespace: dict[str, Any],
                kwargs: dict[str, Any]) -> bool:
    """A plain entity table of a proven pack import: ``table=True`` as a class keyword, no
    table or mapper arguments, no table base, no explicit ``defer_build``."""
    if kwargs.get("table") is not True:
        return False
    config = namespace.get("model_config") or {}
    if "table" in config or "defer_build" in config:
        return False
    if any(k in namespace for k in ("__table__", "__table_args__", "__mapper_args__",
                                    "__abstract__")):
        return False
    for base in bases:
        base_config = getattr(base, "model_config", {})
        if base_config.get("table") or "defer_build" in base_config:
            return False
    module = sys.modules.get(namespace.get("__module__", ""))
    from simforge.derived import proven

    return proven(getattr(module, "__file__", None))


def map_entities(model: type[SQLModel]) -> None:
    """Map every entity class of ``model``'s pack base (``model`` the base or one of them) that
    waits for its SQLAlchemy mapping, in declaration order, as its class statement would have;
    then ``Base.metadata`` holds all their tables. Nothing to do for a class mapped already."""
    pending: list[type[SQLModel]] | None = getattr(model, _PENDING, None)
    if not pending:
        return
    with _map_lock:
        while pending:
            cls = pending.pop(0)
            name, bases, namespace, kwargs = cls.__dict__[_UNMAPPED]
            type.__delattr__(cls, _UNMAPPED)
            for field_name, info in cls.model_fields.items():
                setattr(cls, field_name, get_column_from_field(info))
            SQLModelMetaclass.__init__(cls, name, bases, namespace, **kwargs)


def entity_base() -> type[SQLModel]:
    """A fresh SQLModel base with its own metadata, one per pack."""

    class PackBase(SQLModel, metaclass=_EntityMeta, registry=registry()):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if _UNMAPPED in cls.__dict__:  # an instance needs the class mapped
                map_entities(cls)
            return super().__new__(cls, *args, **kwargs)

    type.__setattr__(PackBase, _PENDING, [])
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
        keys = _unmapped_keys(model)
        if keys is None:
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

        if not (model.__pydantic_fields_complete__ if _UNMAPPED in model.__dict__
                else model.__pydantic_complete__):
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


def _unmapped_keys(model: type[SQLModel]) -> list[str] | None:
    """The primary key of an entity class not mapped yet, read from its fields as its table
    would have it (one field declared ``primary_key=True``, none by its ``sa_column``);
    ``None`` (and the class mapped) when that is not a plain case or the class is mapped."""
    if _UNMAPPED not in model.__dict__:
        return None
    fields = model.model_fields
    keys = [n for n, f in fields.items() if getattr(f, "primary_key", None) is True]
    columns = [getattr(f, "sa_column", None) for f in fields.values()]
    if len(keys) == 1 and not any(isinstance(c, Column) and c.primary_key for c in columns):
        return keys
    map_entities(model)
    return None


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
