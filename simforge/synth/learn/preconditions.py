"""Preconditions of writes, learned from what every successful call shares, and the texts of
the refusals, shared between the tools of one system.

Training shows a write's errors only where some call met them; a cancel of an order in the
wrong status that no recorded call tried would be accepted, and the calls after it would
cascade. What training always shows is the successes, and what they all share is a condition:

- a state field of the row (``old.status``) that holds one of a few values in every success,
  where the entity's rows take others (``{"not_in": [["old", "status"], ["pending"]]}``);
- a field of the records an id argument names, in every success (a new item's
  ``available``: ``{"any_not_in": [["ref", "new_item_ids"], "available", [true]]}``);
- an amount the call gives that equals one the write computes in every success (the payments
  add up to the fares times the passengers: ``{"ne": [given, computed]}``);
- a balance at least the amount charged (``{"lt": [ref.payment_id.amount, charged]}``);
- the record an id argument names exists and belongs to the row's owner (a payment method of
  the user whose order it is).

A condition is kept only when chance would rarely produce it: ``share ** n < ALPHA / tested``,
where ``share`` is the fraction of the entity's rows (or records) with the allowed values, ``n``
the successes and ``tested`` the fields of the tool put to the test (so that ten fields tried do
not give ten chances of a coincidence); values that every row has, or a handful of successes that
happen to agree on a common value, teach nothing. An amount must differ between two successes
and be computed without the argument it is compared with.

Each rule keeps its condition and text in ``tools.json`` (``"source": "successes"``). The text
is the tool's own recorded error when it has one for the same condition; else another tool's
error on the same field of the same entity with the same allowed values, its verb replaced by
this tool's (``Error: Non-pending order cannot be modified`` becomes ``... cannot be
cancelled``, the inflection taken from words the traces use); else a plain statement of the
condition. Not-found texts are shared the same way, the entity's name replaced
(``Error: User not found`` gives ``Error: Order not found``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from simforge.synth.entities.catalog import is_key_name
from simforge.synth.expr.language import Explainer, Unresolved, evaluate, same

Row = dict[str, Any]

ALPHA = 0.01
MIN_CALLS = 3
MAX_ALLOWED = 3
STATE_VALUES = 12
"""A field with more distinct values than this among the entity's rows is no state field."""


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, str | bool | int) and not isinstance(value, float))


def _key(value: Any) -> str:
    return repr(value) if isinstance(value, bool) or value is None else f"{type(value)}:{value}"


class Distributions:
    """How often each value of a field occurs among an entity's rows (or sub-records)."""

    def __init__(self, base: Mapping[str, Mapping[str, Row]]) -> None:
        self.base = base
        self._cache: dict[tuple[str, str | None], dict[str, Counter[str]]] = {}

    def of(self, entity: str, sub: str | None = None) -> dict[str, Counter[str]]:
        found = self._cache.get((entity, sub))
        if found is not None:
            return found
        counts: dict[str, Counter[str]] = {}
        for row in list(self.base.get(entity, {}).values())[:5000]:
            records: Iterable[Any] = [row]
            if sub is not None:
                inner = row.get(sub)
                records = inner.values() if isinstance(inner, dict) else []
            for record in records:
                if not isinstance(record, dict):
                    continue
                for name, value in record.items():
                    if _scalar(value):
                        counts.setdefault(name, Counter())[_key(value)] += 1
        self._cache[(entity, sub)] = counts
        return counts


def _allowed(values: list[Any], counts: Counter[str] | None) -> tuple[list[Any], float] | None:
    """The values every success showed and the chance of that by luck (``share ** n``), for a
    state field whose rows take other values too; ``None`` for any other field."""
    if not counts or len(counts) > STATE_VALUES or len(values) < MIN_CALLS:
        return None
    if 2 * len(counts) > sum(counts.values()):
        return None  # values that hardly repeat across rows (a creation time) are no state
    allowed: list[Any] = []
    for value in values:
        if not _scalar(value):
            return None
        if not any(same(value, a) and type(value) is type(a) for a in allowed):
            allowed.append(value)
    if len(allowed) > MAX_ALLOWED:
        return None
    total = sum(counts.values())
    share = sum(counts.get(_key(v), 0) for v in allowed) / total
    if share >= 1.0:
        return None
    return allowed, share ** len(values)


def learn_preconditions(
    desc: Mapping[str, Any],
    good: Sequence[Any],
    envs: Sequence[dict[str, Any]],
    dists: Distributions,
) -> list[dict[str, Any]]:
    """Rules ``{"when", "message": None, "status", "source"}`` of an update or create handler
    (``envs``: each success's environment with ``new``, the row it would write). Messages are
    filled in by :func:`share_texts` once every tool is learned."""
    if desc.get("kind") not in ("update", "create") or len(good) < 2:
        return []
    tests: list[tuple[dict[str, Any], float]] = []
    entity = desc.get("entity")
    if desc["kind"] == "update" and entity:
        olds = [e["old"] for e in envs if isinstance(e.get("old"), dict)]
        counts = dists.of(entity)
        for name in olds[0] if len(olds) == len(envs) and olds else ():
            if is_key_name(name) or not all(name in o for o in olds):
                continue
            found = _allowed([o[name] for o in olds], counts.get(name))
            if found is not None:
                tests.append(({"not_in": [["old", name], found[0]]}, found[1]))
    for arg, spec in (desc.get("refs") or {}).items():
        records: list[Row] = []
        listed = False
        for env in envs:
            ref = (env.get("ref") or {}).get(arg)
            if isinstance(ref, list):
                listed = True
                records.extend(r for r in ref if isinstance(r, dict))
            elif isinstance(ref, dict):
                records.append(ref)
        if not records or (desc["kind"] == "update" and arg == desc.get("key")):
            continue
        if _own_elements(arg, envs):
            continue  # ids of the row's own elements: their state is the row's, not the catalog's
        counts = dists.of(spec["entity"], spec.get("sub"))
        for name in records[0]:
            if is_key_name(name) or not all(name in r for r in records):
                continue
            found = _allowed([r[name] for r in records], counts.get(name))
            if found is None:
                continue
            when = (
                {"any_not_in": [["ref", arg], name, found[0]]}
                if listed
                else {"not_in": [["ref", arg, name], found[0]]}
            )
            tests.append((when, found[1]))
    bound = ALPHA / max(1, len(tests))
    rules = [_rule(when) for when, chance in tests if chance < bound]
    rules.extend(_amounts(desc, envs))
    rules.extend(_balances(desc, envs))
    rules.extend(_on_record(desc, envs))
    return rules


def _own_elements(arg: str, envs: Sequence[dict[str, Any]]) -> bool:
    """Whether the argument names elements the row already holds (the items of an order being
    returned), in every success: their catalog records say nothing about the call."""
    for env in envs:
        value = (env.get("args") or {}).get(arg)
        old = env.get("old")
        wanted = value if isinstance(value, list) else [value]
        if not isinstance(old, dict) or not wanted:
            return False
        held = {v for v in _leaves(old) if isinstance(v, str)}
        if not all(isinstance(w, str) and w in held for w in wanted):
            return False
    return True


def _leaves(value: Any, depth: int = 4) -> Iterable[Any]:
    if isinstance(value, dict) and depth:
        for item in value.values():
            yield from _leaves(item, depth - 1)
    elif isinstance(value, list) and depth:
        for item in value:
            yield from _leaves(item, depth - 1)
    else:
        yield value


def _rule(when: dict[str, Any], status: int = 409) -> dict[str, Any]:
    return {"when": when, "message": None, "status": status, "source": "successes"}


def _amounts(desc: Mapping[str, Any], envs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A total the call gives (the sum of a list argument's amounts) that equals, in every
    success, a value the write computes without it (the fares it stores times the
    passengers). Two different totals computed exactly are already no coincidence."""
    if len(envs) < 2:
        return []
    first = envs[0]
    args = first.get("args") or {}
    given: list[dict[str, Any]] = []
    for name, value in args.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for key, item in value[0].items():
                if isinstance(item, int | float) and not isinstance(item, bool):
                    given.append({"sum": [["args", name], key]})
    out: list[dict[str, Any]] = []
    for expr in given:
        values = [_value(expr, env) for env in envs]
        if any(v is None for v in values) or len({round(v, 6) for v in values if v}) < 2:
            continue
        source = repr(expr["sum"][0])
        name = expr["sum"][0][1]
        effects = {**(desc.get("effects") or {}), **(desc.get("fields") or {})}
        # fields of the new row the handler fills from this argument: equal by construction
        copied = [f for f, e in effects.items() if f"'args', '{name}'" in repr(e)]
        proposed = [
            e
            for e in Explainer(first).scalar(values[0])
            if "c" not in e
            and source not in repr(e)
            and "'new'" in repr(e)
            and not any(f"'new', '{f}'" in repr(e) for f in copied)
        ]
        for other in proposed[:40]:
            if all(
                (v := _value(other, env)) is not None and same(v, want)
                for env, want in zip(envs, values, strict=True)
            ):
                out.append(
                    {
                        **_rule({"ne": [expr, other]}, 422),
                        "format": [expr, other],
                    }
                )
                break
    return out


def _balances(desc: Mapping[str, Any], envs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A balance at least the amount charged: a number of the record an id argument names (a
    gift card's ``amount``) that was never below what the write appended (the payment it
    made) in every success where the record has one, two successes at least. A record without
    the number (a credit card) is not held to it; a refund (a negative amount) never is."""
    charged: list[tuple[str, str]] = []
    for name, expr in (desc.get("effects") or {}).items():
        if "append" in expr or "appendmap" in expr:
            for env in envs:
                items = (env.get("new") or {}).get(name)
                if isinstance(items, list) and items and isinstance(items[-1], dict):
                    for key, value in items[-1].items():
                        if isinstance(value, int | float) and not isinstance(value, bool):
                            charged.append((name, key))
                    break
    out: list[dict[str, Any]] = []
    for arg in desc.get("refs") or {}:
        for name, key in dict.fromkeys(charged):
            paid: dict[str, Any] = {"p": ["new", name, -1, key]}
            for field_ in _numbers(envs, arg):
                have: dict[str, Any] = {"p": ["ref", arg, field_]}
                pairs = [
                    (a, b)
                    for env in envs
                    if (a := _value(have, env)) is not None and (b := _value(paid, env)) is not None
                ]
                if (
                    len(pairs) >= 2
                    and all(a >= b for a, b in pairs)
                    and any(b > 0 for _, b in pairs)
                ):
                    out.append({**_rule({"lt": [have, paid]}, 422), "format": [paid, have]})
    return out


def _on_record(desc: Mapping[str, Any], envs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The record an id argument names exists and belongs to the row's owner: every success
    named one (``{"missing_ref": arg}``), and an id field it shares with the row held the
    same id in every success (a payment method of the user whose order it is:
    ``{"ne": [ref.payment_method_id.user_id, old.user_id]}``)."""
    if desc.get("kind") != "update" or len(envs) < MIN_CALLS:
        return []
    out: list[dict[str, Any]] = []
    for arg in desc.get("refs") or {}:
        if arg == desc.get("key"):
            continue
        records = [(env.get("ref") or {}).get(arg) for env in envs]
        if not all(isinstance(r, dict) for r in records):
            continue
        out.append(_rule({"missing_ref": arg}, 404))
        first = records[0]
        old = envs[0].get("old") or {}
        for name, value in first.items() if isinstance(first, dict) else ():
            if not (is_key_name(name) and isinstance(value, str) and name in old):
                continue
            if name == desc.get("key") or not all(
                isinstance(r, dict) and r.get(name) == (env.get("old") or {}).get(name)
                for r, env in zip(records, envs, strict=True)
            ):
                continue
            if len({(env.get("old") or {}).get(name) for env in envs}) < 2:
                continue  # one owner in every call: nothing says it must be the row's
            out.append(_rule({"ne": [{"p": ["ref", arg, name]}, {"p": ["old", name]}]}))
    return out


def _numbers(envs: Sequence[dict[str, Any]], arg: str) -> list[str]:
    names: list[str] = []
    for env in envs:
        record = (env.get("ref") or {}).get(arg)
        if isinstance(record, dict):
            for key, value in record.items():
                if (
                    isinstance(value, int | float)
                    and not isinstance(value, bool)
                    and key not in names
                ):
                    names.append(key)
    return names


def _value(expr: dict[str, Any], env: dict[str, Any]) -> float | None:
    try:
        value = evaluate(expr, env)
    except (Unresolved, TypeError, ValueError, KeyError, ZeroDivisionError):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def merge(learned: list[dict[str, Any]], inferred: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded-error rules, then each inferred precondition no recorded rule already
    states (a recorded error on the same field keeps its own, observed, allowed values)."""
    covered = {_subject(r["when"]) for r in learned}
    out = list(learned)
    for rule in inferred:
        if _subject(rule["when"]) not in covered:
            out.append(rule)
            covered.add(_subject(rule["when"]))
    return out


def _subject(when: dict[str, Any]) -> str:
    op, arg = next(iter(when.items()))
    if op == "not_in":
        return repr(arg[0])
    if op == "any_not_in":
        return repr([*arg[0], arg[1]])
    if op in ("ne", "lt", "gt"):
        return f"{op}:" + repr(arg[0])
    return op + repr(arg)


# -- texts ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


def share_texts(handlers: list[dict[str, Any]], vocabulary: Iterable[str] = ()) -> None:
    """Fill the message of every inferred rule (see the module); ``vocabulary``: words the
    traces use, for inflecting another tool's verb."""
    words = {w.lower() for w in vocabulary}
    recorded: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (desc, rule)
        for desc in handlers
        for rule in desc.get("errors") or []
        if rule.get("source") != "successes" and rule.get("message")
    ]
    for desc in handlers:
        for rule in desc.get("errors") or []:
            if rule.get("source") != "successes" or rule.get("message"):
                continue
            text = _borrow(desc, rule, recorded, words)
            if text is None:
                text, fmt = _plain(desc, rule)
                if fmt:
                    rule["format"] = fmt
                rule["text_from"] = "condition"
            else:
                rule["text_from"] = "borrowed"
            rule["message"] = text


def _borrow(
    desc: Mapping[str, Any],
    rule: Mapping[str, Any],
    recorded: list[tuple[dict[str, Any], dict[str, Any]]],
    words: set[str],
) -> str | None:
    when = rule["when"]
    op, arg = next(iter(when.items()))
    if op not in ("not_in", "any_not_in"):
        return None
    for other, theirs in recorded:
        if other is desc or other.get("entity") != desc.get("entity"):
            continue
        their_op, their_arg = next(iter(theirs["when"].items()))
        if their_op != op or not _same_condition(op, arg, their_arg):
            continue
        text = _reverb(str(theirs["message"]), other.get("tool", ""), desc.get("tool", ""), words)
        if text is not None:
            return text
    return None


def _same_condition(op: str, mine: list[Any], theirs: list[Any]) -> bool:
    if op == "not_in":
        return bool(mine[0][-1] == theirs[0][-1] and _as_set(mine[1]) == _as_set(theirs[1]))
    return bool(mine[1] == theirs[1] and _as_set(mine[2]) == _as_set(theirs[2]))


def _as_set(values: list[Any]) -> set[str]:
    return {_key(v) for v in values}


def _verb(tool: str) -> str:
    return tool.split("_", 1)[0].lower()


def _reverb(text: str, source_tool: str, target_tool: str, words: set[str]) -> str | None:
    """``text`` with the source tool's verb (in whatever form the text has it) replaced by the
    target tool's verb in the same form, as the traces spell it."""
    source, target = _verb(source_tool), _verb(target_tool)
    if source == target:
        return text
    for match in _WORD.finditer(text):
        word = match.group(0)
        lowered = word.lower()
        stem = _common(lowered, source)
        if len(stem) < 4 or len(stem) < len(source) - 1:
            continue
        ending = lowered[len(stem) :]
        form = _inflect(target, source, ending, words)
        if form is None:
            return None
        if word[:1].isupper():
            form = form[:1].upper() + form[1:]
        return text[: match.start()] + form + text[match.end() :]
    return None


def _common(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _inflect(verb: str, model: str, ending: str, words: set[str]) -> str | None:
    """``verb`` with the ending ``model`` has in the text (``modif|ied`` -> ``cancel|led``):
    the word of the traces that starts with the verb and ends like the model's form."""
    if not ending:
        return verb
    suffix = ending[-2:] if len(ending) >= 2 else ending
    found = sorted(
        w
        for w in words
        if w.startswith(verb[:-1] if verb.endswith(("e", "y")) else verb)
        and w.endswith(suffix)
        and len(w) <= len(verb) + len(ending) + 1
    )
    if found:
        return min(found, key=len)
    if verb.endswith("e") and ending.startswith("e"):
        return verb + ending[1:]
    if verb.endswith("y") and ending.startswith("ie"):
        return verb[:-1] + ending
    return verb + (ending[1:] if ending.startswith("ie") else ending)


def _plain(desc: Mapping[str, Any], rule: Mapping[str, Any]) -> tuple[str, list[Any] | None]:
    op, arg = next(iter(rule["when"].items()))
    entity = str(desc.get("entity") or "record")
    if op == "not_in":
        path, allowed = arg
        shown = " or ".join(str(v) for v in allowed)
        return f"Error: {entity} {path[-1]} must be {shown}", None
    if op == "any_not_in":
        _, name, allowed = arg
        shown = " or ".join(str(v) for v in allowed)
        return f"Error: every {arg[0][-1]} must have {name} {shown}", None
    if op == "lt":
        return "Error: the amount {0} is more than the balance {1}", list(rule["format"])
    if op == "missing_ref":
        return f"Error: {arg} not found", None
    if op == "ne" and "format" not in rule:
        return f"Error: {arg[0]['p'][1]} does not belong to this {entity.lower()}", None
    return "Error: the amounts do not add up, {0} given, {1} expected", list(rule["format"])


def share_not_found_texts(handlers: list[dict[str, Any]]) -> None:
    """A not-found refusal of an entity that no call of any tool showed, in the words of
    another entity's: the name replaced (``User`` -> ``Order``, in the same case)."""
    forms: list[tuple[str, dict[str, Any]]] = []
    for desc in handlers:
        for rule in desc.get("errors") or []:
            op = next(iter(rule["when"]))
            entity = desc.get("entity")
            if (
                op in ("missing", "no_match")
                and entity
                and not rule.get("format")
                and _mentions(str(rule["message"]), entity)
            ):
                forms.append((entity, rule))
    if not forms:
        return
    for desc in handlers:
        entity = desc.get("entity")
        op = {"find": "no_match", "get": "missing", "update": "missing"}.get(desc["kind"])
        if not entity or op is None:
            continue
        rules = desc.setdefault("errors", [])
        if any(next(iter(r["when"])) in ("missing", "no_match") for r in rules):
            continue
        source, rule = forms[0]
        text = _rename(str(rule["message"]), source, entity)
        rules.insert(
            0,
            {
                "when": {op: True if op == "no_match" else "target"},
                "message": text,
                "status": 404,
                "source": "shared",
                "text_from": f"borrowed:{source}",
            },
        )


def _words(entity: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", entity)]


def _mentions(text: str, entity: str) -> bool:
    return " ".join(_words(entity)) in text.lower()


def _rename(text: str, source: str, target: str) -> str:
    old = " ".join(_words(source))
    new = " ".join(_words(target))
    start = text.lower().index(old)
    found = text[start : start + len(old)]
    if found[:1].isupper():
        new = new[:1].upper() + new[1:]
    if found.isupper():
        new = new.upper()
    return text[:start] + new + text[start + len(old) :]
