"""Seed rows and references of ``id`` entities (:mod:`.bare_ids`), once tools are profiled.

Reads are trusted before writes: every record a read returned (nested ones too) is a row, first
seen first; a record in a write's result is a row only if something mentioned its id before (a
record under an id nothing mentioned is the write's creation, not part of the world); an id a
call names under a tool's key argument that no result ever showed is a row with unknown (null)
fields. References (which entity an id argument names) are counted again once those rows exist.
"""

from __future__ import annotations

from collections.abc import Iterable

from simforge.synth.entities.bare_ids import is_new, mentions
from simforge.synth.entities.catalog import EntityCatalog
from simforge.synth.learn.observations import ToolProfile, count_refs, records_in
from simforge.trace.episode import Episode


def seed_kinds(
    episodes: list[Episode], catalog: EntityCatalog, tools: dict[str, ToolProfile]
) -> None:
    """Rows of the ``id`` entities (see the module)."""
    if not catalog.kinds:
        return
    for writes in (False, True):
        for episode in episodes:
            mentioned: set[str] = set()
            for call in episode.tool_calls:
                write = call.tool in tools and tools[call.tool].write_by_name
                if call.error is None and write == writes:
                    for entity, id, record in records_in(call, catalog, tools):
                        if not catalog.is_kind(entity.name):
                            continue
                        if writes and is_new(id, call, mentioned):
                            continue
                        if id not in entity.rows:
                            entity.rows[id] = dict(record)
                        entity.fields.update(dict.fromkeys(record))
                mentioned.update(mentions(call))
    for episode in episodes:
        for call in episode.tool_calls:
            mapping = tools[call.tool].best_mapping() if call.tool in tools else None
            args = call.args if isinstance(call.args, dict) else {}
            if call.error is None and mapping is not None and mapping[0] == "record":
                named = catalog.entities.get(mapping[1])
                key = args.get(mapping[2])
                if named is not None and catalog.is_kind(named.name) and isinstance(key, str):
                    # a row a write or read names but no result showed: it exists, its
                    # fields are unknown (null)
                    named.rows.setdefault(key, {named.pk: key})
    for name in set(catalog.kinds.values()):
        catalog.entities[name].normalise()
    catalog.invalidate()


def vote_refs(
    episodes: Iterable[Episode], catalog: EntityCatalog, tools: dict[str, ToolProfile]
) -> None:
    """Which records id arguments name, counted again once rows learned from results are in
    the catalog (an ``id`` entity has no rows when tools are first profiled)."""
    index = catalog.index()
    for p in tools.values():
        p.refs.clear()
    for episode in episodes:
        for call in episode.tool_calls:
            if call.error is None and isinstance(call.args, dict) and call.tool in tools:
                count_refs(tools[call.tool], call.args, index)
