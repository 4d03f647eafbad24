"""A text state as a session evaluates it (``state.json`` of a pack): the features of an
episode's history of state-changing operations, each field's learned tree or rule list, and a
tool's answer rendered from the fields in its layout. Learned by
:mod:`simforge.synth.learn.text_state`, which says what the model is."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

STATE_ENTITY = "SessionState"


STATE_KEY = "session_id"


STATE_ID = "session"


ABSENT = None


def _canonical(args: Any) -> str:
    value = args if isinstance(args, dict) else {}
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def op(name: str, args: Any) -> str:
    return f"{name}:{_canonical(args)}"


def operation_name(operation: str) -> str:
    return operation.split(":", 1)[0]


@dataclass
class Features:
    """The feature vocabulary learned from training histories (so that a session computes the
    same features)."""

    ops: list[str] = field(default_factory=list)
    """Operations seen in training (``has:`` and ``odd:`` features)."""
    setters: list[str] = field(default_factory=list)
    """Names of operations seen with several argument sets (``last:`` features)."""
    pairs: list[tuple[str, str]] = field(default_factory=list)
    """Operations whose parities combine (``xor:`` features)."""

    def to_json(self) -> dict[str, Any]:
        return {"ops": self.ops, "setters": self.setters, "pairs": [list(p) for p in self.pairs]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Features:
        return cls(
            list(data.get("ops") or []),
            list(data.get("setters") or []),
            [(a, b) for a, b in data.get("pairs") or []],
        )

    def of(self, history: Sequence[str], args: Mapping[str, Any] | None = None) -> set[str]:
        counts = Counter(history)
        last: dict[str, str] = {}
        for operation in history:
            last[operation_name(operation)] = operation
        active: set[str] = set()
        for operation in self.ops:
            n = counts.get(operation, 0)
            if n:
                active.add("has:" + operation)
            if n % 2:
                active.add("odd:" + operation)
        for name in self.setters:
            if name in last:
                active.add("last:" + last[name])
        at = {operation: i for i, operation in enumerate(history)}
        for a, b in self.pairs:
            if (counts.get(a, 0) + counts.get(b, 0)) % 2:
                active.add(f"xor:{a}|{b}")
            # which of the two happened last (a setter and its undo: ``disable_roaming`` after
            # ``enable_roaming``; ``unseat_sim_card`` after ``reseat_sim_card``)
            if a in at or b in at:
                first, second = (a, b) if at.get(a, -1) > at.get(b, -1) else (b, a)
                active.add(f"since:{first}|{second}")
        for key, value in (args or {}).items():
            if isinstance(value, str | int | float | bool) or value is None:
                active.add(f"arg:{key}={value}")
        return active


def predict(tree: Mapping[str, Any], features: set[str]) -> Any:
    node = tree
    while "v" not in node:
        node = node["t"] if node["f"] in features else node["e"]
    return node["v"]


def render(desc: Mapping[str, Any], model: Model, features: set[str]) -> str:
    """A tool's answer: its fields, in its layout, as the model predicts them."""
    values = model.predict([name for name, _ in desc["layout"]], features)
    parts: list[str] = []
    for name, sep in desc["layout"]:
        value = values.get(name, ABSENT)
        if value is ABSENT:
            continue
        segment = f"{name}: {value}" if name in model.keyed else str(value)
        parts.append((sep if parts else "") + segment)
    return "".join(parts)


def known(name: str, value: Any) -> str:
    """The feature saying a field already predicted has this value."""
    return f"is:{name}={'' if value is ABSENT else value}"


@dataclass
class Model:
    """What a session needs (``state.json`` of the pack): the feature vocabulary, a tree per
    field, which fields are ``Key: value`` segments, the column of each field in
    ``SessionState`` and the tools whose calls change the state."""

    features: Features
    trees: dict[str, dict[str, Any]]
    keyed: set[str]
    columns: dict[str, str]
    changes: set[str]
    order: list[str] = field(default_factory=list)
    """Fields in the order they are predicted: each tree may ask the value of the ones before
    it (``is:`` features), so that fields that go together stay together."""
    factored: bool = False
    """Every field is predicted, in ``order``, whatever a tool shows: a field is a function of
    the current values of the fields before it (a factored state). Older packs predicted only
    the fields a tool shows."""

    def to_json(self) -> dict[str, Any]:
        return {
            "features": self.features.to_json(),
            "fields": self.trees,
            "order": self.order,
            "keyed": sorted(self.keyed),
            "columns": self.columns,
            "changes": sorted(self.changes),
            **({"factored": True} if self.factored else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Model:
        return cls(
            Features.from_json(data.get("features") or {}),
            dict(data.get("fields") or {}),
            set(data.get("keyed") or ()),
            dict(data.get("columns") or {}),
            set(data.get("changes") or ()),
            list(data.get("order") or []),
            bool(data.get("factored")),
        )

    def predict(self, names: Iterable[str], features: set[str]) -> dict[str, Any]:
        wanted = set(names)
        active = set(features)
        out: dict[str, Any] = {}
        for name in self.order:
            if (self.factored or name in wanted) and name in self.trees:
                out[name] = predict(self.trees[name], active)
                active.add(known(name, out[name]))
        return {name: value for name, value in out.items() if name in wanted}

    def row(self, ops: list[str]) -> dict[str, Any]:
        """The ``SessionState`` row after ``ops``: the history and every field's value."""
        values = self.predict(self.columns, self.features.of(ops))
        out: dict[str, Any] = {"ops": ops}
        for name, column in self.columns.items():
            out[column] = values.get(name, ABSENT)
        return out
