"""A tool: a :class:`ToolSpec` plus the handler that computes its result, and ``@tool``.

The function's signature is the schema (its typed parameters become a pydantic model with
``extra="forbid"``), its docstring is the description, its return annotation the output schema.
Unlike tau2-bench, the schema is built once from the real annotations, so no parameter type is
lost on the way to the OpenAI, MCP or OpenAPI form.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolArgumentError, ToolDefinitionError
from simforge.tools.spec import Constant, ErrorModel, ToolSpec

Handler = Callable[[ToolContext, BaseModel], Any]

_ARGS_CONFIG = ConfigDict(extra="forbid")


class Tool:
    """A spec and a handler. ``invoke`` is the hot path: validate, run, copy out the result."""

    __slots__ = ("_handler", "_validate", "input_model", "spec")

    def __init__(self, spec: ToolSpec, input_model: type[BaseModel], handler: Handler) -> None:
        self.spec = spec
        self.input_model = input_model
        self._handler = handler
        self._validate = input_model.__pydantic_validator__.validate_python

    @property
    def name(self) -> str:
        return self.spec.name

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
        return Tool(self.spec.model_copy(update=changes), self.input_model, self._handler)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """A fresh JSON-ready copy, so a result never aliases a row of the world. Scalars (most
    fields of most rows) are taken as they are without a call: this runs on every result."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        # a C-level copy, then only the nested values replaced by their copies (in place: the
        # key order stays the row's)
        out = value.copy()
        for k, v in value.items():
            if type(v) not in _SCALARS:
                out[k] = to_jsonable(v)
        return out
    if kind is list or kind is tuple:
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
    input_model = create_model(f"{tool_name}_args", __config__=_ARGS_CONFIG, **fields)
    returns = hints.get("return", Any)

    def handler(ctx: ToolContext, args: BaseModel) -> Any:
        # the model forbids extra fields: its __dict__ is exactly the parameters
        return fn(ctx, **args.__dict__)

    spec = ToolSpec(
        name=tool_name,
        description=description,
        input_schema=clean_schema(input_model.model_json_schema()),
        output_schema=clean_schema(TypeAdapter(returns).json_schema())
        if returns is not Any
        else {},
        kind=kind,
        system=system,
        entities=tuple(entities),
        latency=latency or Constant(),
        capacity=capacity,
        errors=errors or ErrorModel(),
    )
    return Tool(spec, input_model, handler)


_EXPECTED = {"missing": "a value (the argument is required)"}


def _details(exc: ValidationError, schema: dict[str, Any]) -> list[dict[str, Any]]:
    props = schema.get("properties", {})
    details = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        argument = ".".join(loc) or "(arguments)"
        if err["type"] == "extra_forbidden":
            expected = f"one of the tool's arguments {sorted(props)}"
        else:
            expected = _EXPECTED.get(err["type"]) or _describe(props.get(loc[0], {}) if loc else {})
        detail: dict[str, Any] = {"argument": argument, "expected": expected, "problem": err["msg"]}
        if err["type"] != "missing":
            detail["received"] = err.get("input")
        details.append(detail)
    return details


def _describe(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return f"one of {prop['enum']}"
    if "type" in prop:
        kind = str(prop["type"])
        if kind == "array" and "type" in prop.get("items", {}):
            return f"array of {prop['items']['type']}"
        return kind
    options = [_describe(o) for o in prop.get("anyOf", []) if o.get("type") != "null"]
    return " or ".join(options) if options else "a valid value"
