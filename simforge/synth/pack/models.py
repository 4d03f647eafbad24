"""The pack files as pydantic models, validated when a pack is read: ``pack.yaml``
(:class:`Manifest`) and ``tools.json`` (a list of :class:`ToolEntry`).

They hold what a reader relies on (the format, the file names, each entity's primary key, each
tool's spec and handler kind) and let everything else through as it was written: the manifest's
statistics and a handler's learned description stay plain JSON (the expression language is
data, :mod:`simforge.synth.expr.language`). A file that does not fit is a
:class:`~simforge.synth.pack.files.PackFormatError` naming the file, the line (YAML) and the
field path, as :mod:`simforge.config` reports a scenario.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Files(_Open):
    """Names of the pack's files, relative to the pack directory."""

    tools: str
    world: str
    replay: str
    scenario: str
    state: str | None = None
    nongold: str | None = None


class EntityEntry(_Open):
    """One entity of the manifest: its primary key, field schemas and sub-records."""

    pk: str
    fields: dict[str, Any] = Field(default_factory=dict)
    subs: dict[str, Any] = Field(default_factory=dict)


class Manifest(_Open):
    """``pack.yaml``."""

    format: Literal["simforge-synth/1"]
    name: str | None = None
    description: str | None = None
    entities: dict[str, EntityEntry] = Field(default_factory=dict)
    files: Files


class Handler(_Open):
    """A learned handler description; ``kind`` says which interpreter branch runs it."""

    kind: Literal[
        "get", "find", "search", "update", "create", "compute", "constant", "replay", "state",
        "declared",
    ]


class ToolEntry(_Open):
    """One entry of ``tools.json``: the tool's spec (validated as a ``ToolSpec`` when the pack
    loads) and its handler."""

    spec: dict[str, Any]
    handler: Handler
