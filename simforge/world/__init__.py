"""World: entity tables, versioned writes, as-of reads, diffs and cheap snapshots."""

from simforge.world.schema import EntitySchema, SeedDataError, entity, entity_base, validate_tables
from simforge.world.store import Change, EntityNotFound, Snapshot, Version, World, WorldError

__all__ = [
    "Change",
    "EntityNotFound",
    "EntitySchema",
    "SeedDataError",
    "Snapshot",
    "Version",
    "World",
    "WorldError",
    "entity",
    "entity_base",
    "validate_tables",
]
