"""Generated CRUD tools behave like a real API over the world."""

from __future__ import annotations

import pytest

from simforge.tools import ToolContext, ToolError
from simforge.tools.tool import Tool


@pytest.fixture
def ctx(mini_pack):
    import random

    return ToolContext(mini_pack.world(), 0.0, random.Random(0))


def call(pack, ctx, tool_name, **args):
    tool: Tool = pack.catalog[tool_name]
    return tool.invoke(ctx, args)


def test_generated_names_and_kinds(mini_pack):
    kinds = {n: t.spec.kind for n, t in mini_pack.catalog.items() if "customer" in n}
    assert kinds == {
        "get_customer": "read",
        "list_customers": "read",
        "search_customers": "read",
        "create_customer": "write",
        "update_customer": "write",
        "delete_customer": "write",
        "upgrade_customer": "write",
    }


def test_get_and_not_found(mini_pack, ctx):
    assert call(mini_pack, ctx, "get_customer", customer_id="C-0002")["email"] == "c2@example.com"
    with pytest.raises(ToolError) as info:
        call(mini_pack, ctx, "get_customer", customer_id="C-9999")
    assert info.value.status == 404 and "C-9999" in info.value.message


def test_list_filters_and_paginates(mini_pack, ctx):
    page = call(mini_pack, ctx, "list_customers", limit=15)
    assert page["total"] == 40 and len(page["items"]) == 15 and page["next_offset"] == 15
    last = call(mini_pack, ctx, "list_customers", limit=15, offset=30)
    assert len(last["items"]) == 10 and last["next_offset"] is None
    call(mini_pack, ctx, "update_customer", customer_id="C-0004", tier="gold")
    gold = call(mini_pack, ctx, "list_customers", tier="gold")
    assert [r["id"] for r in gold["items"]] == ["C-0004"]
    with pytest.raises(ToolError, match="limit"):
        call(mini_pack, ctx, "list_customers", limit=1000)


def test_search_is_case_insensitive_over_searchable_fields(mini_pack, ctx):
    hits = call(mini_pack, ctx, "search_customers", query="C12@EXAMPLE")
    assert [r["id"] for r in hits["items"]] == ["C-0012"]


def test_create_update_delete_round_trip(mini_pack, ctx):
    created = call(mini_pack, ctx, "create_customer", name="Ada", email="ada@example.com")
    assert created["id"] == "C-0041" and created["tier"] == "standard"
    updated = call(mini_pack, ctx, "update_customer", customer_id=created["id"], balance=12.5)
    assert updated["balance"] == 12.5 and updated["name"] == "Ada"
    with pytest.raises(ToolError, match="at least one field"):
        call(mini_pack, ctx, "update_customer", customer_id=created["id"])
    assert call(mini_pack, ctx, "delete_customer", customer_id=created["id"]) == {
        "deleted": True,
        "id": "C-0041",
    }
    with pytest.raises(ToolError):
        call(mini_pack, ctx, "get_customer", customer_id="C-0041")


def test_results_never_alias_the_world(mini_pack, ctx):
    row = call(mini_pack, ctx, "get_customer", customer_id="C-0001")
    row["name"] = "mutated by the agent"
    assert call(mini_pack, ctx, "get_customer", customer_id="C-0001")["name"] == "Customer 1"
