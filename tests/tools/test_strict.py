"""Schemas strict clients accept: every input schema, hand-written and synthesized, is valid
JSON Schema 2020-12 and closed where the tool refuses unknown arguments; its OpenAI strict-mode
form (``ToolSpec.to_openai(strict=True)``, ``simforge tools list --strict``) is one the
``openai`` package's own strict pass leaves unchanged; and the arguments a strict client sends
(``null`` for each optional parameter left out) are taken as the tool takes them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter
from typer.testing import CliRunner

from simforge.cli import app
from simforge.scenario.plugins import load_pack
from simforge.synth.pipeline import synthesize
from simforge.tools import Tool, ToolArgumentError, ToolSpec
from simforge.tools.spec import (
    STRICT_KEYWORDS,
    StrictSchemaError,
    strict_arguments,
    strict_schema,
)

openai_pydantic = pytest.importorskip("openai.lib._pydantic")
from openai.types.chat import ChatCompletionFunctionToolParam  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


@pytest.fixture(scope="module")
def acme_tools() -> list[Tool]:
    return list(load_pack("acme").catalog.values())


@pytest.fixture(scope="module")
def synth_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "acme-otlp"
    synthesize([EXAMPLES / "acme-otlp.json"], out)
    return out


@pytest.fixture(scope="module")
def synth_tools(synth_pack: Path) -> list[Tool]:
    return list(load_pack(str(synth_pack)).catalog.values())


def _all(acme_tools: list[Tool], synth_tools: list[Tool]) -> list[Tool]:
    assert len(acme_tools) > 150 and len(synth_tools) > 50
    return acme_tools + synth_tools


def _nodes(schema: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every subschema with its place (properties, items, anyOf, $defs, maps)."""
    out = []
    if isinstance(schema, dict):
        out.append((path, schema))
        for key in ("properties", "$defs"):
            for name, sub in (schema.get(key) or {}).items():
                out += _nodes(sub, f"{path}/{key}/{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                out += _nodes(schema[key], f"{path}/{key}")
        for i, sub in enumerate(schema.get("anyOf") or []):
            out += _nodes(sub, f"{path}/anyOf/{i}")
    return out


def test_every_schema_is_valid_json_schema_2020_12(acme_tools, synth_tools):
    for t in _all(acme_tools, synth_tools):
        for schema in (
            t.spec.input_schema,
            t.spec.output_schema,
            strict_schema(t.spec.input_schema),
        ):
            Draft202012Validator.check_schema(schema)


def test_every_input_schema_is_closed_where_the_tool_refuses_unknown_arguments(
    acme_tools, synth_tools
):
    for t in _all(acme_tools, synth_tools):
        for path, node in _nodes(t.spec.input_schema):
            if node.get("type") == "object" or "properties" in node:
                assert "additionalProperties" in node, (t.name, path)
        assert t.spec.input_schema["additionalProperties"] is False, t.name
        with pytest.raises(ToolArgumentError) as info:
            t.parse_args({"no_such_argument": 1})
        assert "no_such_argument" in [d["argument"] for d in info.value.details], t.name


def test_the_openai_strict_pass_leaves_every_strict_schema_unchanged(acme_tools, synth_tools):
    """``_ensure_strict_json_schema`` is what ``openai.pydantic_function_tool`` and
    ``response_format`` run: it closes objects, requires every property, strips null defaults
    and inlines ``$ref``s with siblings; ours needs none of that."""
    adapter = TypeAdapter(ChatCompletionFunctionToolParam)
    for t in _all(acme_tools, synth_tools):
        tool = t.spec.to_openai(strict=True)
        assert tool["function"]["strict"] is True, t.name
        adapter.validate_python(tool)
        schema = tool["function"]["parameters"]
        rewritten = copy.deepcopy(schema)
        openai_pydantic._ensure_strict_json_schema(rewritten, path=(), root=rewritten)
        assert rewritten == schema, t.name
        _assert_strict_rules(t.name, schema)


def _assert_strict_rules(name: str, schema: dict[str, Any]) -> None:
    """What the openai pass does not check but the API does."""
    assert schema["type"] == "object" and "anyOf" not in schema
    for path, node in _nodes(schema):
        assert set(node) <= STRICT_KEYWORDS, (name, path, set(node) - STRICT_KEYWORDS)
        if node.get("type") == "object":
            assert node["additionalProperties"] is False, (name, path)
            assert node["required"] == list(node["properties"]), (name, path)
        if node.get("type") == "array":
            assert node["items"], (name, path)
        assert "type" in node or "anyOf" in node or "$ref" in node or "enum" in node, (name, path)


def test_optional_parameters_are_nullable_and_required_with_their_default_said(acme_tools):
    tools = {t.name: t for t in acme_tools}
    schema = tools["create_customer"].spec.to_openai(strict=True)["function"]["parameters"]
    assert schema["required"] == ["name", "email", "phone", "address", "tier"]
    tier = schema["properties"]["tier"]
    assert tier["anyOf"][1] == {"type": "null"}
    assert tier["anyOf"][0]["enum"] == ["standard", "silver", "gold", "platinum"]
    assert "default" not in json.dumps(tier["anyOf"]) and '"standard"' in tier["description"]
    # the tool's own schema is untouched
    assert "default" in tools["create_customer"].spec.input_schema["properties"]["tier"]


def test_strict_arguments_leave_out_the_nulls_of_optional_parameters(acme_tools):
    """A strict client sends every parameter; ``null`` for those it leaves out. A generated
    update would otherwise set each such field to null."""
    tools = {t.name: t for t in acme_tools}
    update = tools["update_contact"]
    sent = {
        "contact_id": "CT-0001",
        "email": None,
        "phone": "+1-555-0100",
        "role": None,
        "is_primary": None,
    }
    taken = strict_arguments(update.spec.input_schema, sent)
    assert taken == {"contact_id": "CT-0001", "phone": "+1-555-0100"}
    assert update.parse_args(taken).model_fields_set == {"contact_id", "phone"}
    order = tools["place_order"]
    sent = {
        "customer_id": "C-9001",
        "items": [{"product_id": "P-1", "quantity": 1}],
        "shipping_address": None,
    }
    assert strict_arguments(order.spec.input_schema, sent) == {
        "customer_id": "C-9001",
        "items": [{"product_id": "P-1", "quantity": 1}],
    }
    # a null for a required parameter stays, for the tool to refuse
    assert strict_arguments(order.spec.input_schema, {"customer_id": None}) == {"customer_id": None}


def test_what_strict_mode_cannot_express_is_exported_not_strict():
    for schema, reason in [
        (
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": {"type": "number"}}},
            },
            "a map",
        ),
        ({"type": "object", "properties": {"x": {}}}, "any type"),
        ({"type": "object", "properties": {"x": {"type": "array"}}}, "without a schema"),
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "open to any key"),
        ({"type": "string"}, "must be an object"),
    ]:
        with pytest.raises(StrictSchemaError, match=reason):
            strict_schema(schema)
    spec = ToolSpec(
        name="t", description="d.", input_schema={"type": "object", "properties": {"x": {}}}
    )
    assert spec.to_openai(strict=True)["function"]["strict"] is False
    assert spec.to_openai(strict=True)["function"]["parameters"] == spec.input_schema


def test_type_lists_refs_with_siblings_and_single_allof_are_made_strict():
    schema = {
        "type": "object",
        "properties": {
            "v": {"type": ["integer", "string"], "pattern": "^a", "minimum": 1},
            "r": {"$ref": "#/$defs/R", "description": "An R."},
            "a": {"allOf": [{"type": "string"}], "minLength": 2},
        },
        "required": ["v", "r", "a"],
        "$defs": {"R": {"type": "object", "properties": {"k": {"type": "string"}}}},
    }
    out = strict_schema(schema)
    assert out["properties"]["v"] == {
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^a"}]
    }
    assert out["properties"]["r"]["description"] == "An R."
    assert out["properties"]["r"]["properties"]["k"]["anyOf"][1] == {"type": "null"}
    assert out["properties"]["a"] == {"type": "string", "description": "At least 2 characters."}
    _assert_strict_rules("t", out)


def test_tools_list_strict_exports_every_tool_strict(synth_pack: Path):
    runner = CliRunner()
    for pack in ("acme", str(synth_pack)):
        result = runner.invoke(app, ["tools", "list", "--pack", pack, "--strict"])
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)["tools"]
        assert rows and all(r["strict"] and r["openai"]["function"]["strict"] for r in rows)
        assert all(r["openai"]["function"]["name"] == r["name"] for r in rows)
