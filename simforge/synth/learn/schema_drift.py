"""Schema drift between trace generations: renamed fields, and null versus absent.

A pack answers in the schema of the traces it was learned from. Traces recorded against an older
(or newer) version of the same systems name some fields differently (``province`` for
``state``), leave out fields that are null (``"status": null`` absent), or never had a field at
all (a user's own ``user_id``). Replaying such traces against the pack compares answers that
agree on every fact and differ in shape.

:func:`learn_drift` compares the shapes of two generations per tool, never their answers to the
same call: the pack's generation from its recorded responses (``replay.json.gz``, what
training saw), the other from the results the other traces recorded. Per path of keys (list
elements and keyed collections collapsed), it finds

- ``absent``: a key the pack's generation always shows and the other never does;
- ``absent_if_null``: a key the other generation shows only with a value, and leaves out
  when the pack's would say null;
- ``renames``: a key of one generation and a key of the other under the same parent, each
  missing from the other generation, whose values overlap (``state`` and ``province`` both
  hold ``TX``, ``CA``...), one to one.

Evidence is required on both sides (``MIN_SEEN`` parents), so that traces of the same
generation learn nothing. :meth:`Drift.adapt` rewrites an answer of the pack into the other
generation's shape; ``simforge fidelity`` applies it and reports what it learned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simforge.synth.learn.json_schemas import is_id_like

Path = tuple[str, ...]

MIN_SEEN = 3
KEYED = 50
OVERLAP = 0.3


@dataclass
class Shape:
    parents: Counter[Path] = field(default_factory=Counter)
    present: Counter[tuple[Path, str]] = field(default_factory=Counter)
    nulls: Counter[tuple[Path, str]] = field(default_factory=Counter)
    values: dict[tuple[Path, str], set[str]] = field(default_factory=dict)

    def add(self, value: Any, path: Path = (), depth: int = 0) -> None:
        if depth > 6:
            return
        if isinstance(value, list):
            for item in value[:100]:
                self.add(item, (*path, "*"), depth + 1)
            return
        if not isinstance(value, dict):
            return
        if _keyed(value):
            for item in list(value.values())[:100]:
                self.add(item, (*path, "*"), depth + 1)
            return
        self.parents[path] += 1
        for key, item in value.items():
            self.present[(path, key)] += 1
            if item is None:
                self.nulls[(path, key)] += 1
            elif isinstance(item, str | int | float | bool):
                seen = self.values.setdefault((path, key), set())
                if len(seen) < 300:
                    seen.add(repr(item))
            self.add(item, (*path, key), depth + 1)

    def keys(self, path: Path) -> set[str]:
        return {k for (p, k) in self.present if p == path}


def _keyed(value: dict[str, Any]) -> bool:
    """A collection keyed by id (a user's payment methods), not a record."""
    return bool(value) and (
        (len(value) > KEYED and all(isinstance(v, dict) for v in value.values()))
        or all(is_id_like(k) and isinstance(v, dict) for k, v in value.items())
    )


@dataclass
class Drift:
    """Per tool and path: ``renames`` (pack key -> theirs), ``absent``, ``absent_if_null``."""

    tools: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)
    """Error wording: a word of the pack's refusals -> the other generation's (see
    :func:`learn_wording`), shared by every tool of the system."""

    def __bool__(self) -> bool:
        return bool(self.tools or self.words)

    def to_json(self) -> dict[str, Any]:
        return self.tools

    def adapt(self, tool: str, value: Any) -> Any:
        rules = self.tools.get(tool)
        return _adapt(value, (), rules) if rules else value

    def adapt_error(self, text: str) -> str:
        """A refusal of the pack in the other generation's words."""
        if not self.words:
            return text
        return " ".join(self.words.get(word, word) for word in text.split(" "))


def _adapt(value: Any, path: Path, rules: dict[str, dict[str, Any]]) -> Any:
    if isinstance(value, list):
        return [_adapt(v, (*path, "*"), rules) for v in value]
    if not isinstance(value, dict):
        return value
    if _keyed(value):
        return {k: _adapt(v, (*path, "*"), rules) for k, v in value.items()}
    rule = rules.get("/".join(path), {})
    renames = rule.get("renames", {})
    absent = set(rule.get("absent", ()))
    if_null = set(rule.get("absent_if_null", ()))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in absent or (key in if_null and item is None):
            continue
        out[renames.get(key, key)] = _adapt(item, (*path, key), rules)
    return out


def learn_drift(
    ours: Mapping[str, Iterable[Any]],
    theirs: Mapping[str, Iterable[Any]],
    entities: Mapping[str, str] | None = None,
) -> Drift:
    """The drift from the pack's generation (``ours``: tool -> results) to another's;
    ``entities`` (tool -> the entity its handler returns): what one tool shows of an entity
    holds for another returning it where that one's own results are too few to tell, and do
    not contradict it (a cancel that shows ``status`` keeps it)."""
    drift = Drift()
    seen: dict[str, tuple[Shape, Shape]] = {}
    for tool, results in theirs.items():
        if tool not in ours:
            continue
        a, b = Shape(), Shape()
        for value in ours[tool]:
            a.add(value)
        for value in results:
            b.add(value)
        seen[tool] = (a, b)
        rules: dict[str, dict[str, Any]] = {}
        for where, count in b.parents.items():
            if count < MIN_SEEN or a.parents.get(where, 0) < MIN_SEEN:
                continue
            rule = _compare(a, b, where)
            if rule:
                rules["/".join(where)] = rule
        if rules:
            drift.tools[tool] = rules
    shared: dict[str, dict[str, dict[str, Any]]] = {}
    for tool, found in drift.tools.items():
        entity = (entities or {}).get(tool)
        if entity:
            for name, rule in found.items():
                shared.setdefault(entity, {}).setdefault(name, rule)
    for tool, (a, b) in seen.items():
        entity = (entities or {}).get(tool)
        for name, rule in shared.get(entity or "", {}).items():
            key: Path = tuple(name.split("/")) if name else ()
            compared = b.parents.get(key, 0) >= MIN_SEEN and a.parents.get(key, 0) >= MIN_SEEN
            if compared or name in drift.tools.get(tool, {}):
                continue  # its own results had their say
            inherited = _consistent(rule, b, key)
            if inherited:
                drift.tools.setdefault(tool, {})[name] = inherited
    return drift


def _consistent(rule: dict[str, Any], b: Shape, path: Path) -> dict[str, Any]:
    """The part of another tool's rule that this tool's few results do not contradict."""
    renames = {k: v for k, v in rule.get("renames", {}).items() if not b.present[(path, k)]}
    absent = [k for k in rule.get("absent", ()) if not b.present[(path, k)]]
    if_null = [k for k in rule.get("absent_if_null", ()) if not b.nulls[(path, k)]]
    return _rule(renames, absent, if_null)


def _compare(a: Shape, b: Shape, path: Path) -> dict[str, Any]:
    ka, kb = a.keys(path), b.keys(path)
    only_a = sorted(ka - kb)
    only_b = sorted(kb - ka)
    renames: dict[str, str] = {}
    for key in only_a:
        values = a.values.get((path, key), set())
        matches = [
            other
            for other in only_b
            if other not in renames.values() and _overlap(values, b.values.get((path, other)))
        ]
        if len(matches) == 1:
            renames[key] = matches[0]
    absent = [k for k in only_a if k not in renames and a.present[(path, k)] == a.parents[path]]
    if_null = [
        k
        for k in sorted(ka & kb)
        if a.nulls[(path, k)] and not b.nulls[(path, k)] and b.present[(path, k)] < b.parents[path]
    ]
    return _rule(renames, absent, if_null)


def _rule(renames: dict[str, str], absent: list[str], if_null: list[str]) -> dict[str, Any]:
    """A drift rule of the parts that say something (an empty part is left out)."""
    parts = (("renames", renames), ("absent", absent), ("absent_if_null", if_null))
    return {name: part for name, part in parts if part}


def _overlap(x: set[str], y: set[str] | None) -> bool:
    if not x or not y:
        return False
    return len(x & y) / min(len(x), len(y)) >= OVERLAP


def _slot(word: str) -> bool:
    """A word that carries a value (an amount, an id, a date), not the wording."""
    return any(ch.isdigit() for ch in word) or is_id_like(word.strip(".,:;!?"))


def learn_wording(ours: Iterable[str], theirs: Iterable[str]) -> dict[str, str]:
    """Words the other generation's refusals put otherwise (``payment`` for ``Payment``).

    Every error text of the pack's generation is aligned word by word with each of the other's
    of the same length that keeps its wording apart from values (numbers, ids) and at most
    one word in four. A substitution is learned when ``MIN_SEEN`` distinct texts of the other
    generation show it, no aligned text keeps the pack's word, and, as for renamed keys, neither
    word occurs in the other generation's texts (two messages of one generation differing in a
    word, ``returned`` and ``exchanged``, are not a rename). The words are shared between the
    tools of one system, since the systems of one generation word alike."""
    mine = sorted({t for t in ours if t})
    other = sorted({t for t in theirs if t})
    support: Counter[tuple[str, str]] = Counter()
    kept: set[str] = set()
    for text in mine:
        a = text.split(" ")
        for candidate in other:
            b = candidate.split(" ")
            if len(a) != len(b):
                continue
            changed = [
                (x, y) for x, y in zip(a, b, strict=True) if x != y and not (_slot(x) and _slot(y))
            ]
            if len(changed) * 4 > len(a) or any(_slot(x) for x, _ in changed):
                continue  # another message, not the same one worded otherwise
            support.update(set(changed))
            kept.update(x for x, y in zip(a, b, strict=True) if x == y)
    # a rename, as of keys: each word missing from the other generation's texts
    vocab_a = {w for t in mine for w in t.split(" ")}
    vocab_b = {w for t in other for w in t.split(" ")}
    words: dict[str, str] = {}
    for (x, y), count in support.most_common():
        if count < MIN_SEEN or x in kept or x in words or x in vocab_b or y in vocab_a:
            continue
        words[x] = y
    return words


@dataclass
class Behaviour:
    """What another generation's systems did otherwise than the pack's, beyond shape:

    - ``kept``: tool -> ``{entity: [field, ...]}``, fields the pack's write changes and the
      other generation's write left as they were (an older ``update_reservation_flights``
      that never set the reservation's ``cabin``);
    - ``constant``: tool -> its one answer, for a tool the other generation calls and the
      pack has none of (a ``think`` that answers ``""``).

    Learned by :class:`BehaviourVotes` from replays of the other generation's episodes, which
    must then not be the ones measured (``simforge fidelity`` learns each half of the tasks from
    the other half)."""

    kept: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    constant: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.kept or self.constant)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.kept:
            out["kept"] = self.kept
        if self.constant:
            out["constant"] = self.constant
        return out

    def fields_kept(self, tool: str, entity: str) -> list[str]:
        return self.kept.get(tool, {}).get(entity, [])


@dataclass
class BehaviourVotes:
    """Evidence for a :class:`Behaviour`, one replayed call at a time.

    A write's field votes ``kept`` when the other generation's answer shows the value the
    entity had before the call where the pack's write changed it, ``set`` when it shows the
    pack's new value (``changed``); a field is learned as kept on ``MIN_SEEN`` kept votes and
    no changed vote.
    A tool the pack lacks is learned as constant when ``MIN_SEEN`` recorded answers, and
    every one, are the same value (no error among them)."""

    kept: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    changed: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    missing: dict[str, list[Any]] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)

    def write(
        self,
        tool: str,
        entity: str,
        fields: Mapping[str, tuple[Any, Any]],
        answer: Any,
        recorded: Any,
    ) -> None:
        """``fields``: what the pack's write changed in one row (name -> (old, new)), shown
        in its ``answer``; ``recorded``: the other generation's answer to the same call."""
        from simforge.synth.expr.language import same

        if not isinstance(answer, Mapping) or not isinstance(recorded, Mapping):
            return
        for name, (old, new) in fields.items():
            if name not in answer or name not in recorded or not same(answer[name], new):
                continue
            if same(recorded[name], new):
                self.changed[(tool, entity, name)] += 1
            elif same(recorded[name], old):
                self.kept[(tool, entity, name)] += 1

    def unknown(self, tool: str, recorded: Any, error: str | None) -> None:
        """A call to a tool the pack has none of."""
        if error is not None:
            self.refused.add(tool)
        else:
            self.missing.setdefault(tool, []).append(recorded)

    def learn(self) -> Behaviour:
        from simforge.synth.expr.language import same

        out = Behaviour()
        for (tool, entity, name), count in sorted(self.kept.items()):
            if count >= MIN_SEEN and not self.changed[(tool, entity, name)]:
                out.kept.setdefault(tool, {}).setdefault(entity, []).append(name)
        for tool, answers in sorted(self.missing.items()):
            if (
                tool not in self.refused
                and len(answers) >= MIN_SEEN
                and all(same(a, answers[0]) for a in answers)
            ):
                out.constant[tool] = answers[0]
        return out
