"""A tool's JSON input schema as a Python signature and a Google-style docstring.

Trainers that take tools as Python callables (TRL's ``GRPOTrainer``, through
``transformers.utils.get_json_schema``) read the schema back off the function: parameter names,
type hints, which parameters have defaults, and the ``Args:`` section of the docstring. So a
tool's method gets

- one keyword parameter per property, annotated with the type the property's schema denotes
  (``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``dict[str, ...]``, ``Literal[...]`` for
  an ``enum``, ``X | None`` for a nullable one, unions for ``anyOf``; ``$ref`` resolved);
- no default for a required property, and the schema's default (else ``None``) for the rest;
- the property's description in ``Args:``, followed by what a type hint cannot carry (bounds,
  lengths, pattern, format, default, the fields of a nested object) in parentheses;
- the tool's description as the docstring's summary.

:func:`schema_types` reduces a schema to what a signature can carry, for comparing the schema a
trainer reads back with the original. The method itself takes ``**arguments`` and hands them to
simforge unchanged: the tool, not Python, checks them, and answers bad ones with a 422 naming
the argument, as on every other path.
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from simforge.errors import UsageError

JSON_SCALARS = (str, int, float, bool, type(None))
_PRIMITIVES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
    "array": list,
    "object": dict,
}
_CONSTRAINTS = (
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems",
)
_SECTION = re.compile(r"\b(Args|Arguments|Returns|Raises|Yields):")
RETURNS = 'JSON text: the tool\'s result, or {"error": ...} when the call failed.'


def _resolve(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    if schema is True or not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and depth < 32:
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if isinstance(target, Mapping):
            merged = {**_resolve(target, defs, depth + 1), **{k: v for k, v in schema.items()
                                                             if k != "$ref"}}
            return merged
        return {k: v for k, v in schema.items() if k != "$ref"}
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        return {**_resolve(all_of[0], defs, depth + 1), **rest}
    return dict(schema)


def _union(members: list[Any]) -> Any:
    unique = list(dict.fromkeys(members))
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007 (a runtime union)


def annotation(schema: Any, defs: Mapping[str, Any] | None = None) -> Any:
    """The type hint a JSON schema denotes (``Any`` for a schema that says nothing)."""
    defs = defs or {}
    s = _resolve(schema, defs)
    if "enum" in s and isinstance(s["enum"], list) and s["enum"]:
        values = s["enum"]
        if all(type(v) in JSON_SCALARS for v in values):
            return Literal[tuple(values)]
    if "const" in s and type(s["const"]) in JSON_SCALARS:
        return Literal[(s["const"],)]
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list) and s[key]:
            return _union([annotation(m, defs) for m in s[key]])
    kind = s.get("type")
    if isinstance(kind, list) and kind:
        return _union([annotation({**s, "type": k}, defs) for k in kind])
    if kind is None:
        if "properties" in s or "additionalProperties" in s:
            kind = "object"
        elif "items" in s:
            kind = "array"
        else:
            return Any
    if kind == "array":
        items = s.get("items")
        return list if items is None else list[annotation(items, defs)]  # type: ignore[misc]
    if kind == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, Mapping) and extra and not s.get("properties"):
            return dict[str, annotation(extra, defs)]  # type: ignore[misc]
        return dict
    return _PRIMITIVES.get(kind, Any) if isinstance(kind, str) else Any


def _type_name(schema: Any, defs: Mapping[str, Any]) -> str:
    s = _resolve(schema, defs)
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            return " or ".join(_type_name(m, defs) for m in s[key])
    kind = s.get("type")
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    if kind == "array" and isinstance(s.get("items"), Mapping):
        return f"array of {_type_name(s['items'], defs)}"
    if "enum" in s:
        return "one of " + ", ".join(map(repr, s["enum"]))
    return str(kind or ("object" if "properties" in s else "any"))


def _object_fields(s: Mapping[str, Any], defs: Mapping[str, Any]) -> str | None:
    """``fields: a (string, required), b (integer)`` for an object (or array of objects)."""
    for _ in range(2):
        if s.get("type") == "array" or "items" in s:
            s = _resolve(s.get("items"), defs)
        for key in ("anyOf", "oneOf"):
            members = [_resolve(m, defs) for m in s.get(key) or []]
            objects = [m for m in members if m.get("properties")]
            if len(objects) == 1:
                s = objects[0]
    props = s.get("properties")
    if not isinstance(props, Mapping) or not props:
        return None
    required = set(s.get("required") or [])
    parts = []
    for name, sub in props.items():
        tags = [_type_name(sub, defs)] + (["required"] if name in required else [])
        desc = _resolve(sub, defs).get("description")
        parts.append(f"{name} ({', '.join(tags)})" + (f": {_one_line(desc)}" if desc else ""))
    return "fields: " + "; ".join(parts)


def _one_line(text: Any) -> str:
    return _SECTION.sub(r"\1 :", " ".join(str(text).split()))


def describe(name: str, schema: Any, defs: Mapping[str, Any] | None = None) -> str:
    """One line for ``Args:``: the description, then what no type hint carries."""
    defs = defs or {}
    s = _resolve(schema, defs)
    notes = []
    for key in _CONSTRAINTS:
        if key in s:
            notes.append(f"{key}: {s[key]}")
    fields = _object_fields(s, defs)
    if fields:
        notes.append(fields)
    if s.get("default") is not None:
        notes.append(f"default: {s['default']!r}")
    text = _one_line(s.get("description") or "")
    if notes:
        text = f"{text} ({'; '.join(notes)})" if text else f"({'; '.join(notes)})"
    return text or f"The {name}."


def _parameter(name: str, default: Any, hint: Any) -> inspect.Parameter:
    if name.isidentifier() and not keyword.iskeyword(name) and name != "self":
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=hint)
    # A JSON name Python cannot spell ("from", "order-id"): the signature still carries it, as
    # schema readers go by inspect.signature; the call takes it through **arguments.
    if name == "self" or not name:
        raise UsageError(f"a tool parameter cannot be named {name!r} here")
    param = inspect.Parameter("_", inspect.Parameter.KEYWORD_ONLY, default=default,
                              annotation=hint)
    param._name = name  # type: ignore[attr-defined]
    return param


def tool_method(
    name: str,
    description: str,
    parameters: Mapping[str, Any],
    invoke: Callable[[Any, str, dict[str, Any]], str],
    *,
    qualname: str | None = None,
) -> Callable[..., str]:
    """A function ``(self, **arguments) -> str`` named ``name``, with the signature, type hints
    and docstring ``parameters`` (a JSON object schema) denotes, that returns
    ``invoke(self, name, arguments)``. Put it on a class to make it a method."""
    defs = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    args_doc = []
    for prop, schema in props.items():
        hint = annotation(schema, defs)
        if prop in required:
            default: Any = inspect.Parameter.empty
        else:
            value = _resolve(schema, defs).get("default")
            default = value if type(value) in JSON_SCALARS else None
        params.append(_parameter(prop, default, hint))
        hints[prop] = hint
        args_doc.append(f"    {prop}: {describe(prop, schema, defs)}")
    # required parameters first would reorder the schema; keyword-only parameters may mix
    hints["return"] = str

    def method(self: Any, **arguments: Any) -> str:
        return invoke(self, name, arguments)

    summary = _SECTION.sub(r"\1 :", (description or "").strip())
    doc = summary
    if args_doc:
        doc += "\n\nArgs:\n" + "\n".join(args_doc)
    doc += f"\n\nReturns:\n    {RETURNS}"
    method.__name__ = name
    method.__qualname__ = qualname or name
    method.__doc__ = doc.lstrip("\n") if summary else doc
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = hints
    return method


def schema_types(schema: Any, defs: Mapping[str, Any] | None = None) -> Any:
    """A schema reduced to what a signature carries (types, items, enums, nullability, and for
    an object its properties and required list, one level down only at the top), in the form
    ``transformers.utils.get_json_schema`` writes: for comparing the two."""
    defs = defs if defs is not None else {
        **(schema.get("definitions") or {}), **(schema.get("$defs") or {})
    } if isinstance(schema, Mapping) else {}
    return _types(annotation(schema, defs))


def _types(hint: Any) -> dict[str, Any]:
    from typing import get_args, get_origin

    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return {}
    if origin is Literal:
        values = list(args)
        kinds = list(dict.fromkeys(_JSON_NAMES[type(v)] for v in values))
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    if origin is Union:
        members = [_types(a) for a in args if a is not type(None)]
        if len(members) == 1:
            out = members[0]
        elif all(m.keys() == {"type"} and isinstance(m["type"], str) for m in members):
            names = sorted({m["type"] for m in members})
            out = {"type": names[0] if len(names) == 1 else names}
        else:
            out = {"anyOf": members}
        if type(None) in args:
            out = {**out, "nullable": True}
        return out
    if origin is list:
        return {"type": "array", "items": _types(args[0])} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object", "additionalProperties": _types(args[1])}
    name = {v: k for k, v in _JSON_TYPES.items()}.get(hint)
    return {"type": name} if name else {}


_JSON_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}
_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool,
               "null": type(None), "array": list, "object": dict}


def parameters_types(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema's ``{"properties": {name: types}, "required": [...]}`` reduced as
    :func:`schema_types` does each property."""
    defs = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}
    props = parameters.get("properties") or {}
    out: dict[str, Any] = {
        "type": "object",
        "properties": {name: schema_types(sub, defs) for name, sub in props.items()},
    }
    required = [n for n in props if n in set(parameters.get("required") or [])]
    if required:
        out["required"] = required
    return out
