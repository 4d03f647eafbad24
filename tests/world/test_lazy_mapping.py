"""Entity tables of a pack folder imported before (same content, same simforge and libraries)
are mapped to SQLAlchemy on first use, not at their class statement: the same class, schema,
table, instances and validation errors as when mapped at once, and nothing deferred for a pack
seen for the first time, one built in code, or a class SQLModel would map differently."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, inspect, select
from sqlmodel import Session

from simforge import derived as derived_module
from simforge.derived import IMPORTED, deriving, proven
from simforge.world.schema import _UNMAPPED, EntitySchema, map_entities

MODELS = '''
from typing import Any, Literal
from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field
from simforge.world import entity, entity_base

Base = entity_base()


@entity(id_prefix="C-", searchable=("name",))
class Customer(Base, table=True):
    id: str = Field(primary_key=True)
    name: str
    tier: Literal["standard", "gold"] = Field("standard", sa_type=AutoString)
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    balance: float = Field(0.0, ge=0)


class Order(Base, table=True):
    id: str = Field(primary_key=True)
    customer_id: str = Field(foreign_key="customer.id")
    total: float
    note: str | None = None


Other = entity_base()


class Keyed(Other, table=True):
    __table_args__ = {"comment": "table arguments: mapped at once"}
    id: int = Field(primary_key=True)

'''

_names = itertools.count()


def _import(folder: Path) -> Any:
    """``folder/models.py`` as a fresh module (a new process importing the pack again)."""
    name = f"lazy_mapping_models_{next(_names)}"
    spec = importlib.util.spec_from_file_location(name, folder / "models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does, before running the module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    pack = (tmp_path / "pack").resolve()
    pack.mkdir()
    (pack / "models.py").write_text(textwrap.dedent(MODELS))
    return pack


def _load(folder: Path) -> Any:
    with deriving(folder, "fingerprint"):
        module = _import(folder)
        schemas = {m.__name__: EntitySchema.of(m) for m in (module.Customer, module.Order)}
    return module, schemas


def _unmapped(module: Any) -> set[str]:
    return {n for n in ("Customer", "Order", "Keyed") if _UNMAPPED in vars(getattr(module, n))}


def test_the_first_import_maps_at_once_and_a_proven_one_on_first_use(folder):
    cold, cold_schemas = _load(folder)
    assert _unmapped(cold) == set()
    warm, warm_schemas = _load(folder)
    assert _unmapped(warm) == {"Customer", "Order"}  # Keyed declares table arguments
    for name, schema in cold_schemas.items():
        other = warm_schemas[name]
        assert (other.primary_key, other.fields, other.required, other.defaults,
                other.json_schema, other.field_types) == (
            schema.primary_key, schema.fields, schema.required, schema.defaults,
            schema.json_schema, schema.field_types)
    assert warm.Customer.model_config == cold.Customer.model_config
    assert "defer_build" not in warm.Customer.model_config
    # a column attribute maps every pending class of the pack's base, in declaration order
    assert str(warm.Order.total == 3) == str(cold.Order.total == 3)
    assert _unmapped(warm) == set()
    assert list(warm.Base.metadata.tables) == list(cold.Base.metadata.tables)
    for name in ("customer", "order"):
        a, b = cold.Base.metadata.tables[name], warm.Base.metadata.tables[name]
        assert [(c.name, str(c.type), c.primary_key, c.nullable, bool(c.foreign_keys))
                for c in a.columns] == [
            (c.name, str(c.type), c.primary_key, c.nullable, bool(c.foreign_keys))
            for c in b.columns]


@pytest.mark.parametrize("touch", [
    lambda m: m.Customer.__table__,
    lambda m: m.Customer.__mapper__,
    lambda m: m.Customer.name,
    lambda m: m.Customer(id="C-1", name="Ann"),
    lambda m: m.Customer.model_validate({"id": "C-1", "name": "Ann"}),
    lambda m: map_entities(m.Base),
])
def test_any_use_of_the_sql_side_maps_first(folder, touch):
    _load(folder)
    warm, _ = _load(folder)
    assert _unmapped(warm) == {"Customer", "Order"}
    touch(warm)
    assert _unmapped(warm) == set()
    assert inspect(warm.Customer).primary_key[0].name == "id"


def test_instances_validation_and_the_orm_behave_as_when_mapped_at_once(folder):
    cold, _ = _load(folder)
    warm, _ = _load(folder)

    def outcome(module: Any) -> list[Any]:
        out: list[Any] = []
        customer = module.Customer(id="C-1", name="Ann", tags=["x"])
        out.append(customer.model_dump())
        for bad in ({"id": "C-2", "name": "B", "balance": -1}, {"id": "C-3"},
                    {"id": "C-4", "name": "D", "tier": "platinum"}):
            try:
                module.Customer.model_validate(bad)
                out.append("valid")
            except ValidationError as exc:
                out.append(exc.errors(include_url=False))
        engine = create_engine("sqlite://")
        module.Base.metadata.create_all(engine)
        with Session(engine) as db:
            db.add(customer)
            db.add(module.Order(id="O-1", customer_id="C-1", total=2.5))
            db.commit()
            out.append([c.model_dump() for c in db.exec(select(module.Customer)).scalars()])
            out.append(db.get(module.Order, "O-1").model_dump())
        out.append(module.Order.model_json_schema())
        return out

    assert outcome(warm) == outcome(cold)


def test_nothing_is_deferred_outside_a_proven_import_of_the_folder(folder, tmp_path):
    assert not proven(str(folder / "models.py"))  # not within an import
    with deriving(folder, "fingerprint"):
        assert not proven(str(folder / "models.py"))  # first import: nothing proven yet
    with deriving(folder, "fingerprint"):
        assert proven(str(folder / "models.py"))
        assert not proven(str(tmp_path / "elsewhere.py"))
        assert not proven(str(folder) + "-sibling/models.py")
    with deriving(folder, "another content"):
        assert not proven(str(folder / "models.py"))


def test_an_import_that_fails_proves_nothing(folder):
    for _ in range(2):
        with pytest.raises(RuntimeError), deriving(folder, "fingerprint"):
            raise RuntimeError("the pack's import failed")
    with deriving(folder, "fingerprint"):
        assert not proven(str(folder / "models.py"))
        state = derived_module._local.state
        assert IMPORTED not in state.values


def test_a_class_mapped_at_once_maps_the_waiting_ones_before_it(folder):
    source = folder / "models.py"
    source.write_text(source.read_text().replace("class Keyed(Other,", "class Keyed(Base,"))
    cold, _ = _load(folder)
    warm, _ = _load(folder)
    assert _unmapped(warm) == set()
    assert list(warm.Base.metadata.tables) == list(cold.Base.metadata.tables) == [
        "customer", "order", "keyed"]


def test_a_pack_that_sqlalchemy_refuses_still_fails_at_its_class_statement(folder):
    (folder / "models.py").write_text(textwrap.dedent('''
        from sqlmodel import Field
        from simforge.world import entity_base

        Base = entity_base()


        class Keyless(Base, table=True):
            name: str
    '''))
    for _ in range(2):  # the failed import is not remembered as proven
        with pytest.raises(Exception, match="primary key"), deriving(folder, "fingerprint"):
            _import(folder)
