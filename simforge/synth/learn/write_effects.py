"""Learning write effects: the field-level difference between an entity before and after a
call, as expressions of the arguments, the old row and the records the arguments name,
generalised across every observed call of the tool.

For each changed field the learner proposes candidates from a few calls (a constant, an
argument, a sorted argument, an object built from arguments, a list with elements appended or
replaced, arithmetic over numbers in reach) and keeps the one that reproduces the most calls,
preferring the simplest on ties. ``cancel_pending_order`` thus learns ``status = "cancelled"``,
``cancel_reason = args.reason`` and "append one refund per payment"; ``modify_pending_order_items``
learns "replace the items named by ``item_ids`` with the variants named by ``new_item_ids``".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from simforge.synth.expr.language import Explainer, Expr, evaluates_to, get_path, same
from simforge.synth.runtime.effects import apply_effects

Sample = tuple[Any, dict[str, Any]]
"""An observed value and the environment it was produced in."""

MAX_SAMPLES = 60


@dataclass
class Learned:
    expr: Expr | None
    score: int
    total: int


@dataclass
class EffectModel:
    """What a write tool does to its entity: ``changes`` by field; ``score`` is how many of the
    observed calls the whole model reproduces."""

    changes: dict[str, Expr] = field(default_factory=dict)
    score: int = 0
    total: int = 0


class _Cache:
    def __init__(self) -> None:
        self._explainers: dict[int, Explainer] = {}

    def of(self, env: dict[str, Any]) -> Explainer:
        key = id(env)
        found = self._explainers.get(key)
        if found is None or found.env is not env:
            found = self._explainers[key] = Explainer(env)
        return found


def _score(expr: Expr, samples: Sequence[Sample]) -> int:
    return sum(1 for value, env in samples if evaluates_to(expr, env, value))


def _best(candidates: list[Expr], samples: Sequence[Sample]) -> Learned:
    best = Learned(None, -1, len(samples))
    seen: set[str] = set()
    for expr in candidates:
        key = repr(expr)
        if key in seen:
            continue
        seen.add(key)
        score = _score(expr, samples)
        if score > best.score:
            best = Learned(expr, score, len(samples))
            if score == len(samples):
                break
    return best


def learn_value(
    samples: Sequence[Sample],
    *,
    base: Expr | None = None,
    cache: _Cache | None = None,
    hints: list[Expr] | None = None,
    name: str | None = None,
    per_elem: bool = False,
) -> Learned:
    """The expression that reproduces the most samples (``base``: the field's old value, for
    list effects that extend or edit it). Among equally good candidates, with ``per_elem`` (a
    template applied to each element of a list) one that depends on the element wins: a list
    built from a list is built from its elements, not from what they share; then, with
    ``name`` (the field's name), the argument or element field of that name, as in an API that
    names its parameters after the fields they set."""
    samples = list(samples)[:MAX_SAMPLES]
    cache = cache or _Cache()
    if not samples:
        return Learned(None, 0, 0)
    direct: list[Expr] = []
    best = Learned(None, -1, len(samples))
    tried: set[int] = set()
    pick = 0
    for _ in range(4):  # candidates from a few calls, then from the first call not yet explained
        for i in range(pick, min(pick + 3, len(samples))):
            if i not in tried:
                tried.add(i)
                direct.extend(_direct(samples[i], cache))
        if base is not None and base not in direct:
            direct.insert(0, base)
        direct.sort(key=lambda e: (per_elem and "'elem'" not in repr(e), not _named(e, name)))
        best = _best([e for e in direct if "c" not in e], samples)
        if best.score == len(samples):
            return best
        missed = [i for i, (v, env) in enumerate(samples) if i not in tried]
        if best.expr is not None:
            expr = best.expr
            missed = [i for i in missed if not evaluates_to(expr, samples[i][1], samples[i][0])]
        if not missed:
            break
        pick = missed[0]
    options = [best]
    values = [v for v, _ in samples]
    if all(isinstance(v, dict) for v in values):
        options.append(_learn_object(samples, cache, per_elem))
    elif all(isinstance(v, list) for v in values):
        options.extend(_learn_map(samples, cache))
        if base is not None:
            options.extend(_learn_list(samples, base, cache))
        else:
            options.append(_learn_literal(samples, cache))
    elif hints and all(isinstance(v, str) for v in values):
        distinct = sorted(set(values))
        if len(distinct) == 2:
            for hint in hints:
                for a, b in (distinct, distinct[::-1]):
                    options.append(_best([{"if_pos": [hint, {"c": a}, {"c": b}]}], samples))
    options.append(_best([e for e in direct if "c" in e], samples))
    if max(o.score for o in options) < len(samples):
        options.extend(_by_flag(samples, cache, base))
    if all(isinstance(v, dict | list) for v in values):
        # a structure nothing explains, the same in every call, is a constant
        options.append(_best([{"c": values[0]}], samples))
    return max(options, key=lambda learned: learned.score)


def _by_flag(samples: Sequence[Sample], cache: _Cache, base: Expr | None) -> list[Learned]:
    """A value chosen by a boolean argument (``contract_ended``: the contract's end date set
    to a date when true, the old one kept when false): each side learned from the calls that
    took it, from paths and constants."""
    out: list[Learned] = []
    flags = [
        name
        for name, value in (samples[0][1].get("args") or {}).items()
        if isinstance(value, bool)
        and all(isinstance((env.get("args") or {}).get(name), bool) for _, env in samples)
    ]
    for name in flags[:4]:
        sides: list[Expr] = []
        for want in (True, False):
            side = [(v, env) for v, env in samples if env["args"][name] is want]
            if not side:
                break
            found: list[Expr] = [] if base is None else [base]
            for value_env in side[:3]:
                found.extend(_direct(value_env, cache))
            best = _best([e for e in found if "c" not in e] + [e for e in found if "c" in e], side)
            if best.expr is None or best.score < len(side):
                break
            sides.append(best.expr)
        if len(sides) == 2 and sides[0] != sides[1]:
            expr: Expr = {"if_true": [{"p": ["args", name]}, sides[0], sides[1]]}
            out.append(Learned(expr, _score(expr, samples), len(samples)))
    return out


def _learn_literal(samples: Sequence[Sample], cache: _Cache) -> Learned:
    """A new list of a fixed length built element by element (a new incident's first note
    ``[{at: ..., author: args.reporter_id, text: args.description}]``)."""
    lengths = {len(v) for v, _ in samples}
    if len(lengths) != 1 or not 0 < (n := lengths.pop()) <= 4:
        return Learned(None, 0, len(samples))
    parts: list[Expr] = []
    for i in range(n):
        learned = learn_value([(v[i], env) for v, env in samples], cache=cache)
        if learned.expr is None:
            return Learned(None, 0, len(samples))
        parts.append(learned.expr)
    expr: Expr = {"append": [{"c": []}, parts]}
    return Learned(expr, _score(expr, samples), len(samples))


def _direct(sample: Sample, cache: _Cache) -> list[Expr]:
    value, env = sample
    explainer = cache.of(env)
    if isinstance(value, dict | list):
        found = explainer.paths(value)
        if isinstance(value, list):
            found.extend({"sorted": p} for p in explainer.sorted_paths(value))
        return found
    return explainer.scalar(value)


def _named(expr: Expr, name: str | None) -> bool:
    path = expr.get("p")
    return name is not None and isinstance(path, list) and path[-1] == name


def _learn_map(samples: Sequence[Sample], cache: _Cache) -> list[Learned]:
    """A list built element by element from a list of the call (``flights`` from the requested
    flights, each priced by a join): the template is learned over every element of every call."""
    out: list[Learned] = []
    first, first_env = samples[0]
    sources = [
        path
        for path, value in cache.of(first_env).all
        if isinstance(value, list) and len(value) == len(first) and path[0] != "old"
    ]
    for source in sources[:8]:
        flat: list[Sample] = []
        for value, env in samples:
            try:
                items = get_path(env, source)
            except Exception:
                items = None
            if isinstance(items, list) and len(items) == len(value):
                pairs = zip(value, items, strict=True)
                flat.extend((v, {**env, "elem": item}) for v, item in pairs)
        if not flat:
            continue
        template = learn_value(flat, cache=cache, per_elem=True)
        if template.expr is not None:
            expr: Expr = {"map": [{"p": source}, template.expr]}
            out.append(Learned(expr, _score(expr, samples), len(samples)))
            if out[-1].score == len(samples):
                break
    return out


def _learn_object(samples: Sequence[Sample], cache: _Cache, per_elem: bool = False) -> Learned:
    keys: list[str] = []
    for value, _ in samples:
        keys.extend(k for k in value if k not in keys)
    parts: dict[str, Expr] = {}
    hints: list[Expr] = []
    ordered = sorted(keys, key=lambda k: not all(_is_number(v.get(k)) for v, _ in samples))
    for key in ordered:
        learned = learn_value(
            [(v.get(key), env) for v, env in samples],
            cache=cache,
            hints=hints,
            name=key,
            per_elem=per_elem,
        )
        if learned.expr is None:
            return Learned(None, 0, len(samples))
        parts[key] = learned.expr
        if "abs" in learned.expr:
            hints.append(learned.expr["abs"])
    expr = {"obj": {k: parts[k] for k in keys}}
    return Learned(expr, _score(expr, samples), len(samples))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _learn_list(samples: Sequence[Sample], base: Expr, cache: _Cache) -> list[Learned]:
    out: list[Learned] = []
    appended: list[list[Any]] = []
    for value, env in samples:
        try:
            old = get_path(env, base["p"]) if "p" in base else None
        except Exception:
            old = None
        old = old if isinstance(old, list) else []
        if len(value) < len(old) or not same(value[: len(old)], old):
            appended = []
            break
        appended.append(value[len(old) :])
    if appended and any(appended):
        out.extend(_learn_appends(samples, appended, base, cache))
    out.append(_learn_replace(samples, base, cache))
    return out


def _learn_appends(
    samples: Sequence[Sample], appended: list[list[Any]], base: Expr, cache: _Cache
) -> list[Learned]:
    out: list[Learned] = []
    first_env = samples[0][1]
    sources = [
        path
        for path, value in cache.of(first_env).all
        if isinstance(value, list) and len(value) == len(appended[0])
    ]
    for source in sources[:12]:
        flat: list[Sample] = []
        ok = True
        for (_, env), extra in zip(samples, appended, strict=True):
            try:
                items = get_path(env, source)
            except Exception:
                ok = False
                break
            if not isinstance(items, list) or len(items) != len(extra):
                ok = False
                break
            flat.extend(
                (value, {**env, "elem": item}) for value, item in zip(extra, items, strict=True)
            )
        if not ok or not flat:
            continue
        template = learn_value(flat, cache=cache, per_elem=True)
        # one element per element of a list that the element never reads is a count that
        # happened to match, not a mapping
        if template.expr is not None and "'elem'" in repr(template.expr):
            expr: Expr = {"appendmap": [base, source, template.expr]}
            out.append(Learned(expr, _score(expr, samples), len(samples)))
    counts = {len(extra) for extra in appended}
    if len(counts) == 1:
        n = counts.pop()
        parts: list[Expr] = []
        for i in range(n):
            learned = learn_value(
                [(extra[i], env) for (_, env), extra in zip(samples, appended, strict=True)],
                cache=cache,
            )
            if learned.expr is None:
                break
            parts.append(learned.expr)
        else:
            expr = {"append": [base, parts]}
            out.append(Learned(expr, _score(expr, samples), len(samples)))
    return out


def _learn_replace(samples: Sequence[Sample], base: Expr, cache: _Cache) -> Learned:
    value, env = samples[0]
    try:
        old = get_path(env, base["p"])
    except Exception:
        return Learned(None, 0, len(samples))
    if not isinstance(old, list) or len(old) != len(value):
        return Learned(None, 0, len(samples))
    changed = [
        (o, n)
        for o, n in zip(old, value, strict=True)
        if isinstance(o, dict) and isinstance(n, dict) and not same(o, n)
    ]
    if not changed:
        return Learned(None, 0, len(samples))
    args = env.get("args") or {}
    refs = env.get("ref") or {}
    keys = list(changed[0][1])
    best = Learned(None, 0, len(samples))
    for key in changed[0][0]:
        for ids_name, ids in args.items():
            if not isinstance(ids, list) or changed[0][0].get(key) not in ids:
                continue
            for with_name, records in refs.items():
                if with_name == ids_name or not isinstance(records, list):
                    continue
                expr = {
                    "replace": {
                        "list": base,
                        "key": key,
                        "ids": {"p": ["args", ids_name]},
                        "with": {"p": ["ref", with_name]},
                        "keys": keys,
                    }
                }
                score = _score(expr, samples)
                if score > best.score:
                    best = Learned(expr, score, len(samples))
    return best


def learn_effects(
    observations: Sequence[tuple[dict[str, Any], dict[str, Any]]],
    *,
    ignore: Sequence[str] = (),
) -> EffectModel:
    """An update's effect from ``(new row, env)`` pairs (``env["old"]`` is the row before)."""
    observations = list(observations)[:MAX_SAMPLES]
    fields: list[str] = []
    for new, env in observations:
        old = env.get("old") or {}
        for name in dict.fromkeys([*old, *new]):
            if name in ignore or name in fields:
                continue
            if not same(old.get(name), new.get(name)):
                fields.append(name)
    model = EffectModel(total=len(observations))
    model.changes = learn_fields(observations, fields, base=lambda name: {"p": ["old", name]})
    model.score = sum(1 for new, env in observations if reproduces(model.changes, env, new))
    return model


def learn_fields(
    observations: Sequence[tuple[dict[str, Any], dict[str, Any]]],
    fields: Sequence[str],
    *,
    base: Any = None,
    scope: str | None = "new",
) -> dict[str, Expr]:
    """Expressions for ``fields`` of the written row, in evaluation order. Two rounds: fields
    explained by the call alone, then the rest with those already computed visible as ``new``
    (a charge is the difference of the new and the old fares, the new fares being what the
    first round computed). ``base(name)``: the field's old value, for list edits; ``scope``:
    where computed fields are visible (``None``: nowhere, for a record other than the row)."""
    cache = _Cache()
    changes: dict[str, Expr] = {}
    partial: dict[str, Learned] = {}
    for name in fields:
        learned = _learn_field(observations, name, base, cache, None)
        if learned.expr is None or learned.score <= 0:
            continue
        if base is not None and learned.expr == base(name):
            continue
        if learned.score == learned.total:
            changes[name] = learned.expr
        else:
            partial[name] = learned
    # Fields explained on most calls are visible to the later ones, not only those explained on
    # every call: one call that breaks the fares (a flight kept at its old price) must not hide
    # them from the charge computed from them. Partial fields go best first, each seeing what
    # precedes it in the effect order (the order they are evaluated in).
    visible = dict(changes) if scope else {}
    for name, first in sorted(partial.items(), key=lambda kv: -kv[1].score):
        learned = _learn_field(observations, name, base, cache, visible) if visible else first
        best = learned if learned.score > first.score else first
        changes[name] = best.expr  # type: ignore[assignment]
        if scope and 2 * best.score > best.total:
            visible[name] = best.expr  # type: ignore[assignment]
    return changes


def _learn_field(
    observations: Sequence[tuple[dict[str, Any], dict[str, Any]]],
    name: str,
    base: Any,
    cache: _Cache,
    solved: dict[str, Expr] | None,
) -> Learned:
    samples: list[Sample] = []
    for new, env in observations:
        if solved is not None:
            env = {**env, "new": {k: new.get(k) for k in solved}}
        samples.append((new.get(name), env))
    return learn_value(
        samples, base=base(name) if base is not None else None, cache=cache, name=name
    )


def reproduces(
    changes: dict[str, Expr], env: dict[str, Any], new: dict[str, Any], scope: str | None = "new"
) -> bool:
    computed = apply_effects(changes, env, scope)
    return all(name in computed and same(computed[name], new.get(name)) for name in changes)


