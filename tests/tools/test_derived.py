"""Schemas remembered per pack content hash, argument models built on first use: a pack loaded
with a cold cache, a warm one and none has the same tools (specs, entity schemas, answers to
good and bad arguments), a warm load builds no JSON schema, and two declarations under one key
are each computed and never stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable as Fn
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, create_model

from simforge import derived as derived_module
from simforge.derived import derived, deriving
from simforge.tools.errors import ToolArgumentError
from simforge.tools.spec import ToolSpec
from simforge.tools.tool import Tool, tool

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from unittest import mock
import pydantic
from simforge.scenario.plugins import load_pack
from simforge.tools.errors import ToolArgumentError
forbid = sys.argv[1] == "forbid"
def refuse(*a, **k):
    raise AssertionError("a JSON schema was built")
with mock.patch.object(pydantic.BaseModel, "model_json_schema", classmethod(refuse)) if forbid \\
        else mock.patch.object(sys, "flags", sys.flags):
    pack = load_pack("acme")
    specs = {t.name: t.spec.model_dump(mode="json") for t in pack.tools}
    entities = {n: s.json_schema for n, s in pack.schemas.items()}
answers = {}
for name, args in [("get_order", {"order_id": "O-1"}), ("get_order", {"order_id": 3}),
                   ("list_orders", {"limit": 0}), ("get_order", {"nope": 1}),
                   ("create_customer", {"name": "A", "email": 5})]:
    try:
        answers[f"{name} {args}"] = pack.catalog[name].parse_args(args).model_dump(mode="json")
    except ToolArgumentError as exc:
        answers[f"{name} {args}"] = str(exc)
from pydantic import ValidationError
from simforge.world.schema import _UNMAPPED
waiting = sorted(m.__name__ for m in pack.entities if _UNMAPPED in vars(m))
tables = {m.__name__: [(c.name, str(c.type), c.primary_key, c.nullable, c.index)
                       for c in m.__table__.columns] for m in pack.entities}
order = pack.schemas["Order"].model
rows = [order(id="O-1", customer_id="C-1", total=2.0, placed_at="2026-01-01").model_dump()]
for bad in ({"id": "O-2"}, {"id": "O-3", "customer_id": "C", "total": "x", "placed_at": "d",
                            "status": "lost"}):
    try:
        order.model_validate(bad)
    except ValidationError as exc:
        rows.append(exc.errors(include_url=False))
print(json.dumps({"specs": specs, "entities": entities, "answers": answers, "tables": tables,
                  "metadata": list(order.metadata.tables), "rows": rows,
                  "config": {m.__name__: repr(m.model_config) for m in pack.entities},
                  "waiting": waiting}))
"""


def _load(cache: str, mode: str = "") -> dict:
    env = {**os.environ, "SIMFORGE_CACHE": cache}
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cold_warm_and_no_cache_give_the_same_tools(tmp_path):
    cache = str(tmp_path / "cache")
    cold = _load(cache)
    assert any((tmp_path / "cache" / "schemas").rglob("*.json"))
    warm = _load(cache, "forbid")  # builds no JSON schema: they all come from the entry
    off = _load("off")
    # the entity tables of a proven import wait for their first use to be mapped (world/schema)
    waiting = [cold.pop("waiting"), warm.pop("waiting"), off.pop("waiting")]
    assert waiting[0] == waiting[2] == [] and len(waiting[1]) == len(cold["tables"]) > 40
    assert cold == warm == off
    assert len(cold["specs"]) > 100


def _fn_tool(kind: str):
    if kind == "int":
        def lookup(ctx, value: int) -> int:
            """Look a value up."""
            return value
    else:
        def lookup(ctx, value: str) -> str:
            """Look a value up."""
            return value
    return lookup


def test_two_declarations_under_one_key_are_each_computed_and_not_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    for _ in range(2):  # the second time would read what the first stored, had it stored it
        with deriving(tmp_path, "fingerprint"):
            as_int = tool(_fn_tool("int"))
            as_str = tool(_fn_tool("str"))
        assert as_int.spec.input_schema["properties"]["value"]["type"] == "integer"
        assert as_str.spec.input_schema["properties"]["value"]["type"] == "string"


def test_a_remembered_value_is_a_copy_per_declaration(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    source = object()
    with deriving(tmp_path, "fp"):
        first = derived("k", source, lambda: {"a": [1]})
    with deriving(tmp_path, "fp"):
        second = derived("k", source, lambda: pytest.fail("remembered, not computed"))
        third = derived("k", source, lambda: pytest.fail("remembered, not computed"))
    assert first == second == third == {"a": [1]}
    second["a"].append(2)
    assert third == {"a": [1]}
    assert getattr(derived_module._local, "state", None) is None


def test_the_argument_model_is_built_on_first_use_once_for_a_tool_and_its_copies():
    built: list[type[BaseModel]] = []

    def build() -> type[BaseModel]:
        built.append(create_model("echo_args", value=(int, ...)))
        return built[-1]

    spec = ToolSpec(name="echo", description="Echo.",
                    input_schema={"type": "object", "properties": {"value": {"type": "integer"}}})
    one = Tool(spec, build, lambda ctx, args: args.value)
    two = one.with_spec(capacity=2)
    assert built == []
    assert two.parse_args({"value": 3}).value == 3
    assert one.invoke(None, {"value": 4}) == 4  # type: ignore[arg-type]
    with pytest.raises(ToolArgumentError, match="integer"):
        one.parse_args({"value": "x"})
    assert len(built) == 1 and one.input_model is two.input_model is built[0]


SCHEMA_OF = """
import json, sys
from simforge.scenario.plugins import load_pack
pack = load_pack(sys.argv[1])
print(json.dumps(pack.catalog["upgrade_customer"].spec.input_schema["properties"]["tier"]))
"""


def test_an_edited_pack_file_gets_its_own_schemas(tmp_path):
    import shutil

    folder = tmp_path / "pack"
    shutil.copytree(ROOT / "tests" / "fixtures" / "packs" / "mini", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "SIMFORGE_CACHE": str(tmp_path / "cache")}

    def tier() -> dict:
        out = subprocess.run([sys.executable, "-c", SCHEMA_OF, str(folder)], capture_output=True,
                             text=True, env=env, cwd=ROOT, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert tier()["type"] == "string"
    assert tier()["type"] == "string"  # warm
    source = folder / "pack.py"
    source.write_text(source.read_text().replace('tier: str = "gold"', "tier: int = 1"))
    assert tier()["type"] == "integer"


def test_a_return_type_schema_is_made_once_and_each_tool_owns_its_copy():
    import importlib

    tool_module = importlib.import_module("simforge.tools.tool")
    tool_module._return_schema_json.cache_clear()

    def one(ctx, value: int) -> dict[str, list[int]]:
        """One."""
        return {}

    def two(ctx, value: int) -> dict[str, list[int]]:
        """Two."""
        return {}

    def odd(ctx, value: int) -> Annotated[int, {"unhashable": []}]:  # made for itself
        """Odd."""
        return 1

    first, second, third = tool(one), tool(two), tool(odd)
    assert first.spec.output_schema == second.spec.output_schema == {
        "type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}}
    first.spec.output_schema["type"] = "changed"
    assert second.spec.output_schema["type"] == "object"
    assert tool_module._return_schema(dict[str, list[int]])["type"] == "object"
    assert third.spec.output_schema == {"type": "integer"}
    assert tool_module._return_schema_json.cache_info().misses == 1  # Annotated: not cached


OFFERED = """
import json, sys, importlib
from unittest import mock
import pydantic
import simforge
made = []
real = pydantic.BaseModel.model_json_schema.__func__
def counting(cls, *a, **k):
    made.append(cls.__name__)
    return real(cls, *a, **k)
forbid = sys.argv[1] == "forbid"
with mock.patch.object(pydantic.BaseModel, "model_json_schema", classmethod(counting)):
    env = simforge.make("acme/refund-damaged-order-v1")
    at_make = [m for m in made if m.endswith("_args")]
    obs, info = env.reset(seed=0)
    at_reset = sorted(m for m in made if m.endswith("_args"))
tool = importlib.import_module("simforge.tools.tool")
catalog = env.pack.catalog
waiting = sorted(t.name for t in catalog.values() if t._schemas is not None)
offered = sorted(env.loaded.tools(env.task.id))
print(json.dumps({"at_make": at_make, "at_reset": at_reset, "waiting": len(waiting),
                  "offered": offered, "all": len(catalog),
                  "specs": {n: catalog[n].spec.model_dump(mode="json") for n in offered}}))
"""


def _offered(cache: str, mode: str = "") -> dict:
    env = {**os.environ, "SIMFORGE_CACHE": cache}
    out = subprocess.run([sys.executable, "-c", OFFERED, mode], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_tools_schemas_are_made_when_it_is_offered_and_remembered_for_the_next_process(
        tmp_path):
    cache = str(tmp_path / "cache")
    cold = _offered(cache)
    assert cold["at_make"] == []  # make builds no tool's schema
    # the first reset shows the task's tools: theirs are made, the rest of the pack waits
    assert cold["at_reset"] == sorted(f"{n}_args" for n in cold["offered"])
    assert cold["waiting"] == cold["all"] - len(cold["offered"]) > 100
    warm = _offered(cache)
    assert warm["at_make"] == warm["at_reset"] == []  # what the cold process made, on disk
    assert warm["specs"] == cold["specs"]
    assert _offered("off")["specs"] == cold["specs"]


def test_a_schema_that_cannot_be_made_names_its_tool_when_the_spec_is_read():
    from simforge.tools.errors import ToolDefinitionError

    def schedule(ctx, when: Fn[[], int]) -> int:
        """Schedule something."""
        return 1

    declared = tool(schedule)  # declaring does not make the schema
    assert declared.name == "schedule" and declared.outline.kind == "read"
    with pytest.raises(ToolDefinitionError, match=r"tool 'schedule': no JSON schema can be made"):
        declared.spec  # noqa: B018
    with pytest.raises(ToolDefinitionError, match="tool 'schedule'"):
        declared.spec  # noqa: B018  (still refused, not a half-made spec)


def test_a_tools_copies_share_one_making_of_its_schemas(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    calls: list[int] = []

    def echo(ctx, value: int) -> int:
        """Echo."""
        return value

    with deriving(tmp_path, "fp"):
        original = tool(echo)
    slow = original.with_spec(capacity=1)
    assert original.outline.input_schema == {}
    real = original._schemas

    def counted():
        calls.append(1)
        return real()

    original._schemas = slow._schemas = counted  # type: ignore[assignment]
    assert slow.spec.capacity == 1 and original.spec.capacity is None
    assert slow.spec.input_schema == original.spec.input_schema
    assert slow.spec.input_schema["properties"]["value"]["type"] == "integer"
