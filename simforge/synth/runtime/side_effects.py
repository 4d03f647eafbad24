"""Side effects on a record a write names but does not return, as a session applies them
(:func:`apply_side_effects`; learned by :mod:`simforge.synth.learn.side_effects`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from simforge.synth.runtime.effects import apply_effects

Row = dict[str, Any]


RESULT = "@result"
"""The pseudo-argument of a side effect on the row a write's text answer names (a payment's
answer names the bill it paid)."""


TOKEN = re.compile(r"[#\w-]{4,}")


class _Store(Protocol):
    def get(self, entity: str, id: str) -> Row | None: ...
    def update(self, entity: str, id: str, changes: Mapping[str, Any]) -> Row: ...


def target_of(row: Row | None, sub: str | None, id: Any) -> Row | None:
    """The record a side effect changes: the row itself, or its sub-record ``id``."""
    if row is None or sub is None:
        return row
    records = row.get(sub)
    found = records.get(id) if isinstance(records, dict) and isinstance(id, str) else None
    return found if isinstance(found, dict) else None


def apply_side_effects(
    desc: Mapping[str, Any], env: dict[str, Any], store: _Store, parent_of: Mapping[str, str]
) -> None:
    """Apply the learned side effects of a write that has just produced ``env["new"]``."""
    args = env.get("args") or {}
    for rule in desc.get("side") or []:
        value = args.get(rule["arg"])
        if not isinstance(value, str):
            continue
        sub = rule.get("sub")
        parent_id = parent_of.get(value) if sub else value
        parent = store.get(rule["entity"], parent_id) if parent_id else None
        target = target_of(parent, sub, value)
        if parent is None or parent_id is None or target is None:
            continue
        changes = apply_effects(rule["changes"], {**env, "target": target}, None)
        if not changes:
            continue
        if sub:
            records = {**parent[sub], value: {**target, **changes}}
            store.update(rule["entity"], parent_id, {sub: records})
        else:
            store.update(rule["entity"], parent_id, changes)
