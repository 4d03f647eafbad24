"""Entity declarations are read once into plain schemas; bad seed data names what is wrong."""

from __future__ import annotations

import pytest
from sqlmodel import Field, SQLModel

from simforge.world import EntitySchema, SeedDataError, entity, entity_base, validate_tables

Base = entity_base()


@entity(id_prefix="T-", searchable=("subject",))
class Ticket(Base, table=True):
    id: str = Field(primary_key=True)
    subject: str
    priority: int = 3


def test_schema_reads_the_sqlmodel_declaration():
    s = EntitySchema.of(Ticket)
    assert s.primary_key == "id"
    assert s.required == ("subject",)
    assert s.defaults == {"priority": 3}
    assert s.plural == "tickets"
    assert s.searchable == ("subject",)
    assert s.field_types == {"id": "string", "subject": "string", "priority": "integer"}


def test_two_packs_may_declare_the_same_entity_name():
    other = entity_base()

    class Ticket(other, table=True):
        id: str = Field(primary_key=True)

    assert EntitySchema.of(Ticket).name == "Ticket"


def test_a_non_table_model_is_refused():
    class Plain(SQLModel):
        id: str

    with pytest.raises(TypeError, match="not a SQLModel table"):
        EntitySchema.of(Plain)


def test_bad_seed_rows_name_entity_row_and_field():
    schemas = {"Ticket": EntitySchema.of(Ticket)}
    with pytest.raises(SeedDataError, match=r"Ticket row 1: field 'priority'.*'high'"):
        validate_tables(
            schemas,
            {
                "Ticket": [
                    {"id": "T-1", "subject": "a"},
                    {"id": "T-2", "subject": "b", "priority": "high"},
                ]
            },
        )
    with pytest.raises(SeedDataError, match="duplicate id 'T-1'"):
        validate_tables(
            schemas, {"Ticket": [{"id": "T-1", "subject": "a"}, {"id": "T-1", "subject": "b"}]}
        )
    with pytest.raises(SeedDataError, match="unknown entity 'Tickets'"):
        validate_tables(schemas, {"Tickets": []})
