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

from simforge.synth.expr import Explainer, Expr, evaluates_to, get_path, same

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
) -> Learned:
    """The expression that reproduces the most samples (``base``: the field's old value, for
    list effects that extend or edit it)."""
    samples = list(samples)[:MAX_SAMPLES]
    cache = cache or _Cache()
    if not samples:
        return Learned(None, 0, 0)
    direct: list[Expr] = []
    for value, env in samples[:3]:
        explainer = cache.of(env)
        if isinstance(value, dict | list):
            direct.extend(explainer.paths(value))
            if isinstance(value, list):
                direct.extend({"sorted": p} for p in explainer.sorted_paths(value))
        else:
            direct.extend(explainer.scalar(value))
    if base is not None:
        direct.insert(0, base)
    best = _best([e for e in direct if "c" not in e], samples)
    if best.score == len(samples):
        return best
    options = [best]
    values = [v for v, _ in samples]
    if all(isinstance(v, dict) for v in values):
        options.append(_learn_object(samples, cache))
    elif all(isinstance(v, list) for v in values) and base is not None:
        options.extend(_learn_list(samples, base, cache))
    elif hints and all(isinstance(v, str) for v in values):
        distinct = sorted(set(values))
        if len(distinct) == 2:
            for hint in hints:
                for a, b in (distinct, distinct[::-1]):
                    options.append(_best([{"if_pos": [hint, {"c": a}, {"c": b}]}], samples))
    options.append(_best([e for e in direct if "c" in e], samples))
    return max(options, key=lambda learned: learned.score)


def _learn_object(samples: Sequence[Sample], cache: _Cache) -> Learned:
    keys: list[str] = []
    for value, _ in samples:
        keys.extend(k for k in value if k not in keys)
    parts: dict[str, Expr] = {}
    hints: list[Expr] = []
    ordered = sorted(keys, key=lambda k: not all(_is_number(v.get(k)) for v, _ in samples))
    for key in ordered:
        learned = learn_value([(v.get(key), env) for v, env in samples], cache=cache, hints=hints)
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
        template = learn_value(flat, cache=cache)
        if template.expr is not None:
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
    cache = _Cache()
    fields: list[str] = []
    for new, env in observations:
        old = env.get("old") or {}
        for name in dict.fromkeys([*old, *new]):
            if name in ignore or name in fields:
                continue
            if not same(old.get(name), new.get(name)):
                fields.append(name)
    model = EffectModel(total=len(observations))
    for name in fields:
        samples = [(new.get(name), env) for new, env in observations]
        learned = learn_value(samples, base={"p": ["old", name]}, cache=cache)
        if learned.expr is not None and learned.score > 0 and learned.expr != {"p": ["old", name]}:
            model.changes[name] = learned.expr
    model.score = sum(
        1
        for new, env in observations
        if all(evaluates_to(expr, env, new.get(name)) for name, expr in model.changes.items())
    )
    return model


def apply_effects(changes: dict[str, Expr], env: dict[str, Any]) -> dict[str, Any]:
    """The new values of the fields an effect changes (fields whose expression does not apply
    keep their value)."""
    from simforge.synth.expr import Unresolved, evaluate

    out: dict[str, Any] = {}
    for name, expr in changes.items():
        try:
            out[name] = evaluate(expr, env)
        except (Unresolved, TypeError, ValueError, OverflowError):
            continue
    return out
