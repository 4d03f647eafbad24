"""Entities of APIs whose records carry a bare ``id`` (``{"id": "AST-09401", ...}``), learned
from results alone when no snapshot says what the tables are.

The key field names nothing (every record has an ``id``), so an entity is recognised by its id
instead: ids that share an alphabetic prefix (``AST-``, ``E-``, ``CHG-``) are one entity; ids
without one fall back to the set of fields of the record. The name comes from the evidence that
speaks about the thing, weighted by how directly it does:

* an argument whose value is the record's id, in the call that returned it
  (``get_asset(asset_id=X)`` returns ``{"id": X}``): ``Asset``, weight 3;
* the key a nested record sits under (``{"credit_note": {...}}``), and the noun of a read tool
  that returns it (``get_asset``, ``list_assets``, ``search_assets``): weight 2;
* the noun of a write that returns it, and the noun's head word (``post_chat_message`` and
  ``post_public_message`` both make a ``message``), and any other ``*_id``, ``*_to`` or
  ``*_by`` field or argument holding such an id (``assigned_to``, ``manager_id``): weight 1, so
  that the most common way of referring to the thing wins over its roles.

Every record seen anywhere in a result (top level, nested, inside ``items`` lists) becomes a seed
row of its entity, keyed by its id (see :mod:`simforge.synth.learn.seed_rows`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from simforge.synth.entities.catalog import ID as KEY
from simforge.synth.entities.catalog import (
    Entity,
    EntityCatalog,
    camel,
    group_of,
    singular,
)
from simforge.synth.entities.catalog import prefix_of as prefix_of  # re-exported
from simforge.trace.episode import Episode, ToolCall

_READ = re.compile(r"^(get|list|search|find|fetch|lookup|read|show|query|describe|retrieve)_(\w+)")
_CONTAINERS = frozenset(
    {
        "items",
        "data",
        "results",
        "records",
        "rows",
        "entries",
        "hits",
        "value",
        "values",
        "list",
        "result",
        "response",
        "payload",
        "body",
        "content",
        "from",
        "to",
        "removed",
        "added",
        "created",
        "updated",
        "deleted",
        "old",
        "new",
        "before",
        "after",
        "source",
        "target",
    }
)
DEPTH = 4


def nested_records(value: Any, depth: int = DEPTH) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """Every dict with a string ``id`` inside ``value``, with the key it sits under (``None`` at
    the top level; a list's items sit under the list's key)."""

    def walk(node: Any, under: str | None, d: int) -> Iterator[tuple[str | None, dict[str, Any]]]:
        if isinstance(node, dict):
            if isinstance(node.get(KEY), str):
                yield under, node
            if d > 0:
                for key, child in node.items():
                    if isinstance(child, dict | list):
                        yield from walk(child, str(key), d - 1)
        elif isinstance(node, list) and d > 0:
            for item in node[:200]:
                yield from walk(item, under, d - 1)

    yield from walk(value, None, depth)


def _stem(name: str) -> str:
    stem = re.sub(r"(_id|Id|_ids|Ids)$", "", name)
    return singular_noun(stem.lower())


def singular_noun(word: str) -> str:
    """``warehouses`` -> ``warehouse``, ``addresses`` -> ``address``, ``statuses`` ->
    ``status``, ``policies`` -> ``policy``."""
    if word.endswith(("sses", "tuses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("ses"):
        return word[:-1]
    return singular(word)


def discover(episodes: Iterable[Episode], catalog: EntityCatalog) -> dict[str, str]:
    """Register an entity per group of ``id`` records (ids a snapshot already holds are left to
    it); returns group -> entity name."""
    known = catalog.index()
    votes: dict[str, Counter[str]] = {}
    ids: dict[str, str] = {}
    fields: dict[str, dict[str, None]] = {}
    episodes = list(episodes)
    for episode in episodes:
        for call in episode.tool_calls:
            if call.error is not None:
                continue
            args = call.args if isinstance(call.args, dict) else {}
            read = _READ.match(call.tool.lower())
            for under, record in nested_records(call.result):
                id = record[KEY]
                group = group_of(record)
                if group is None or id in known:
                    continue
                ids.setdefault(id, group)
                fields.setdefault(group, {}).update(dict.fromkeys(record))
                box = votes.setdefault(group, Counter())
                for arg, given in args.items():
                    if given == id and arg != KEY:
                        box[_stem(arg)] += 3 if under is None else 1
                if under is not None and under not in _CONTAINERS:
                    box[_stem(under)] += 2
                if read and under in (None, "items", "results", "data", "records", "hits"):
                    box[singular_noun(read.group(2))] += 2
                elif under is None and "_" in call.tool:
                    # a write returning the record: its noun, and the noun's head word
                    # (post_chat_message and post_public_message both make a message)
                    noun = call.tool.lower().split("_", 1)[1]
                    box[singular_noun(noun)] += 1
                    box[singular_noun(noun.rsplit("_", 1)[-1])] += 1
    # roles: other fields and arguments that hold a known id
    for episode in episodes:
        for call in episode.tool_calls:
            args = call.args if isinstance(call.args, dict) else {}
            for name, value in args.items():
                _role(votes, ids, name, value)
            if call.error is None:
                for _, record in nested_records(call.result):
                    for name, value in record.items():
                        if name != KEY:
                            _role(votes, ids, name, value)
    names: dict[str, str] = {}
    taken = set(catalog.entities)
    ranked = sorted(votes, key=lambda g: -sum(votes[g].values()))
    for group in ranked:
        name = _name(group, votes[group], taken)
        taken.add(name)
        names[group] = name
        entity = Entity(name=name, pk=KEY, source="trace:id")
        entity.fields.update(fields.get(group, {}))
        catalog.add_kind(group, entity)
    return names


def _role(votes: dict[str, Counter[str]], ids: dict[str, str], name: str, value: Any) -> None:
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, str) and v in ids and name.endswith(("_id", "_ids", "Id", "_to", "_by")):
            votes[ids[v]][_stem(re.sub(r"_(to|by)$", "", name))] += 1


def _name(group: str, box: Counter[str], taken: set[str]) -> str:
    for stem, _ in sorted(box.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0])):
        name = camel(stem)
        if name and name not in taken:
            return name
    base = camel(group.split(":", 1)[1].strip("-_:").lower()) if group.startswith("prefix:") else ""
    name = base or "Record"
    n = 1
    while (candidate := name if n == 1 else f"{name}{n}") in taken:
        n += 1
    return candidate


def mentions(call: ToolCall) -> set[str]:
    """Every string in a call's arguments and result (the ids an episode has seen so far)."""
    out: set[str] = set()

    def walk(node: Any, depth: int) -> None:
        if isinstance(node, str):
            out.add(node)
        elif depth > 0 and isinstance(node, dict):
            for value in node.values():
                walk(value, depth - 1)
        elif depth > 0 and isinstance(node, list):
            for value in node[:200]:
                walk(value, depth - 1)

    walk(call.args, 3)
    if call.error is None:
        walk(call.result, 5)
    return out


def is_new(id: str, call: ToolCall, mentioned: set[str]) -> bool:
    """A record id a write returns that neither its arguments nor anything earlier in the
    episode mentioned: the write created it."""
    args = call.args if isinstance(call.args, dict) else {}
    named = {v for v in args.values() if isinstance(v, str)}
    return id not in mentioned and id not in named
