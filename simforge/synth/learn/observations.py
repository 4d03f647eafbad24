"""Reading episodes for learning: what each tool was called with, what it touched, and the
state of every entity just before each call.

Two passes. The first profiles tools (argument and result samples, errors) and recognises
entities in results. The second walks each episode in order over a copy-on-write view of the
seed, so that every call is seen with the entity as it was at that moment: before a write the
old row, after it the new one (from the write's own result, or else from the next read of the
same entity), which is what effects are learned from. The same walk yields each episode's
initial state (rows it saw before writing that differ from the seed) and its gold state (the
rows its writes left behind).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from simforge.synth.entities.bare_ids import is_new, mentions, nested_records
from simforge.synth.entities.catalog import (
    Entity,
    EntityCatalog,
    Ref,
    entity_name_for_key,
    is_key_name,
)
from simforge.synth.entities.catalog import resolve as resolve_ref
from simforge.synth.expr.joins import JoinIndex
from simforge.synth.expr.language import same
from simforge.synth.runtime.interpreter import DictStore
from simforge.synth.runtime.side_effects import RESULT, TOKEN
from simforge.trace.episode import Episode, ToolCall

Row = dict[str, Any]

_WRITE = re.compile(
    r"^(cancel|update|modify|create|book|delete|remove|send|return|exchange|transfer|add|set|"
    r"reset|toggle|enable|disable|pay|refund|submit|post|put|patch|insert|assign|close|"
    r"change|apply|issue|escalate|make|upgrade|downgrade|register|approve|reject|charge|publish|"
    r"resolve|retire|place|adjust|mark|archive|restore|unlock|lock|grant|revoke|move|merge|"
    r"rename|schedule|complete|reopen|suspend|activate|deactivate|terminate|dismiss|accept|"
    r"decline|allocate|release|reserve|void|withdraw|invite|enroll|renew|reassign|unassign|open_)"
)
_READ_NAME = re.compile(
    r"^(get|list|search|find|fetch|lookup|look_up|read|show|query|describe|retrieve|view|count)_"
)


def named_like_write(name: str) -> bool:
    return bool(_WRITE.match(name.lower()))


@dataclass
class ToolProfile:
    name: str
    args: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    durations: list[float] = field(default_factory=list)
    description: str | None = None
    mapping: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(mode, entity, key argument) votes: mode is record, key, found (a stored row found by
    other fields), list, path or created."""
    refs: dict[str, Counter[Ref]] = field(default_factory=dict)
    changed_state: int = 0
    """Calls whose result showed their target row with a field changed from the row as it
    stood before (in the seed or earlier in the episode)."""
    changed_in_episode: int = 0
    """Of those, calls where the row's earlier state was seen in the same episode and no write
    touched it since: the call itself changed the world."""

    def best_mapping(self) -> tuple[str, str, str] | None:
        if not self.mapping:
            return None
        (mode, entity, key), votes = self.mapping.most_common(1)[0]
        successes = max(1, self.calls - sum(self.errors.values()))
        return (mode, entity, key) if votes >= 0.3 * successes else None

    def best_refs(self) -> dict[str, Ref]:
        return {name: votes.most_common(1)[0][0] for name, votes in self.refs.items() if votes}

    @property
    def is_write(self) -> bool:
        """Named like a write, or seen changing what it returns in most calls (a read that
        sometimes disagrees with the snapshot is data drift, not a write). A tool named like a
        read (``get_``, ``list_``, ``search_``) counts only changes from what the same episode
        had already shown: its rows differing from the snapshot are the episode's initial
        state, not its doing."""
        successes = max(1, self.calls - sum(self.errors.values()))
        if self.write_by_name:
            return True
        if self.read_by_name:
            return self.changed_in_episode > 0.5 * successes
        return self.changed_state > 0.5 * successes

    @property
    def write_by_name(self) -> bool:
        return bool(_WRITE.match(self.name.lower()))

    @property
    def read_by_name(self) -> bool:
        return not self.write_by_name and bool(_READ_NAME.match(self.name.lower()))


@dataclass
class CallObservation:
    """One call as the learner sees it."""

    tool: str
    args: dict[str, Any]
    env: dict[str, Any]
    result: Any
    error: str | None
    missing_target: bool = False
    new: Row | None = None
    created: bool = False
    made: list[tuple[str, Row]] = field(default_factory=list)
    """``(entity, record)`` for records a write created besides its target (a credit note)."""
    side: list[tuple[str, Row, Row]] = field(default_factory=list)
    """``(id argument, row before, row after)`` for rows it names that a later read showed."""
    store: DictStore | None = None
    """The episode's store just before the call (what learning checks a candidate against)."""
    initial: dict[str, dict[str, Row]] | None = None
    """The episode's initial state (rows it saw that differ from the seed), once walked."""


@dataclass
class EpisodeState:
    initial: dict[str, dict[str, Row]] = field(default_factory=dict)
    final: dict[str, dict[str, Row | None]] = field(default_factory=dict)
    written: set[tuple[str, str]] = field(default_factory=set)
    created: set[tuple[str, str]] = field(default_factory=set)
    writers: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """The tools whose calls wrote each row (what the expected state may rely on)."""
    first_seen: dict[tuple[str, str], Row] = field(default_factory=dict)
    """Each row as the episode first saw it, before any write of it (equal to the seed or
    not)."""


SAMPLE_CAP = 300


def profile(episodes: Iterable[Episode], catalog: EntityCatalog) -> dict[str, ToolProfile]:
    """Pass one: tool profiles, and entities for id fields the snapshot did not have."""
    profiles: dict[str, ToolProfile] = {}
    for episode in episodes:
        for call in episode.tool_calls:
            p = profiles.get(call.tool)
            if p is None:
                p = profiles[call.tool] = ToolProfile(call.tool)
                desc = call.metadata.get("description")
                p.description = desc if isinstance(desc, str) else None
            p.calls += 1
            if call.error is not None:
                p.errors[call.error] += 1
            if call.duration is not None:
                p.durations.append(call.duration)
            if isinstance(call.args, dict) and len(p.args) < SAMPLE_CAP * 3:
                p.args.append(call.args)
            if call.error is None and len(p.results) < SAMPLE_CAP:
                p.results.append(call.result)
            if call.error is None and isinstance(call.args, dict):
                _vote(p, call, catalog)
    return profiles


def _vote(p: ToolProfile, call: ToolCall, catalog: EntityCatalog) -> None:
    args = call.args or {}
    result = call.result
    index = catalog.index()
    count_refs(p, args, index)
    if isinstance(result, dict):
        found = catalog.recognise(result)
        if found is not None:
            entity, own = found
            for arg, given in args.items():
                if given == own:
                    p.mapping[("record", entity.name, arg)] += 1
                    return
            if own in index and index[own].sub is None and not p.write_by_name:
                # a stored row, looked up by something other than its key (a phone number)
                p.mapping[("found", entity.name, "")] += 1
            elif p.read_by_name:
                pass  # a row the snapshot lacks, not one the read made (a seed row)
            elif not catalog.is_kind(entity.name) or p.write_by_name:
                p.mapping[("created", entity.name, "")] += 1
            return
        if catalog.kinds:
            for under, record in nested_records(result):
                kind = catalog.kind_of(record) if under is not None else None
                for arg, given in args.items():
                    if kind is not None and given == record[kind.pk]:
                        p.mapping[("record", kind.name, arg)] += 1
                        return
        for key, value in result.items():
            if not (isinstance(value, str) and is_key_name(key)) or key == "id":
                continue
            for arg, given in args.items():
                if given == value:
                    entity = catalog.entity_for_key(key) or catalog.add(
                        Entity(entity_name_for_key(key), key)
                    )
                    p.mapping[("record", entity.name, arg)] += 1
                    return
            break
    elif isinstance(result, str) and result in index and index[result].sub is None:
        p.mapping[("key", index[result].entity, "")] += 1
    elif isinstance(result, list) and result and isinstance(result[0], dict):
        found = catalog.recognise(result[0])
        if found is not None:
            p.mapping[("list", found[0].name, "")] += 1
    else:
        for arg, given in args.items():
            if isinstance(given, str) and given in index and index[given].sub is None:
                entity = catalog.entities[index[given].entity]
                if arg == entity.pk or arg.endswith(entity.pk.split("_")[-1]):
                    p.mapping[("path", entity.name, arg)] += 1
                    return


def count_refs(p: ToolProfile, args: dict[str, Any], index: dict[str, Ref]) -> None:
    for name, value in args.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and v in index:
                p.refs.setdefault(name, Counter())[index[v]] += 1


def learn_seed_rows(
    episodes: Iterable[Episode], catalog: EntityCatalog, tools: dict[str, ToolProfile]
) -> None:
    """Rows that no snapshot held, from their first observation in a result."""
    for episode in episodes:
        for call in episode.tool_calls:
            mapping = tools[call.tool].best_mapping() if call.tool in tools else None
            if call.error is not None or (mapping is not None and mapping[0] == "created"):
                continue  # a record a write created was not in the world before it
            for entity, id, record in records_in(call, catalog, tools):
                if catalog.is_kind(entity.name):
                    continue  # seeded by simforge.synth.learn.seed_rows, reads first
                entity.rows.setdefault(id, record)
                entity.fields.update(dict.fromkeys(record))
    for entity in catalog.entities.values():
        entity.normalise()
    catalog.invalidate()


def records_in(
    call: ToolCall, catalog: EntityCatalog, tools: dict[str, ToolProfile]
) -> list[tuple[Entity, str, Row]]:
    result = call.result
    mapping = tools[call.tool].best_mapping() if call.tool in tools else None
    hint = catalog.entities[mapping[1]].pk if mapping and mapping[1] in catalog.entities else None
    found: list[tuple[Entity, str, Row]] = []
    candidates = result if isinstance(result, list) else [result]
    for item in candidates[:100]:
        if isinstance(item, dict):
            recognised = catalog.recognise(item, hint)
            if recognised is not None and (
                mapping is None or mapping[0] != "list" or _full(recognised[0], item)
            ):
                found.append((recognised[0], recognised[1], item))
    if catalog.kinds:
        # records nested in the result (``{"order": {...}, "credit_note": {...}}``, ``items``)
        top = {id(item) for _, _, item in found}
        for _, record in nested_records(result):
            kind = catalog.kind_of(record)
            if kind is not None and id(record) not in top:
                found.append((kind, record[kind.pk], record))
    return found


def _full(entity: Entity, record: Row) -> bool:
    """A search hit is a full row only if it has every field the entity's rows have."""
    sample = next(iter(entity.rows.values()), None)
    return sample is None or set(sample) <= set(record)


def walk(
    episode: Episode,
    catalog: EntityCatalog,
    tools: dict[str, ToolProfile],
    store_base: dict[str, dict[str, Row]],
    pks: dict[str, str],
    parent_of: dict[str, str],
    sink: dict[str, list[CallObservation]] | None = None,
    primary: dict[str, str] | None = None,
) -> EpisodeState:
    """Pass two for one episode: observations per tool (into ``sink``) and its states;
    ``primary``: id -> the entity it is the primary key of (for joins)."""
    store = DictStore(store_base, pks)
    state = EpisodeState()
    seen: set[tuple[str, str]] = set()
    pending: dict[tuple[str, str], CallObservation] = {}
    touched: dict[tuple[str, str], tuple[CallObservation, str, Row]] = {}
    mentioned: set[str] = set()
    for call in episode.tool_calls:
        args = call.args if isinstance(call.args, dict) else {}
        profile_ = tools.get(call.tool)
        mapping = profile_.best_mapping() if profile_ else None
        written_before = set(state.written)
        old: Row | None = None
        target: tuple[str, str] | None = None
        if mapping and mapping[0] in ("record", "path") and isinstance(args.get(mapping[2]), str):
            target = (mapping[1], args[mapping[2]])
            old = store.get(*target)
        refs: dict[str, Any] = {}
        for name, ref in (profile_.best_refs() if profile_ else {}).items():
            value = args.get(name)
            if isinstance(value, list):
                refs[name] = [
                    resolve_ref(ref, v, store.get, parent_of) if isinstance(v, str) else None
                    for v in value
                ]
            elif isinstance(value, str):
                refs[name] = resolve_ref(ref, value, store.get, parent_of)
        snap = store.snapshot()
        db = JoinIndex(snap.get, primary or {})
        obs = CallObservation(
            call.tool,
            args,
            {"args": args, "old": old, "ref": refs, "db": db},
            call.result,
            call.error,
            missing_target=target is not None and old is None,
            store=snap,
            initial=state.initial,
        )
        is_write = bool(profile_ and profile_.write_by_name)
        if call.error is None:
            for entity, id, record in records_in(call, catalog, tools):
                key = (entity.name, id)
                before = store.get(*key)
                if before is not None and not catalog.is_kind(entity.name):
                    # a partial view (a usage view of a line, its numbers shown as text) shows
                    # what it shows; the row keeps the rest, and its values where they agree
                    record = {
                        **before,
                        **{k: v for k, v in record.items() if not _same_value(before.get(k), v)},
                    }
                # the row as this episode last showed it, with no write touching it since
                shown = (
                    key in seen
                    and key not in written_before
                    and key not in pending
                    and key not in touched
                )
                if catalog.is_kind(entity.name):
                    if is_write and key != target and is_new(id, call, mentioned):
                        before = None  # made by this write, whatever another episode held
                        if target is None and record is call.result:
                            obs.new, obs.created = record, True
                        else:
                            obs.made.append((entity.name, record))
                        state.created.add(key)
                        state.written.add(key)
                        state.final.setdefault(entity.name, {})[id] = record
                        store.put(entity.name, id, record)
                        continue
                    if before is not None:
                        record = {**before, **record}  # a partial view keeps the other fields
                if key in touched and touched[key][0] is not obs:
                    writer, arg, was = touched.pop(key)
                    writer.side.append((arg, was, record))
                    seen.add(key)
                    if before is not None and not _same_row(before, record):
                        state.writers.setdefault(key, set()).add(writer.tool)
                        state.written.add(key)
                        state.final.setdefault(entity.name, {})[id] = record
                kind = catalog.is_kind(entity.name)
                if key not in seen and key not in state.written:
                    seen.add(key)
                    if not (is_write and key == target):
                        state.first_seen.setdefault(key, record)
                    if before is not None and not _same_row(before, record):
                        if kind and is_write:
                            state.written.add(key)  # a write's result is no initial state
                            state.final.setdefault(entity.name, {})[id] = record
                        elif is_write and key == target:
                            pass  # the row after the write, not where the episode started
                        else:
                            state.initial.setdefault(entity.name, {})[id] = record
                if key in pending:
                    pending.pop(key).new = record
                if target == key or (is_write and before is None and not kind):
                    obs.new = record
                    if before is None and not kind:
                        obs.created = True
                        state.created.add(key)
                    if profile_ and before is not None and _changed(before, record):
                        profile_.changed_state += 1
                        profile_.changed_in_episode += int(shown)
                store.put(entity.name, id, record)
                if is_write and (target == key or (before is None and not kind)):
                    state.written.add(key)
                    state.final.setdefault(entity.name, {})[id] = record
            if is_write and target is not None and obs.new is None and old is not None:
                _partial_view(obs, target, old, catalog, store, state)
            if is_write and target is not None and obs.new is None:
                pending[target] = obs
                state.written.add(target)
            if is_write and profile_ is not None:
                _touch(touched, obs, profile_.best_refs(), parent_of, store, target)
            if is_write and isinstance(call.result, str):
                _touch_named(touched, obs, call.result, primary or {}, store)
        if sink is not None:
            sink.setdefault(call.tool, []).append(obs)
        mentioned.update(mentions(call))
        wrote = state.written - written_before
        if is_write and target is not None and target in state.written:
            wrote.add(target)
        for key in wrote:
            state.writers.setdefault(key, set()).add(call.tool)
    for entity_name, id in state.written:
        state.final.setdefault(entity_name, {})[id] = store.get(entity_name, id)
    return state


def _partial_view(
    obs: CallObservation,
    target: tuple[str, str],
    old: Row,
    catalog: EntityCatalog,
    store: DictStore,
    state: EpisodeState,
) -> None:
    """A write of an ``id`` entity whose result names the row under another key and carries
    some of its fields (``{"customer_id": C, "account_credit": 35.0, "ledger_entry": ...}``):
    those fields are the row after the write."""
    result = obs.result
    if not catalog.is_kind(target[0]) or not isinstance(result, dict):
        return
    if all(v is None for k, v in old.items() if k != "id"):
        return  # a row known only by its id: no before to learn from
    shown = {
        k: v
        for k, v in result.items()
        if k in old and k != "id" and not is_key_name(k) and not isinstance(v, dict)
    }
    if not shown or target[1] not in {v for v in result.values() if isinstance(v, str)}:
        return
    new = {**old, **shown}
    obs.new = new
    store.put(target[0], target[1], new)
    state.written.add(target)
    state.final.setdefault(target[0], {})[target[1]] = new


def _touch(
    touched: dict[tuple[str, str], tuple[CallObservation, str, Row]],
    obs: CallObservation,
    refs: dict[str, Ref],
    parent_of: dict[str, str],
    store: DictStore,
    target: tuple[str, str] | None,
) -> None:
    """Remember the rows a write's id arguments name, as they were before it: the next read of
    one shows what the write did to it (see :mod:`simforge.synth.learn.side_effects`)."""
    for name, ref in refs.items():
        value = obs.args.get(name)
        if not isinstance(value, str):
            continue
        parent = parent_of.get(value) if ref.sub else value
        key = (ref.entity, parent) if parent else None
        if key is None or key == target:
            continue
        if key in touched:
            writer, _, row = touched[key]
            # the same call naming the row twice: the sub-record's id is the more specific;
            # two writes before a read: whose change it is cannot be told
            arg = (name if ref.sub else touched[key][1]) if writer is obs else ""
            touched[key] = (writer, arg, row)
            continue
        found = store.get(*key)
        if found is not None:
            touched[key] = (obs, name, found)


def named_in(text: str, primary: dict[str, str], entity: str | None = None) -> list[str]:
    """Ids of rows a text names (``Payment ... made for bill B1234321``)."""
    return [
        t
        for t in dict.fromkeys(TOKEN.findall(text))
        if t in primary and (entity is None or primary[t] == entity)
    ]


def _touch_named(
    touched: dict[tuple[str, str], tuple[CallObservation, str, Row]],
    obs: CallObservation,
    text: str,
    primary: dict[str, str],
    store: DictStore,
) -> None:
    """A write whose text answer names a row (a payment for a bill it names): the next read of
    that row shows what the write did to it, as for a row an id argument names."""
    for id in named_in(text, primary):
        key = (primary[id], id)
        if key in touched or id in {v for v in obs.args.values() if isinstance(v, str)}:
            continue
        found = store.get(*key)
        if found is not None:
            touched[key] = (obs, RESULT, found)


def _changed(before: Row, shown: Row) -> bool:
    """Whether a result shows a field of the row with another value than it had. Fields the
    result leaves out (a usage view of a line) or adds (a limit joined from the plan) are no
    change: a read that shows part of a row does not write the rest; nor is a number shown
    as text (``"3.2"`` for ``3.2``), nor a value where the row had none yet (a field only the
    view carries)."""
    return any(
        k in before and before[k] is not None and not _same_value(before[k], v)
        for k, v in shown.items()
    )


def _same_value(a: Any, b: Any) -> bool:
    if same(a, b):
        return True
    for number, text in ((a, b), (b, a)):
        if (
            isinstance(number, int | float)
            and not isinstance(number, bool)
            and isinstance(text, str)
        ):
            try:
                return same(float(number), float(text))
            except ValueError:
                return False
    return False


def _same_row(a: Row, b: Row) -> bool:
    return all(same(a.get(k), b.get(k)) for k in set(a) | set(b))
