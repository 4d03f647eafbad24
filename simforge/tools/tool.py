"""A tool: a :class:`ToolSpec` plus the handler that computes its result, and ``@tool``.

The function's signature is the schema (its typed parameters become a pydantic model with
``extra="forbid"``), its docstring is the description, its return annotation the output schema.
Unlike tau2-bench, the schema is built once from the real annotations, so no parameter type is
lost on the way to the OpenAI, MCP or OpenAPI form.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast, get_type_hints

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from simforge.derived import derived_later, name_of
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolArgumentError, ToolDefinitionError
from simforge.tools.spec import Constant, ErrorModel, ToolSpec
from simforge.world.frozen import FrozenDict, FrozenList

Handler = Callable[[ToolContext, BaseModel], Any]

_ARGS_CONFIG = ConfigDict(extra="forbid")


class Tool:
    """A spec and a handler. ``invoke`` is the hot path: validate, run, copy out the result.

    ``input_model`` is the argument model, or a function without arguments that builds it: then
    it is built on the tool's first use (a pack declares many tools a scenario never calls, and
    ``create_model`` costs about a millisecond each)."""

    __slots__ = ("__dict__", "_handler", "_input_model", "_schemas", "_spec", "_validate")

    def __init__(
        self,
        spec: ToolSpec,
        input_model: type[BaseModel] | Callable[[], type[BaseModel]],
        handler: Handler,
        schemas: Callable[[], Sequence[dict[str, Any]]] | None = None,
    ) -> None:
        self._spec = spec
        self._schemas = schemas
        self._handler = handler
        self._validate: Callable[[Any], Any]
        self._input_model: type[BaseModel] | Callable[[], type[BaseModel]]
        if isinstance(input_model, type) and issubclass(input_model, BaseModel):
            self._validate = input_model.__pydantic_validator__.validate_python
            self._input_model = input_model
        else:
            self._validate = self._first_validate
            self._input_model = functools.cache(cast(Callable[[], type[BaseModel]], input_model))

    @property
    def input_model(self) -> type[BaseModel]:
        model = self._input_model
        if not isinstance(model, type):
            model = model()
            self._input_model = model
            self._validate = model.__pydantic_validator__.validate_python
        return model

    def _first_validate(self, args: Any) -> BaseModel:
        return self.input_model.__pydantic_validator__.validate_python(args)

    @functools.cached_property
    def spec(self) -> ToolSpec:
        """The tool's spec. With ``schemas`` given, its input and output JSON schemas are made
        by calling it on this first access (a pack declares many tools a scenario never offers,
        and the argument model and its JSON schema cost about 2 ms a tool, half of a cold
        ``make``); a schema that cannot be made raises :class:`ToolDefinitionError` here.
        Remembered in the instance's ``__dict__``: later reads, on the call path, cost what an
        attribute does."""
        if self._schemas is not None:
            self._complete()
        return self._spec

    def _complete(self) -> None:
        schemas, name = self._schemas, self._spec.name
        assert schemas is not None
        try:
            input_schema, output_schema = schemas()
        except ToolDefinitionError:
            raise
        except Exception as exc:
            raise ToolDefinitionError(
                f"tool {name!r}: no JSON schema can be made for its arguments or result: {exc}"
            ) from exc
        self._spec = self._spec.model_copy(
            update={"input_schema": input_schema, "output_schema": output_schema})
        self._schemas = None

    @property
    def outline(self) -> ToolSpec:
        """The spec without making its schemas: every field but ``input_schema`` and
        ``output_schema`` (empty until :attr:`spec` is first read), for what reads the name,
        kind, system, entities, latency or capacity of every tool of a pack."""
        spec: ToolSpec = self.__dict__.get("spec", self._spec)  # the spec, once it is read
        return spec

    @property
    def name(self) -> str:
        return self._spec.name

    def parse_args(self, args: Any) -> BaseModel:
        """The validated arguments, or a 422 naming each bad argument, its type and the value."""
        if not isinstance(args, dict):
            raise ToolArgumentError(
                self.spec.name,
                [{"argument": "(arguments)", "expected": "a JSON object", "received": args}],
            )
        try:
            return self._validate(args)
        except ValidationError as exc:
            raise ToolArgumentError(self.spec.name, _details(exc, self.spec.input_schema)) from None

    def invoke(self, ctx: ToolContext, args: Any) -> Any:
        return to_jsonable(self._handler(ctx, self.parse_args(args)))

    def with_spec(self, **changes: Any) -> Tool:
        """The same handler under a changed spec (a pack's latency or capacity override)."""
        # the model or its builder, shared: the copies build one model between them
        # the schemas' maker shared too: made once, for whichever copy is read first
        made = "spec" in self.__dict__
        return Tool(self.outline.model_copy(update=changes), self._input_model, self._handler,
                    None if made else self._schemas)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """A fresh JSON-ready copy, so a result never aliases a row of the world. Scalars (most
    fields of most rows) are taken as they are without a call: this runs on every result."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is FrozenDict:
        # a C-level copy, then only the nested values replaced by their copies (in place: the
        # key order stays the row's)
        out = value.copy()
        for k, v in value.items():
            if type(v) not in _SCALARS:
                out[k] = to_jsonable(v)
        return out
    if kind is list or kind is tuple or kind is FrozenList:
        return [v if type(v) in _SCALARS else to_jsonable(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without pydantic's ``title`` noise (agents read every token of it)."""
    if isinstance(schema, dict):
        return {
            k: clean_schema(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [clean_schema(v) for v in schema]
    return schema


def tool(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Declare a tool from a typed function ``fn(ctx: ToolContext, arg: T, ...) -> R``; used bare
    (``@tool``) or with the options of :func:`tool_from_function` (``@tool(kind="write")``)."""
    if fn is None:
        return functools.partial(tool_from_function, **options)
    return tool_from_function(fn, **options)


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    kind: str = "read",
    system: str | None = None,
    entities: Iterable[str] = (),
    latency: Any = None,
    capacity: int | None = None,
    errors: ErrorModel | None = None,
) -> Tool:
    tool_name = name or fn.__name__
    description = inspect.getdoc(fn)
    if not description:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: a docstring is required (it is the description)"
        )
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot resolve annotations: {exc}") from exc
    params = list(inspect.signature(fn).parameters.values())
    if not params or params[0].name != "ctx":
        raise ToolDefinitionError(f"tool {tool_name!r}: the first parameter must be `ctx`")
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: *args and **kwargs are not allowed")
        if param.name not in hints:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {param.name!r} needs a type")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    input_model = functools.cache(
        functools.partial(create_model, f"{tool_name}_args", __config__=_ARGS_CONFIG, **fields)
    )  # built on first use (Tool), or when its schema is made (the spec's first read)
    returns = hints.get("return", Any)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        # the model forbids extra fields: its __dict__ is exactly the parameters
        return fn(ctx, **args.__dict__)

    def schemas() -> list[dict[str, Any]]:
        output = _return_schema(returns) if returns is not Any else {}
        return [clean_schema(input_model().model_json_schema()), output]

    spec = ToolSpec(
        name=tool_name,
        description=description,
        input_schema={},  # made on the spec's first read (Tool.spec)
        kind=kind,
        system=system,
        entities=tuple(entities),
        latency=latency or Constant(),
        capacity=capacity,
        errors=errors or ErrorModel(),
    )
    return Tool(spec, input_model, handler,
                derived_later(f"tool {name_of(fn)} {tool_name}", fn, schemas))


def _return_schema(returns: Any) -> dict[str, Any]:
    """The JSON schema of a return type, a fresh copy each call. Made once a process per type:
    the tools of a pack return a few types (all 80 of Acme's written tools ``dict[str, Any]``),
    and a ``TypeAdapter`` and its schema cost about a millisecond each on a cold ``make``."""
    try:
        made = _return_schema_json(returns)
    except TypeError:  # an unhashable annotation: made for this tool alone
        return clean_schema(TypeAdapter(returns).json_schema())
    return cast(dict[str, Any], orjson.loads(made))


@functools.lru_cache(maxsize=256)
def _return_schema_json(returns: Any) -> bytes:
    return orjson.dumps(clean_schema(TypeAdapter(returns).json_schema()))


_EXPECTED = {"missing": "a value (the argument is required)"}


def _details(exc: ValidationError, schema: dict[str, Any]) -> list[dict[str, Any]]:
    """One detail per bad argument, nested ones by their path (``items.0.quantity``): what the
    schema expects there, the problem and the value received. A union's failure (one error
    per member in pydantic) is one detail that names every member."""
    details = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False):
        path, node, parent = schema_at(schema, err["loc"])
        argument = ".".join(path) or "(arguments)"
        if err["type"] == "extra_forbidden":
            names = sorted(_properties(parent))
            where = "the tool's arguments" if len(path) == 1 else "the fields"
            expected = f"one of {where} {names}"
        else:
            expected = _EXPECTED.get(err["type"]) or describe(node, schema)
        if (argument, expected) in seen:
            continue
        seen.add((argument, expected))
        detail: dict[str, Any] = {"argument": argument, "expected": expected, "problem": err["msg"]}
        if err["type"] != "missing":
            detail["received"] = err.get("input")
        details.append(detail)
    return details


def _resolve(root: dict[str, Any], node: Any) -> dict[str, Any]:
    for _ in range(32):
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/")):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _branches(node: dict[str, Any]) -> list[Any]:
    if "anyOf" in node:
        return list(node["anyOf"])
    if "oneOf" in node:
        return list(node["oneOf"])
    kinds = node.get("type")
    if isinstance(kinds, list):
        return [{**node, "type": k} for k in kinds]
    return []


def _properties(node: dict[str, Any]) -> dict[str, Any]:
    props = node.get("properties")
    return props if isinstance(props, dict) else {}


_TAG_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean"}
_TAG_HEADS = frozenset(
    {*_TAG_TYPES, "none", "list", "dict", "tuple", "set", "literal", "constrained-str", "any"}
)
RECORD_SUFFIX = "__record"
"""Ends the name of a nested object type a tool declares dynamically (so its union tag is known
for one)."""


def _is_tag(part: str, root: dict[str, Any]) -> bool:
    """Whether a location part is pydantic's name of a union member, not an argument's name."""
    head = part.split("[", 1)[0]
    return (
        head in _TAG_HEADS
        or head.startswith("function-")
        or part.endswith(RECORD_SUFFIX)
        or part in (root.get("$defs") or {})
    )


def _by_tag(root: dict[str, Any], branches: list[Any], tag: str) -> dict[str, Any] | None:
    """The member of a union that a pydantic error's location tag names (``int``,
    ``list[str]``, ``literal['a','b']``, a nested model's name...)."""
    head = tag.split("[", 1)[0]
    want = _TAG_TYPES.get(head) or {"list": "array", "dict": "object", "tuple": "array"}.get(head)
    if head == "constrained-str":
        want = "string"
    for branch in (_resolve(root, b) for b in branches):
        if head == "literal" and "enum" in branch:
            return branch
        if want is not None and branch.get("type") == want and "enum" not in branch:
            return branch
        if want is None and head != "literal" and branch.get("type") == "object":
            return branch
    return None


def schema_at(
    schema: dict[str, Any], loc: tuple[Any, ...] | list[Any]
) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Where a validation error's location ``loc`` points in ``schema``: the argument path
    (union members' tags left out), the schema there, and the object schema holding it."""
    node = _resolve(schema, schema)
    parent = node
    path: list[str] = []
    parts = list(loc)
    i = 0
    while i < len(parts):
        part = parts[i]
        branches = _branches(node)
        named = isinstance(part, str) and (
            part in _properties(node)
            or any(part in _properties(_resolve(schema, b)) for b in branches)
        )
        if isinstance(part, str) and not named and _is_tag(part, schema):
            # a union member's tag: the error is in that member, or is the union's own
            chosen = _by_tag(schema, branches, part) if branches else None
            i += 1
            if i < len(parts) and chosen is not None:
                node = chosen
            continue
        if branches:
            chosen = next(
                (
                    b
                    for b in (_resolve(schema, b) for b in branches)
                    if (isinstance(part, int) and b.get("type") == "array")
                    or (
                        isinstance(part, str)
                        and (
                            part in _properties(b)
                            or isinstance(b.get("additionalProperties"), dict)
                        )
                    )
                ),
                None,
            )
            if chosen is None:
                path.extend(str(p) for p in parts[i:])
                return path, {}, parent
            node = chosen
        path.append(str(part))
        parent = node
        if isinstance(part, int) and "items" in node:
            node = _resolve(schema, node["items"])
        elif isinstance(part, str) and part in _properties(node):
            node = _resolve(schema, node["properties"][part])
        elif isinstance(node.get("additionalProperties"), dict):
            node = _resolve(schema, node["additionalProperties"])
        else:
            node = {}
        i += 1
    return path, node, parent


def describe(prop: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """What a schema asks for, in words an agent reads in a 422: ``one of ['a', 'b']``,
    ``integer >= 1 and <= 50``, ``array of string``, ``string matching ^#W\\d+$``."""
    prop = _resolve(root or prop, prop)
    if "enum" in prop:
        return f"one of {prop['enum']}"
    if "const" in prop:
        return f"exactly {prop['const']!r}"
    if "type" in prop and not isinstance(prop["type"], list):
        kind = str(prop["type"])
        if kind == "array" and isinstance(prop.get("items"), dict):
            inner = prop["items"]
            kind = f"array of {describe(inner, root) if inner else 'any'}"
        elif kind == "object" and isinstance(prop.get("properties"), dict):
            kind = f"object with {sorted(prop['properties'])}"
        return kind + _bounds(prop)
    options = [describe(o, root) for o in _branches(prop) if o.get("type") != "null"]
    if options and len(options) < len(_branches(prop)):
        options.append("null")
    return " or ".join(options) if options else "a valid value"


_BOUNDS = [
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
    ("minLength", "of length >="),
    ("maxLength", "of length <="),
    ("minItems", "with items >="),
    ("maxItems", "with items <="),
]


def _bounds(prop: dict[str, Any]) -> str:
    parts = [f"{word} {prop[key]}" for key, word in _BOUNDS if key in prop]
    if "pattern" in prop:
        parts.append(f"matching {prop['pattern']}")
    text = f" ({prop['format']})" if "format" in prop else ""
    return text + (" " + " and ".join(parts) if parts else "")
