"""Writing a world out as a real SQLite file through its SQLModel tables, to inspect with SQL.
Not on any hot path: the kernel keeps rows as plain dicts."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine
from sqlmodel import Session

from simforge.world.store import World


def to_sqlite(world: World, path: Path | str) -> Path:
    """The current state of ``world`` in a new SQLite file at ``path`` (replaced if present)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{path}")
    for schema in world.schemas.values():
        table = schema.model.__table__  # type: ignore[attr-defined]
        table.metadata.create_all(engine, tables=[table])
    with Session(engine) as db:
        for name, schema in world.schemas.items():
            for row in world.rows(name):
                db.add(schema.model.model_validate(row))
        db.commit()
    engine.dispose()
    return path
