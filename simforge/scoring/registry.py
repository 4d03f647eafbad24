"""The validator registry: built-ins and plugins register with ``@validator``.

A validator is ``fn(ctx, **params) -> Verdict``. Its params are checked when a scenario is
loaded, not when the first episode ends: with the pydantic model given to ``@validator(...,
params=Model)`` when there is one (the function then receives the model's fields, typed), else
against the function's signature (unknown or missing names). Domain plugins also register
named predicates: ``@invariant(name)`` (``fn(ctx) -> violations``, used by the ``invariants``
validator) and ``@policy_check(name)`` (``fn(ctx, call) -> violations``, used by
``policy_rules``), so a scenario can name a domain rule that is too rich for YAML.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError, ValidationInfo

from simforge.errors import UserError
from simforge.plugins import PLUGINS, Plugins, Table
from simforge.scoring.context import ScoringContext
from simforge.scoring.verdict import Category, Verdict
from simforge.trace.episode import ToolCall

ValidatorFn = Callable[..., Verdict]
InvariantFn = Callable[[ScoringContext], list[dict[str, Any]]]
PolicyFn = Callable[[ScoringContext, ToolCall], list[dict[str, Any]]]


class ValidatorParamsError(UserError, ValueError):
    """Settings of a validator that do not fit it; the message names the setting."""


@dataclass(frozen=True)
class ValidatorDef:
    name: str
    category: Category
    fn: ValidatorFn
    description: str
    params: type[BaseModel] | None = None
    _parsed: dict[tuple[bytes, int], dict[str, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def parse(self, params: dict[str, Any], plugins: Plugins | None = None) -> dict[str, Any]:
        """The keyword arguments for ``fn``: validated by the params model, or the signature.

        Every episode of a task is scored with the same settings, so what the model made of
        them is kept by their content (JSON values only; anything else is validated each
        time): validating a list of rules costs more than a short episode's whole scoring."""
        if self.params is not None:
            plugins = PLUGINS if plugins is None else plugins
            content = content_key(params)
            key = (content, plugins.serial) if content is not None else None
            parsed = self._parsed.get(key) if key is not None else None
            if parsed is None:
                try:
                    # names of invariants and policy checks are looked up in `plugins`
                    model = self.params.model_validate(params, context={"plugins": plugins})
                except ValidationError as exc:
                    raise ValidatorParamsError(_first_error(exc)) from None
                parsed = {name: getattr(model, name) for name in type(model).model_fields}
                if key is not None:
                    with _lock:
                        if len(self._parsed) >= _MOST_PARSED:
                            self._parsed.clear()
                        self._parsed[key] = parsed
            return dict(parsed)
        problems = _signature_problems(self.fn, params)
        if problems:
            raise ValidatorParamsError("; ".join(problems))
        return dict(params)

    def check(self, params: dict[str, Any], plugins: Plugins | None = None) -> list[str]:
        """Problems with ``params`` (empty when they fit); used at scenario load."""
        try:
            self.parse(params, plugins)
        except ValidatorParamsError as exc:
            return [str(exc)]
        return []

    def __call__(self, ctx: ScoringContext, **params: Any) -> Verdict:
        return self.fn(ctx, **self.parse(params, ctx.plugins))


def plugins_of(info: ValidationInfo) -> Plugins:
    """The registry a params model is validated against (:meth:`ValidatorDef.parse` passes it
    as pydantic's validation context), else the process's default."""
    context = info.context
    given = context.get("plugins") if isinstance(context, dict) else None
    return given if isinstance(given, Plugins) else PLUGINS


VALIDATORS: Table[ValidatorDef] = PLUGINS.validators
INVARIANTS: Table[InvariantFn] = PLUGINS.invariants
POLICY_CHECKS: Table[PolicyFn] = PLUGINS.policy_checks
"""The default registry's tables (:data:`simforge.plugins.PLUGINS`)."""


def validator(
    name: str,
    category: Category,
    *,
    params: type[BaseModel] | None = None,
    plugins: Plugins | None = None,
) -> Callable[[ValidatorFn], ValidatorFn]:
    """Register ``fn(ctx, **params) -> Verdict`` under ``name`` in ``plugins`` (default the
    process's); a second use of a name fails (two plugins silently replacing each other would
    change rewards without a trace)."""

    def register(fn: ValidatorFn) -> ValidatorFn:
        (PLUGINS if plugins is None else plugins).validators.register(
            name, ValidatorDef(name, category, fn, (fn.__doc__ or "").strip(), params))
        return fn

    return register


def invariant(name: str, *, plugins: Plugins | None = None) -> Callable[[InvariantFn], InvariantFn]:
    """Register a world predicate ``fn(ctx) -> [violation, ...]`` for ``invariants``."""

    def register(fn: InvariantFn) -> InvariantFn:
        (PLUGINS if plugins is None else plugins).invariants.register(name, fn)
        return fn

    return register


def policy_check(name: str, *, plugins: Plugins | None = None) -> Callable[[PolicyFn], PolicyFn]:
    """Register a per-call rule ``fn(ctx, call) -> [violation, ...]`` for ``policy_rules``."""

    def register(fn: PolicyFn) -> PolicyFn:
        (PLUGINS if plugins is None else plugins).policy_checks.register(name, fn)
        return fn

    return register


_lock = threading.Lock()
_MOST_PARSED = 256
"""Distinct settings kept per validator (a run has a handful; a fuzzer could make many)."""
_KEY_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def content_key(value: Any) -> bytes | None:
    """``value`` as canonical JSON (keys sorted), to remember what was made of it; ``None`` when
    it holds anything but JSON values (a date, a model, a subclass of str: two values that
    would print alike but validate apart)."""
    try:
        return orjson.dumps(value, option=_KEY_OPTIONS, default=_refuse)
    except TypeError:
        return None


@lru_cache(maxsize=1024)
def _signature(fn: ValidatorFn) -> tuple[bool, frozenset[str], tuple[str, ...]]:
    """``(takes **kwargs, setting names, required settings)`` of a validator function."""
    parameters = list(inspect.signature(fn).parameters.values())[1:]
    names = frozenset(
        p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    required = tuple(p.name for p in parameters if p.name in names and p.default is p.empty)
    return any(p.kind is p.VAR_KEYWORD for p in parameters), names, required


def _signature_problems(fn: ValidatorFn, params: dict[str, Any]) -> list[str]:
    var_keyword, names, required = _signature(fn)
    if var_keyword:
        return []
    problems = [
        f"unknown setting {k!r}; allowed: {sorted(names)}" for k in params if k not in names
    ]
    problems += [f"missing setting {name!r}" for name in required if name not in params]
    return problems


def _first_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "params"
    return f"{where}: {first['msg']}"
