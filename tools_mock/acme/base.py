"""The one SQLModel base every Acme entity subclasses.

A pack owns its metadata (``entity_base``), so Acme's ``Customer`` never clashes with another
pack's ``Customer`` in SQLAlchemy's registry.
"""

from simforge.world import entity_base

Base = entity_base()
