"""Recognising entities: which tables and which records in results are users, orders,
reservations, and what their primary keys are.

Evidence, strongest first:

1. a snapshot table keyed by id (``orders.json``): the field whose value equals the record's key
   is the primary key (``order_id``; ``flight_number`` for ``flights.json``); a record that lacks
   it (airline ``users.json``) gets ``<singular>_id`` filled in from the key;
2. a ``*_id`` field of a record returned by a tool, whose value equals an argument of the call
   (``get_order_details(order_id=X)`` returns ``{"order_id": X, ...}``): the record is that
   entity and the argument is its key;
3. a dict field whose keys are ids and whose values repeat the key (``product.variants``,
   keyed by ``item_id``): a sub-record, resolvable by its id like an entity.

The catalog also answers "which record does this id name?" (:meth:`EntityCatalog.resolve`), the
join that learned effects use (a ``new_item_id`` argument names a product variant).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simforge.synth.read.snapshot import KEY, Tables

Row = dict[str, Any]


@dataclass
class Entity:
    name: str
    pk: str
    rows: dict[str, Row] = field(default_factory=dict)
    """Seed rows by id (snapshot first, then the first observation of rows never snapshotted)."""
    subs: dict[str, str] = field(default_factory=dict)
    """Dict fields keyed by a sub-record id: ``{"variants": "item_id"}``."""
    source: str = "trace"
    fields: dict[str, None] = field(default_factory=dict)
    """Every field seen in a row or a returned record, in first-seen order."""

    def normalise(self) -> None:
        """Give every row every field (``None`` where absent), as the pack's table will."""
        for row in self.rows.values():
            self.fields.update(dict.fromkeys(row))
        names = list(self.fields)
        for id, row in self.rows.items():
            if len(row) != len(names) or list(row) != names:
                self.rows[id] = {name: row.get(name) for name in names}


@dataclass(frozen=True)
class Ref:
    """Where an id points: a row of ``entity``, or a sub-record in its ``sub`` field."""

    entity: str
    sub: str | None = None


def camel(word: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", word) if part)


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def entity_name_for_table(table: str) -> str:
    return camel(singular(table.lower()))


def entity_name_for_key(key: str) -> str:
    """``order_id`` -> ``Order``; ``reservation_id`` -> ``Reservation``."""
    stem = re.sub(r"(_id|Id|_number|_key|_code)$", "", key)
    return camel(stem or key)


def is_key_name(name: str) -> bool:
    return name == "id" or name.endswith(("_id", "Id"))


class EntityCatalog:
    """Entities by name and by primary key, plus the id index used to resolve references."""

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.by_pk: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        """Group of ``id`` records (:func:`.bare_ids.group_of`) -> entity name."""
        self._index: dict[str, Ref] | None = None

    def add(self, entity: Entity) -> Entity:
        existing = self.entities.get(entity.name)
        if existing is not None:
            for id, row in entity.rows.items():
                existing.rows.setdefault(id, row)
            return existing
        self.entities[entity.name] = entity
        self.by_pk.setdefault(entity.pk, entity.name)
        self._index = None
        return entity

    def add_kind(self, group: str, entity: Entity) -> Entity:
        """An entity keyed by a bare ``id``: recognised by its group, never by its key name
        (every such entity shares it), so it stays out of ``by_pk``."""
        self.entities.setdefault(entity.name, entity)
        self.kinds[group] = entity.name
        self._index = None
        return self.entities[entity.name]

    def kind_of(self, record: Any) -> Entity | None:
        if not self.kinds or not isinstance(record, dict):
            return None
        group = group_of(record)
        name = self.kinds.get(group) if group else None
        return self.entities.get(name) if name else None

    def is_kind(self, name: str) -> bool:
        return name in self.kinds.values()

    def entity_for_key(self, key: str) -> Entity | None:
        name = self.by_pk.get(key)
        return self.entities.get(name) if name else None

    def recognise(self, record: Any, hint: str | None = None) -> tuple[Entity, str] | None:
        """The entity a result record is, and its id (``hint``: a key field known to be its)."""
        if not isinstance(record, dict):
            return None
        kind = self.kind_of(record)
        if kind is not None:
            return kind, record[kind.pk]
        if hint is not None and isinstance(record.get(hint), str):
            entity = self.entity_for_key(hint)
            if entity is not None:
                return entity, record[hint]
        best: tuple[int, Entity, str] | None = None
        for key, value in record.items():
            if not isinstance(value, str):
                continue
            entity = self.entity_for_key(key)
            if entity is None:
                continue
            known = entity.rows.get(value)
            score = len(set(known) & set(record)) if known else 0
            if known is None and entity.rows:
                sample = next(iter(entity.rows.values()))
                score = len(set(sample) & set(record)) - 1
            if best is None or score > best[0]:
                best = (score, entity, value)
        if best is None or best[0] < 1:
            return None
        return best[1], best[2]

    def index(self) -> dict[str, Ref]:
        """Every id the seed knows, and what it names (primary keys win over sub-records)."""
        if self._index is None:
            index: dict[str, Ref] = {}
            for entity in self.entities.values():
                for row in entity.rows.values():
                    for sub in entity.subs:
                        value = row.get(sub)
                        if isinstance(value, dict):
                            for key in value:
                                index.setdefault(str(key), Ref(entity.name, sub))
            for entity in self.entities.values():
                for id in entity.rows:
                    index[id] = Ref(entity.name)
            self._index = index
        return self._index

    def invalidate(self) -> None:
        self._index = None


def resolve(ref: Ref, value: str, get: Any, parent_of: Mapping[str, str]) -> Row | None:
    """The record ``value`` names under ``ref``, read through ``get(entity, id)`` so a session's
    writes are seen; a sub-record is merged with its parent's scalar fields (a variant carries
    its product's name and id)."""
    if ref.sub is None:
        row = get(ref.entity, value)
        return dict(row) if row is not None else None
    parent_id = parent_of.get(value)
    if parent_id is None:
        return None
    parent = get(ref.entity, parent_id)
    if parent is None:
        return None
    sub = (parent.get(ref.sub) or {}).get(value)
    if not isinstance(sub, dict):
        return None
    merged = {k: v for k, v in parent.items() if not isinstance(v, dict | list)}
    merged.update(sub)
    return merged


def parents(catalog: EntityCatalog) -> dict[str, str]:
    """Sub-record id -> parent row id, for every sub-record of the seed."""
    out: dict[str, str] = {}
    for entity in catalog.entities.values():
        for row_id, row in entity.rows.items():
            for sub in entity.subs:
                value = row.get(sub)
                if isinstance(value, dict):
                    for key in value:
                        out.setdefault(str(key), row_id)
    return out


def from_snapshot(tables: Tables, catalog: EntityCatalog, key_hints: Iterable[str] = ()) -> None:
    """Entities from raw snapshot tables; ``key_hints`` are id field names seen in traces, used
    to name a key that the records themselves do not carry."""
    hints = set(key_hints)
    for table, records in tables.items():
        if not records:
            continue
        name = entity_name_for_table(table)
        pk = _primary_key(name, records, hints)
        rows: dict[str, Row] = {}
        for record in records:
            row = {k: v for k, v in record.items() if k != KEY}
            if pk not in row and KEY in record:
                row = {pk: record[KEY], **row}
            if pk in row and row[pk] is not None:
                rows[str(row[pk])] = row
        entity = catalog.add(Entity(name=name, pk=pk, rows=rows, source=f"snapshot:{table}"))
        entity.subs.update(_sub_records(rows.values()))


def _primary_key(name: str, records: list[Row], hints: set[str]) -> str:
    keyed = [r for r in records if KEY in r]
    sample = records[:200]
    if keyed:
        for candidate in sample[0]:
            if candidate != KEY and all(str(r.get(candidate)) == str(r[KEY]) for r in keyed[:200]):
                return candidate
        # the key is not in the records: name it after the entity (``users.json`` -> user_id)
        return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() + "_id"
    for candidate in sample[0]:
        if is_key_name(candidate) and len({str(r.get(candidate)) for r in sample}) == len(sample):
            own = entity_name_for_key(candidate) == name or candidate == "id"
            if own:
                return candidate
    for candidate in sample[0]:
        if is_key_name(candidate) and len({str(r.get(candidate)) for r in sample}) == len(sample):
            return candidate
    return next(iter(sample[0]))


def _sub_records(rows: Iterable[Row]) -> dict[str, str]:
    """Dict fields whose keys are ids repeated inside the values (``variants`` by ``item_id``)."""
    found: dict[str, str] = {}
    for row in list(rows)[:50]:
        for name, value in row.items():
            if name in found or not isinstance(value, dict) or not value:
                continue
            key, inner = next(iter(value.items()))
            if not isinstance(inner, dict):
                continue
            for inner_key, inner_value in inner.items():
                if inner_value == key and is_key_name(inner_key):
                    found[name] = inner_key
    return found


def fake_row(entity: Entity, id: str, fields: Mapping[str, str]) -> Row:
    """A plausible row for an id that is referenced but never seen, deterministic per id:
    ``fields`` maps field names to JSON types (from the rows that were seen)."""
    from faker import Faker

    fake = Faker()
    fake.seed_instance(int(hashlib.sha256(f"{entity.name}:{id}".encode()).hexdigest()[:12], 16))
    row: Row = {entity.pk: id}
    for name, kind in fields.items():
        if name == entity.pk:
            continue
        lowered = name.lower()
        value: Any
        if kind == "string":
            if "email" in lowered:
                value = fake.email()
            elif "first" in lowered:
                value = fake.first_name()
            elif "last" in lowered:
                value = fake.last_name()
            elif "name" in lowered:
                value = fake.name()
            elif "city" in lowered:
                value = fake.city()
            elif "zip" in lowered or "postal" in lowered:
                value = fake.postcode()
            elif "date" in lowered or "dob" in lowered or lowered.endswith("_at"):
                value = fake.date()
            elif "phone" in lowered:
                value = fake.phone_number()
            elif "address" in lowered:
                value = fake.street_address()
            else:
                value = fake.word()
        elif kind == "integer":
            value = fake.random_int(0, 100)
        elif kind == "number":
            value = round(fake.pyfloat(min_value=0, max_value=1000), 2)
        elif kind == "boolean":
            value = fake.pybool()
        elif kind == "array":
            value = []
        elif kind == "object":
            value = {}
        else:
            value = None
        row[name] = value
    return row


def parents_from_rows(
    tables: Mapping[str, Iterable[Row]],
    subs: Mapping[str, Mapping[str, str]],
    pks: Mapping[str, str],
) -> dict[str, str]:
    """Sub-record id -> parent row id, from plain seed tables (what a loaded pack has)."""
    out: dict[str, str] = {}
    for entity, fields in subs.items():
        pk = pks.get(entity)
        if not fields or pk is None:
            continue
        for row in tables.get(entity, []):
            for sub in fields:
                value = row.get(sub)
                if isinstance(value, dict):
                    for key in value:
                        out.setdefault(str(key), str(row.get(pk)))
    return out


ID = "id"
"""The field that names a record in results (not a snapshot row's key, :data:`KEY`)."""
_PREFIX = re.compile(r"^([A-Za-z]+[-_:]?)\d")


def prefix_of(id: str) -> str | None:
    """``AST-09401`` -> ``AST-``; ``None`` for ids without an alphabetic prefix before a digit."""
    match = _PREFIX.match(id)
    return match.group(1) if match else None


def group_of(record: dict[str, Any]) -> str | None:
    """The group a record with an ``id`` belongs to: its id prefix, else its field set."""
    id = record.get(ID)
    if not isinstance(id, str) or not id:
        return None
    prefix = prefix_of(id)
    return f"prefix:{prefix}" if prefix else "fields:" + ",".join(sorted(record))
