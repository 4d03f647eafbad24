"""ToolSpec and the models a spec carries: latency, capacity and natural errors.

One spec is the single source of truth for every surface a tool has: the OpenAI function the agent
sees, and later the MCP tool and the OpenAPI operation the server publishes.
"""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simforge.errors import UsageError, UserError
from simforge.quantiles import quantiles


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Constant(_Frozen):
    kind: Literal["constant"] = "constant"
    seconds: float = Field(0.05, ge=0)

    def sample(self, rng: random.Random) -> float:
        return self.seconds


class Uniform(_Frozen):
    kind: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        return self

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.low, self.high)


class LogNormal(_Frozen):
    """Service latencies are right-skewed: parameterised by the median people quote, a sigma,
    and a cap so that one draw cannot stall an episode."""

    kind: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    sigma: float = Field(0.5, ge=0)
    cap: float | None = Field(None, gt=0)

    def sample(self, rng: random.Random) -> float:
        value = self.median * math.exp(self.sigma * rng.gauss(0.0, 1.0))
        return min(value, self.cap) if self.cap is not None else value


class Empirical(_Frozen):
    """Quantiles measured from real traces: ``quantiles[i]`` is the latency at probability
    ``i / (n - 1)``; a draw interpolates linearly between neighbours."""

    kind: Literal["empirical"] = "empirical"
    quantiles: list[float] = Field(min_length=2)

    @model_validator(mode="after")
    def _monotone(self) -> Empirical:
        if any(b < a for a, b in zip(self.quantiles, self.quantiles[1:], strict=False)):
            raise ValueError("quantiles must be non-decreasing")
        if self.quantiles[0] < 0:
            raise ValueError("latencies must be >= 0")
        return self

    def sample(self, rng: random.Random) -> float:
        q = self.quantiles
        x = rng.random() * (len(q) - 1)
        i = min(int(x), len(q) - 2)
        return q[i] + (q[i + 1] - q[i]) * (x - i)

    @classmethod
    def from_samples(cls, samples: list[float], points: int = 21) -> Empirical:
        """``points`` quantiles at probabilities ``0, 1/(points-1), ..., 1`` of the samples
        (:mod:`simforge.quantiles`)."""
        qs = quantiles(samples, [k / (points - 1) for k in range(points)])
        if qs is None:
            raise UsageError("no samples")
        return cls(quantiles=qs)


LatencyModel = Annotated[Constant | Uniform | LogNormal | Empirical, Field(discriminator="kind")]


class ErrorModel(_Frozen):
    """A tool's natural failure rate (as learned from logs): with probability ``rate`` a call
    answers ``status`` instead of running. Draws are recorded like any injected fault."""

    rate: float = Field(0.0, ge=0, le=1)
    status: int = Field(503, ge=400, le=599)
    message: str = "service temporarily unavailable"


class ToolSpec(_Frozen):
    """Everything about a tool except its handler."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] = Field(default_factory=dict)
    kind: Literal["read", "write"] = "read"
    system: str | None = None
    entities: tuple[str, ...] = ()
    latency: LatencyModel = Field(default_factory=Constant)
    capacity: int | None = Field(None, ge=1)
    errors: ErrorModel = Field(default_factory=ErrorModel)
    ends_conversation: bool = False
    """A successful call ends the episode, the agent's last text being its final answer (a
    transfer to a human agent)."""

    def to_openai(self, *, strict: bool = False) -> dict[str, Any]:
        """The OpenAI function-calling form (``tools=[...]`` of Chat Completions).

        ``strict``: the strict-mode form (``"strict": true``, :func:`strict_schema`), whose
        optional parameters are nullable and required, so a caller must pass the arguments it
        gets through :func:`strict_arguments` (nulls of optional parameters mean "not given").
        A schema strict mode cannot express (a map, an untyped value) is exported as it is
        with ``"strict": false``."""
        function: dict[str, Any] = {"name": self.name, "description": self.description}
        if strict:
            try:
                function["parameters"] = strict_schema(self.input_schema)
                function["strict"] = True
            except StrictSchemaError:
                function["parameters"] = self.input_schema
                function["strict"] = False
        else:
            function["parameters"] = self.input_schema
        return {"type": "function", "function": function}


class StrictSchemaError(UserError, ValueError):
    """A schema that OpenAI strict mode cannot express; names the place and the reason."""


STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "anyOf", "$ref", "$defs", "description", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
"""The JSON Schema keywords OpenAI strict mode supports; the others are left out."""
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_WORDS = {
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "default": "default {} (when null)",
}
"""Keywords strict mode has not that an agent should still know of: said in the description
(the tool checks them: a value breaking one is a 422 naming it)."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI strict-mode form of an input schema (a new schema; ``schema`` is unchanged).

    Every object is closed (``additionalProperties: false``) and lists all its properties as
    ``required``; a property that was optional becomes nullable (``anyOf [X, null]``), its
    default said in its description; ``$ref`` with siblings is inlined, ``allOf`` of one
    merged, ``oneOf`` is ``anyOf``, a list of types is ``anyOf`` of each, and keywords strict
    mode has not (``default``, ``minLength``, ``title``...) are left out or put in words.
    Raises :class:`StrictSchemaError` for what strict mode cannot express: maps
    (``additionalProperties: <schema>``), objects open to any key, untyped values, arrays
    without ``items``, a root that is not an object. The result is unchanged by the ``openai``
    package's own strict pass (``openai.lib._pydantic._ensure_strict_json_schema``)."""
    root = copy.deepcopy(schema)
    if root.get("type") != "object":
        raise StrictSchemaError("#: the parameters must be an object")
    out = _strict(root, root, "#")
    defs = root.get("$defs")
    if isinstance(defs, dict):
        out["$defs"] = {k: _strict(v, root, f"#/$defs/{k}") for k, v in defs.items()}
    return out


def _strict(node: Any, root: dict[str, Any], path: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise StrictSchemaError(f"{path}: not a schema")
    node = dict(node)
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        node.pop("$ref")
        node = {**_resolve(root, ref, path), **node}
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list):
        if len(all_of) != 1:
            raise StrictSchemaError(f"{path}: allOf of {len(all_of)} schemas")
        node = {**_strict(all_of[0], root, f"{path}/allOf/0"), **node}
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    kinds = node.get("type")
    if isinstance(kinds, list) and "enum" not in node and "const" not in node:
        node.pop("type")
        if len(kinds) == 1:
            node["type"] = kinds[0]
        else:
            node["anyOf"] = [_only(node, k) for k in kinds]
            node = {k: v for k, v in node.items() if k in ("anyOf", "description")}
    words = [text.format(json.dumps(node[k])) for k, text in _WORDS.items() if k in node]
    if "default" in node and node["default"] is None:
        words.pop()
    out: dict[str, Any] = {k: v for k, v in node.items() if k in STRICT_KEYWORDS}
    out.pop("$defs", None)
    if words:
        out["description"] = _sentence(out.get("description"), "; ".join(words))
    if "format" in out and out["format"] not in STRICT_FORMATS:
        out.pop("format")
    if "$ref" in out:
        return out
    if "anyOf" in out:
        out["anyOf"] = [_strict(o, root, f"{path}/anyOf/{i}") for i, o in enumerate(out["anyOf"])]
        return out
    kind = out.get("type")
    if kind is None and "enum" not in out and "const" not in out:
        raise StrictSchemaError(f"{path}: a value of any type")
    if kind == "array":
        if not isinstance(out.get("items"), dict) or not out["items"]:
            raise StrictSchemaError(f"{path}: an array without a schema for its items")
        out["items"] = _strict(out["items"], root, f"{path}/items")
    if kind == "object" or "properties" in out:
        extra = out.get("additionalProperties")
        props = out.get("properties") or {}
        if isinstance(extra, dict) and extra:
            raise StrictSchemaError(f"{path}: a map (additionalProperties: a schema)")
        if not props and extra is not False:
            raise StrictSchemaError(f"{path}: an object open to any key")
        required = set(out.get("required") or [])
        out["properties"] = {
            name: _strict(sub, root, f"{path}/properties/{name}")
            if name in required
            else _nullable(_strict(sub, root, f"{path}/properties/{name}"))
            for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def _only(node: dict[str, Any], kind: str) -> dict[str, Any]:
    """The part of a multi-type schema that applies to one type."""
    keep = {
        "string": ("pattern", "format", "minLength", "maxLength"),
        "integer": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        "array": ("items", "minItems", "maxItems"),
        "object": ("properties", "required", "additionalProperties"),
    }.get(kind, ())
    return {"type": kind, **{k: node[k] for k in keep if k in node}}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _accepts_null(schema):
        return schema
    description = schema.pop("description", None)
    out: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def _accepts_null(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "null" or (
        isinstance(schema.get("type"), list) and "null" in schema["type"]
    ):
        return True
    if "enum" in schema:
        return None in schema["enum"]
    return any(_accepts_null(o) for o in schema.get("anyOf", []) if isinstance(o, dict))


def _sentence(description: Any, words: str) -> str:
    text = str(description or "").rstrip()
    if not text:
        return words[:1].upper() + words[1:] + "."
    return f"{text}{'' if text.endswith('.') else '.'} {words[:1].upper()}{words[1:]}."


def _resolve(root: dict[str, Any], ref: str, path: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise StrictSchemaError(f"{path}: $ref {ref!r} outside the schema")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise StrictSchemaError(f"{path}: $ref {ref!r} does not resolve")
        target = target[part]
    if not isinstance(target, dict):
        raise StrictSchemaError(f"{path}: $ref {ref!r} is not a schema")
    return target


def strict_arguments(schema: dict[str, Any], args: Any) -> Any:
    """Arguments a strict-mode caller sent, as the tool takes them: a ``null`` given for a
    property that ``schema`` (the tool's own input schema) does not require is left out, at
    every level, as not given. (Strict mode makes every parameter required, so a model sends
    ``null`` for each one it means to leave out; ``null`` cannot then mean "set to null".)
    Anything else is returned as it is, so the tool's own validation still answers it."""
    return _unstrict(schema, args, schema)


def _unstrict(node: Any, value: Any, root: dict[str, Any]) -> Any:
    node = _deref(node, root)
    if isinstance(value, dict):
        target = _branch(node, root, "object")
        props = target.get("properties")
        if not isinstance(props, dict):
            return value
        required = set(target.get("required") or [])
        out = {}
        for key, item in value.items():
            if item is None and key in props and key not in required:
                continue
            out[key] = _unstrict(props[key], item, root) if key in props else item
        return out
    if isinstance(value, list):
        target = _branch(node, root, "array")
        items = target.get("items")
        return [_unstrict(items, v, root) for v in value] if isinstance(items, dict) else value
    return value


def _deref(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    for _ in range(32):
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = target
    return {}


def _branch(node: dict[str, Any], root: dict[str, Any], kind: str) -> dict[str, Any]:
    """``node``, or the member of its union that has type ``kind``."""
    if node.get("type") == kind or (kind == "object" and "properties" in node):
        return node
    for option in node.get("anyOf") or node.get("oneOf") or []:
        option = _deref(option, root)
        if option.get("type") == kind or (kind == "object" and "properties" in option):
            return option
    return node
