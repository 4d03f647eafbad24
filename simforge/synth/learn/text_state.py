"""State that the data shows only through text: tools whose answer depends on what happened
before, not on their arguments (a phone's status bar, a speed test), learned as a function of
the episode's history of state-changing operations.

A replay table keeps one answer per argument tuple, and ``check_status_bar()`` has no
arguments: 88 recorded calls, 12 different answers, one kept. Here the state is the episode's
history: the operations its setup declared (tau2's ``initialization_actions``:
``turn_airplane_mode_on``, ``set_network_mode_preference(mode=2g_only)``) and the
state-changing calls made since (``toggle_airplane_mode()``, ``enable_roaming(...)``), in order.

**Answers as records.** An answer is split into segments at line breaks and `` | ``; a segment
``Key: value`` is the field ``Key`` (``Status Bar: 📶⁴ Excellent``, ``Airplane Mode: OFF``), and
bare segments that never appear together, in the outputs of the same tools or in the same slot
(after the same segment), are one field whose value is whichever is present (``5G`` / ``2G`` /
none; ``📱 Data Enabled`` / ``📵 Data Disabled``). A tool's layout is the order of its
fields and the separator before each. Fields of the same key are one field wherever they appear:
the status bar a toggle prints is the status bar ``check_status_bar`` prints, learned from both.

**Features of the history**: whether an operation (name and arguments) happened, whether it
happened an odd number of times (a toggle), the arguments of the last call of an operation (a
setter), for two operations that share a word (``turn_airplane_mode_on`` and
``toggle_airplane_mode``; ``disable_roaming`` and ``enable_roaming``) the parity of both and
which came last, and the call's own arguments. A state-changing call's answer shows the state
after it, so its own operation is in its history.

**A factored state.** Each field is first learned from the history alone, and how many tests
that takes orders the fields: the simplest (a toggle, a setter, the SIM's status) are the
state's variables, and every later field may be a function of their *current values*
(``is:Airplane Mode=ON``), whichever tool showed them: the status bar from airplane mode, the
SIM, the network preference, mobile data. Every observation learns each field's current value
in turn (the one its answer shows, or else the one the field's model says), so a field seen only
in one tool's answers still informs a field seen in another's. A field is a rule over the other
fields' values where one explains every training example; the history is used only where that
does not explain the data.

**The simplest consistent rule** (:mod:`.occam`): a decision list of disjunctions of single
literals (and their negations), learned by elimination and a greedy cover, e.g. *no signal if
airplane mode is on, or the SIM is missing, or locked*, which answers a combination of three
faults learned from examples of one or two. A tree (ID3 on binary features) explains what the
list cannot. Both are the same plain JSON.

**In a session** the history is a row of the hidden entity ``SessionState`` (``ops``), seeded by
the task's initial state (its declared setup) and appended to by every state-changing call; the
row also holds the current value of every field, so that a task can expect the state its
episode ended in (the last values it observed) and ``state_matches`` checks it. The models are
plain JSON in the pack's ``state.json`` (``{"f": feature, "t": ..., "e": ...}`` or ``{"v":
value}``, fields predicted in ``order``, ``"factored": true``), read by the interpreter and the
compiled runtime alike.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simforge.synth.learn import occam
from simforge.synth.runtime.text_model import (
    ABSENT,
    STATE_KEY,
    Features,
    Model,
    known,
    op,
    operation_name,
    predict,
    render,
)

MAX_DEPTH = 8
RELEVANT = 1.5
"""How much more a split counts when its feature speaks of what the field speaks of."""
SEPARATORS = re.compile(r"(\n| \| )")
_KEYED = re.compile(r"^([^:\n]{1,48}): (.+)$", re.S)
_WORD = re.compile(r"[a-z]{4,}")
_COMMON = frozenset({"the", "and", "for", "has", "now", "are", "your", "you", "with", "not", "set"})


# -- answers as records -----------------------------------------------------------------------


def split(text: str) -> list[tuple[str, str]]:
    """``[(separator before, segment)]``; the first separator is empty."""
    parts = SEPARATORS.split(text)
    out: list[tuple[str, str]] = []
    sep = ""
    for i, part in enumerate(parts):
        if i % 2:
            sep = part
        else:
            out.append((sep, part))
            sep = ""
    return out


def keyed(segment: str) -> tuple[str, str] | None:
    match = _KEYED.match(segment)
    return (match.group(1), match.group(2)) if match else None


# -- features of a history --------------------------------------------------------------------


def _words(name: str) -> set[str]:
    return set(_WORD.findall(name.lower().replace("_", " ")))


def vocabulary(histories: Iterable[Sequence[str]]) -> Features:
    seen: Counter[str] = Counter()
    for history in histories:
        seen.update(set(history))
    ops = sorted(seen)
    by_name: dict[str, set[str]] = {}
    for operation in ops:
        by_name.setdefault(operation_name(operation), set()).add(operation)
    setters = sorted(name for name, found in by_name.items() if len(found) > 1)
    # words common to many operation names say nothing of what they act on (``turn``, ``set``)
    word_count: Counter[str] = Counter()
    for name in by_name:
        word_count.update(_words(name))
    common = {w for w, n in word_count.items() if n > max(3, len(by_name) // 4)}
    pairs: list[tuple[str, str]] = []
    for i, a in enumerate(ops):
        wa = _words(operation_name(a)) - common
        for b in ops[i + 1 :]:
            if operation_name(a) != operation_name(b) and wa & (_words(operation_name(b)) - common):
                pairs.append((a, b))
    return Features(ops, setters, pairs)


# -- decision trees -----------------------------------------------------------------------------

_RANK = ("is:", "last:", "since:", "xor:", "has:", "arg:", "odd:")
"""Kinds of features, preferred in this order where they explain as much: a field already
known, a setter's last value, which of two related operations came last, parity, what
happened, the call's own arguments."""


def _kind(literal: str) -> int:
    return _RANK.index(literal[: literal.index(":") + 1])


def _entropy(counts: Counter[Any]) -> float:
    total = sum(counts.values())
    return -sum((n / total) * math.log2(n / total) for n in counts.values() if n)


def _terms(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}", text.lower())}


def grow(
    rows: list[tuple[set[str], Any]], depth: int = 0, about: set[str] | None = None
) -> dict[str, Any]:
    """A decision tree (ID3 on binary features) predicting each row's value. ``about``: the
    words of the field (its name and values); a feature about the same thing (an operation
    on the SIM card for a field about the SIM card) is preferred to one that separates the
    rows nearly as well by coincidence."""
    counts = Counter(_k(v) for _, v in rows)
    values = {_k(v): v for _, v in rows}
    majority = values[max(sorted(counts), key=lambda k: counts[k])]
    if len(counts) <= 1 or depth >= MAX_DEPTH:
        return {"v": majority}
    base = _entropy(counts)
    candidates: Counter[str] = Counter()
    for features, _ in rows:
        candidates.update(features)
    best: tuple[float, str] | None = None
    for name in sorted(candidates):
        n_true = candidates[name]
        if n_true == len(rows):
            continue
        yes = Counter(_k(v) for f, v in rows if name in f)
        no = Counter(_k(v) for f, v in rows if name not in f)
        gain = base - (n_true * _entropy(yes) + (len(rows) - n_true) * _entropy(no)) / len(rows)
        if gain <= 1e-9:
            continue
        if about and _terms(name) & about:
            gain *= RELEVANT
        # on ties prefer a field already known, a setter's last value, what happened, then parity
        score = gain - 1e-6 * _kind(name)
        if best is None or score > best[0]:
            best = (score, name)
    if best is None:
        return {"v": majority}
    name = best[1]
    yes_rows = [(f, v) for f, v in rows if name in f]
    no_rows = [(f, v) for f, v in rows if name not in f]
    return {
        "f": name,
        "t": grow(yes_rows, depth + 1, about),
        "e": grow(no_rows, depth + 1, about),
    }


def _k(value: Any) -> str:
    return repr(value)


def _field_literal(literal: str) -> bool:
    """A literal about another field's current value (``is:``)."""
    return literal.startswith("is:")


def _history_literal(literal: str) -> bool:
    return not literal.startswith("is:")


def _any(literal: str) -> bool:
    return True


def fit(
    rows: list[tuple[set[str], Any]], about: set[str], tiers: Sequence[Any], exact: bool = False
) -> Any:
    """The simplest model of a field consistent with ``rows``: a decision list of disjunctions
    (:mod:`.occam`) over the literals of ``tiers`` in turn, a tree over all of them for what
    the list leaves unexplained (``exact``: ``None`` instead). Literals about what the field
    speaks of come first."""

    def rank(literal: str) -> tuple[int, int]:
        return (0 if _terms(literal) & about else 1, _kind(literal))

    allowed = [t for t in tiers]

    def fallback(rest: list[tuple[set[str], Any]]) -> dict[str, Any]:
        if exact:
            raise _Unexplained
        if allowed == [_history_literal]:
            rest = [({f for f in found if not f.startswith("is:")}, v) for found, v in rest]
        return grow(rest, 0, about)

    try:
        return occam.decision_list(rows, allowed, fallback, rank)
    except _Unexplained:
        return None


class _Unexplained(Exception):
    """The decision list does not explain every example."""


# -- learning -------------------------------------------------------------------------------------


@dataclass
class Observed:
    tool: str
    args: dict[str, Any]
    text: str
    history: list[str]
    """The operations before the call, and the call's own when it changes state."""
    episode: str


@dataclass
class Fields:
    """Fields of the answers: ``of_segment`` maps a segment to ``(field, value)``."""

    keyed: set[str] = field(default_factory=set)
    bare: dict[str, str] = field(default_factory=dict)
    """Bare segment -> the field (the name of its group)."""

    def of_segment(self, segment: str) -> tuple[str, str]:
        found = keyed(segment)
        if found is not None and found[0] in self.keyed:
            return found[0], found[1]
        return self.bare.get(segment, segment), segment


def discover(observations: Sequence[Observed]) -> Fields:
    """Keys of ``Key: value`` segments, and groups of bare segments that never occur together
    and either occur in the outputs of the same tools or follow the same segment (the slot a
    status bar fills with ``5G`` or ``2G``, a tool that prints it or not)."""
    fields = Fields()
    tools_of: dict[str, set[str]] = {}
    together: dict[str, set[str]] = {}
    after: dict[str, set[str]] = {}
    order: list[str] = []
    for obs in observations:
        segments = [seg for _, seg in split(obs.text)]
        bare = []
        previous = ""
        for seg in segments:
            found = keyed(seg)
            if found is not None:
                fields.keyed.add(found[0])
                previous = found[0]
                continue
            bare.append(seg)
            after.setdefault(seg, set()).add(previous)
            previous = seg
        for seg in bare:
            if seg not in tools_of:
                order.append(seg)
            tools_of.setdefault(seg, set()).add(obs.tool)
            together.setdefault(seg, set()).update(s for s in bare if s != seg)

    def slot(a: str, b: str) -> bool:
        return tools_of[a] == tools_of[b] or bool(after[a] & after[b] and tools_of[a] & tools_of[b])

    groups: list[list[str]] = []
    for seg in order:
        for group in groups:
            if all(slot(s, seg) for s in group) and not any(s in together[seg] for s in group):
                group.append(seg)
                break
        else:
            groups.append([seg])
    for group in groups:
        name = group[0] if len(group) == 1 else "|".join(sorted(group))[:120]
        for seg in group:
            fields.bare[seg] = name
    return fields


def _order(observations: Sequence[Observed], fields: Fields) -> list[str]:
    """Fields shown by many tools first (a status bar, which every toggle prints, says much
    of what a speed test will say), then by their mean position in the answers that show
    them (a signal before its network type before its data icons)."""
    positions: dict[str, list[int]] = {}
    tools: dict[str, set[str]] = {}
    for obs in observations:
        for i, (_, seg) in enumerate(split(obs.text)):
            name = fields.of_segment(seg)[0]
            positions.setdefault(name, []).append(i)
            tools.setdefault(name, set()).add(obs.tool)
    return sorted(
        positions,
        key=lambda n: (-len(tools[n]), sum(positions[n]) / len(positions[n]), n),
    )


def layout(texts: Sequence[str], fields: Fields) -> list[list[str]]:
    """``[[field, separator before it]]`` in the order the tool prints them."""
    before: dict[str, Counter[str]] = {}
    order: list[str] = []
    precedes: set[tuple[str, str]] = set()
    for text in texts:
        names = []
        for sep, seg in split(text):
            name = fields.of_segment(seg)[0]
            names.append(name)
            before.setdefault(name, Counter())[sep] += 1
            if name not in order:
                order.append(name)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                precedes.add((a, b))
    ranked = sorted(order, key=lambda n: (sum((m, n) in precedes for m in order), order.index(n)))
    out = []
    for name in ranked:
        seps = before[name]
        inner = Counter({s: n for s, n in seps.items() if s})
        sep = inner.most_common(1)[0][0] if inner else ""
        out.append([name, sep])
    return out


def values_of(text: str, fields: Fields) -> dict[str, str]:
    return dict(fields.of_segment(seg) for _, seg in split(text))


def columns(names: Iterable[str]) -> dict[str, str]:
    """A column name for each field (``Status Bar`` -> ``s_status_bar``), unique."""
    out: dict[str, str] = {}
    taken: set[str] = {"ops", STATE_KEY}
    for name in names:
        base = "s_" + (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:40] or "field")
        column, n = base, 2
        while column in taken:
            column, n = f"{base}_{n}", n + 1
        taken.add(column)
        out[name] = column
    return out


@dataclass
class TextState:
    """Everything learned: the model, the fields, per tool its handler."""

    model: Model
    fields: Fields
    handlers: dict[str, dict[str, Any]]

    @property
    def changes(self) -> set[str]:
        return self.model.changes


def histories(
    episodes: Iterable[Any], changes: set[str]
) -> Iterable[tuple[Any, list[tuple[Any, list[str]]]]]:
    """Per episode, each call with its history (setup first; a state-changing call's own
    operation included)."""
    for episode in episodes:
        ops = setup_ops(episode)
        calls: list[tuple[Any, list[str]]] = []
        for call in episode.tool_calls:
            if call.tool in changes and call.error is None:
                ops = [*ops, op(call.tool, call.args)]
            calls.append((call, list(ops)))
        yield episode, calls


def setup_ops(episode: Any) -> list[str]:
    """The operations an episode's setup declared (tau2: ``task.initial_state
    .initialization_actions``), in order."""
    initial = (episode.task.metadata or {}).get("initial_state")
    actions = initial.get("initialization_actions") if isinstance(initial, dict) else None
    out = []
    for action in actions or ():
        if isinstance(action, dict) and isinstance(action.get("func_name"), str):
            out.append(op(action["func_name"], action.get("arguments") or {}))
    return out


def state_changing(episodes: Sequence[Any], named_write: Any) -> set[str]:
    """Tools named like writes, and tools whose answer shows a field with another value than
    the last answer of the episode that showed it (the call changed it)."""
    out: set[str] = set()
    for episode in episodes:
        for call in episode.tool_calls:
            if named_write(call.tool):
                out.add(call.tool)
    for episode in episodes:
        last: dict[str, str] = {}
        for call in episode.tool_calls:
            if call.error is not None or not isinstance(call.result, str):
                continue
            for _, seg in split(call.result):
                found = keyed(seg)
                if found is None:
                    continue
                key, value = found
                if key in last and last[key] != value:
                    out.add(call.tool)
                last[key] = value
    return out


def learn(episodes: Sequence[Any], candidates: set[str], named_write: Any) -> TextState | None:
    """Handlers for the ``candidates`` (tools answering text that no entity explains)."""
    if not candidates:
        return None
    changes = state_changing(episodes, named_write)
    observations: list[Observed] = []
    for episode, calls in histories(episodes, changes):
        for call, history in calls:
            if call.tool in candidates and call.error is None and isinstance(call.result, str):
                args = call.args if isinstance(call.args, dict) else {}
                observations.append(Observed(call.tool, args, call.result, history, episode.id))
    if not observations:
        return None
    features = vocabulary(o.history for o in observations)
    fields = discover(observations)
    per_tool: dict[str, list[Observed]] = {}
    for obs in observations:
        per_tool.setdefault(obs.tool, []).append(obs)
    plans = {tool: layout([o.text for o in found], fields) for tool, found in per_tool.items()}
    ranked = _order(observations, fields)
    base = [features.of(o.history, o.args) for o in observations]
    shown = [values_of(o.text, fields) for o in observations]
    laid = [{name for name, _ in plans[o.tool]} for o in observations]
    about: dict[str, set[str]] = {}
    for name in ranked:
        words = _terms(name)
        for i, names in enumerate(laid):
            value = shown[i].get(name, ABSENT) if name in names else None
            if isinstance(value, str):
                words |= _terms(value)
        about[name] = words - _COMMON

    def rows_of(name: str, active: list[set[str]]) -> list[tuple[set[str], Any]]:
        return [
            (active[i], shown[i].get(name, ABSENT)) for i, names in enumerate(laid) if name in names
        ]

    # how simple is each field as a function of the history alone (a toggle, a setter: one or
    # two tests)? The simplest are the state's variables, the others are learned over them
    simple = {
        name: occam.size(fit(rows_of(name, base), about[name], (_history_literal,)))
        for name in ranked
    }
    order = sorted(ranked, key=lambda n: (simple[n], ranked.index(n)))
    active = [set(found) for found in base]
    trees: dict[str, dict[str, Any]] = {}
    for name in order:
        rows = rows_of(name, active)
        # a rule over the other fields' current values where one explains every example;
        # else the smallest of a model over the fields first and one over anything (Occam)
        tree = fit(rows, about[name], (_field_literal,), exact=True) or min(
            (fit(rows, about[name], tiers) for tiers in ((_field_literal, _any), (_any,))),
            key=occam.size,
        )
        trees[name] = tree
        # every observation learns this field's current value: the one its answer shows, or
        # else the one the model says (what a later field's rule may ask of it)
        for i, names in enumerate(laid):
            value = shown[i].get(name, ABSENT) if name in names else predict(tree, active[i])
            active[i].add(known(name, value))
    model = Model(
        features,
        trees,
        set(fields.keyed) & set(trees),
        columns(sorted(trees)),
        changes,
        order,
        factored=True,
    )
    handlers: dict[str, dict[str, Any]] = {}
    for tool, plan in plans.items():
        handlers[tool] = {"kind": "state", "layout": plan}
    return TextState(model, fields, handlers)


def changers(learned: TextState, episodes: Sequence[Any]) -> dict[str, set[str]]:
    """Per field, the state-changing tools seen between two answers that showed it with
    different values (the tools that may have changed it)."""
    out: dict[str, set[str]] = {}
    for episode in episodes:
        last: dict[str, Any] = {}
        since: dict[str, set[str]] = {}
        for call in episode.tool_calls:
            if call.tool in learned.changes and call.error is None:
                for name in since:
                    since[name].add(call.tool)
            if call.error is not None or call.tool not in learned.handlers:
                continue
            if not isinstance(call.result, str):
                continue
            values = values_of(call.result, learned.fields)
            for name, _ in learned.handlers[call.tool]["layout"]:
                value = values.get(name, ABSENT)
                if name in last and last[name] != value:
                    out.setdefault(name, set()).update(since.get(name, ()))
                last[name] = value
                since[name] = set()
    return out


def final_values(
    learned: TextState, episode: Any, changed_by: Mapping[str, set[str]]
) -> dict[str, Any]:
    """The columns of ``SessionState`` the episode changed, as it last showed them: each
    field it showed with one value and later with another, where no call that may change it
    (``changed_by``) came after the last showing (what a task built from it may expect, as
    an episode's writes are expected of the rows it changed, not of every row it saw)."""
    first: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    for call in episode.tool_calls:
        if call.error is not None:
            continue
        for name in [n for n in shown if call.tool in changed_by.get(n, ())]:
            del shown[name]  # changed since it was shown: what it became is not known
        if call.tool not in learned.handlers or not isinstance(call.result, str):
            continue
        # a field the call's layout has and its answer leaves out is absent (a data saver
        # icon not shown)
        values = values_of(call.result, learned.fields)
        for name, _ in learned.handlers[call.tool]["layout"]:
            first.setdefault(name, values.get(name, ABSENT))
            shown[name] = values.get(name, ABSENT)
    columns_ = learned.model.columns
    return {
        columns_[name]: value
        for name, value in shown.items()
        if name in columns_ and value != first[name]
    }


def accuracy(learned: TextState, episodes: Sequence[Any], tool: str) -> float:
    """The share of the tool's successful training calls whose answer the model renders."""
    handler = learned.handlers[tool]
    hits = total = 0
    for _, calls in histories(episodes, learned.changes):
        for call, history in calls:
            if call.tool != tool or call.error is not None:
                continue
            total += 1
            args = call.args if isinstance(call.args, dict) else {}
            hits += render(handler, learned.model, learned.model.features.of(history, args)) == (
                call.result
            )
    return hits / total if total else 0.0
