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

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simforge.synth.expr.language import check


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

    @model_validator(mode="after")
    def _expressions(self) -> Handler:
        """Every expression the handler holds fits the language's schema (an error names the
        place in the handler and the form)."""
        for where, expr in handler_expressions(self.model_dump()):
            check(expr, where)
        return self


def handler_expressions(desc: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(place, expression)`` for every expression of a learned handler: the fields an update
    or a create computes, a side effect's and a created record's, an error condition's compared
    values and its message's values."""

    def named(value: Any, where: str) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict):
            yield from ((f"{where}.{name}", expr) for name, expr in value.items())

    def listed(value: Any) -> list[tuple[int, Any]]:
        return list(enumerate(value)) if isinstance(value, list) else []

    yield from named(desc.get("effects"), "effects")
    yield from named(desc.get("fields"), "fields")
    for i, rule in listed(desc.get("side")):
        if isinstance(rule, dict):
            yield from named(rule.get("changes"), f"side[{i}].changes")
    for i, made in listed(desc.get("creates")):
        if isinstance(made, dict):
            yield from named(made.get("fields"), f"creates[{i}].fields")
    for i, rule in listed(desc.get("errors")):
        if not isinstance(rule, dict):
            continue
        when = rule.get("when")
        if isinstance(when, dict) and len(when) == 1:
            ((op, arg),) = when.items()
            if op in ("ne", "lt", "gt"):
                for j, expr in listed(arg):
                    yield f"errors[{i}].when.{op}[{j}]", expr
        for j, expr in listed(rule.get("format")):
            yield f"errors[{i}].format[{j}]", expr


class ToolEntry(_Open):
    """One entry of ``tools.json``: the tool's spec (validated as a ``ToolSpec`` when the pack
    loads) and its handler."""

    spec: dict[str, Any]
    handler: Handler
