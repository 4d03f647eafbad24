"""The Acme pack as a whole: its catalog, and seed data that is deterministic and consistent."""

from __future__ import annotations

import re
import time
from collections import Counter
from types import ModuleType

from simforge.tools import Pack
from simforge.tools.pack import SIZES

SYSTEMS = {
    "crm", "orders", "billing", "support", "inventory", "shipping",
    "itsm", "hr", "iam", "comms", "kb", "finance",
}  # fmt: skip
BUSINESS_OPERATIONS = {
    "refund_order",
    "cancel_order",
    "escalate_ticket",
    "apply_account_credit",
    "update_shipping_address",
    "place_order",
    "create_shipment",
    "receive_return",
    "transfer_stock",
    "approve_access_request",
    "terminate_employee",
    "approve_purchase_request",
    "send_external_email",
    "post_public_message",
}
OUTWARD = {"send_external_email", "post_public_message"}


def test_catalog_has_at_least_120_tools_over_twelve_systems(acme: Pack) -> None:
    per_system = Counter(t.spec.system for t in acme.catalog.values())
    assert len(acme.catalog) >= 120
    assert set(per_system) == SYSTEMS and min(per_system.values()) >= 7
    assert set(acme.catalog) >= BUSINESS_OPERATIONS


def test_tools_that_send_data_outside_say_so_in_their_names(acme: Pack) -> None:
    """The PII validator keys on outward tools by name: only these two leave the company."""
    outward = {n for n in acme.catalog if "external" in n or "public" in n}
    assert outward == OUTWARD
    assert all(acme.catalog[n].spec.kind == "write" for n in outward)


def test_every_tool_declares_an_output_schema(acme: Pack) -> None:
    for name, t in acme.catalog.items():
        assert t.spec.output_schema, name


def test_every_tool_has_a_description_and_an_object_input_schema(acme: Pack) -> None:
    for name, t in acme.catalog.items():
        assert len(t.spec.description) > 15, name
        assert t.spec.input_schema.get("type") == "object", name
        function = t.spec.to_openai()["function"]
        assert function["name"] == name and function["parameters"]["type"] == "object"


def test_every_tool_has_its_system_latency_and_capacity(acme: Pack) -> None:
    for name, t in acme.catalog.items():
        assert t.spec.latency.kind == "lognormal", name
        assert t.spec.capacity is not None, name
        assert set(t.spec.entities) <= set(acme.schemas), name
    writes = {n for n, t in acme.catalog.items() if t.spec.kind == "write"}
    assert writes >= BUSINESS_OPERATIONS


def test_agent_facing_text_names_no_scenario_fixture(acme: Pack) -> None:
    """Descriptions and schemas are visible to the agent: no task's entity ids or answers."""
    text = str(acme.catalog.to_openai())
    assert not re.search(r"\b[A-Z]{1,4}-0*9\d{3}\b", text)
    assert "Lindqvist" not in text and "Okafor" not in text


def test_same_seed_gives_identical_rows_and_another_seed_differs(acme: Pack) -> None:
    first, again, other = acme.seed(7, 1), acme.seed(7, 1), acme.seed(8, 1)
    assert first == again
    for table in ("Customer", "Product", "Order", "Ticket"):
        assert first[table] != other[table], table


def test_a_bigger_world_keeps_the_customers_and_products_of_a_smaller_one(acme: Pack) -> None:
    tiny, small = acme.seed(3, SIZES["tiny"]), acme.seed(3, SIZES["small"])
    for table in ("Customer", "Product", "Warehouse", "Role", "Group", "PolicyDocument"):
        assert small[table][: len(tiny[table])] == tiny[table], table


def test_tiny_world_has_about_twenty_customers(acme: Pack) -> None:
    base = acme.base(0, "tiny")
    assert 15 <= len(base["Customer"]) <= 30
    assert all(base[name] for name in ("Product", "Order", "Invoice", "Ticket"))


def test_seeded_rows_reference_each_other_consistently(acme: Pack, common: ModuleType) -> None:
    base = acme.base(0, "small")
    customers, products, orders = base["Customer"], base["Product"], base["Order"]
    for order in orders.values():
        assert order["customer_id"] in customers
        assert all(i["product_id"] in products for i in order["items"])
        total = sum(i["unit_price"] * i["quantity"] for i in order["items"])
        assert abs(order["total"] - total) < 0.005
        assert (order["delivered_at"] is not None) == (order["status"] in ("delivered", "refunded"))
    refunded = Counter()
    for refund in base["Refund"].values():
        refunded[refund["order_id"]] += refund["amount"]
        if refund["amount"] > 500:
            assert base["Approval"][refund["approval_id"]]["status"] == "approved"
    assert all(amount <= orders[o]["total"] + 0.005 for o, amount in refunded.items())
    assert all(t["customer_id"] in customers for t in base["Ticket"].values())
    start = common.world_day(0)
    assert all(o["placed_at"] <= start for o in orders.values())


def test_large_world_is_big_quick_and_leaves_the_fixture_ids_free(
    acme: Pack, common: ModuleType
) -> None:
    began = time.perf_counter()
    base = acme.base(0, "large")
    elapsed = time.perf_counter() - began
    assert sum(len(rows) for rows in base.values()) >= 50_000
    assert elapsed < 30.0
    fixture = re.compile(r"-0*9\d{3}$")
    for name, rows in base.items():
        assert not any(fixture.search(id) for id in rows), name


def test_cached_clock_strings_match_the_datetime_formatting(common: ModuleType) -> None:
    """``now_iso``/``today_iso`` format from a per-day cache; they must give exactly what
    ``now_at(ctx).strftime(...)`` and ``today(ctx).isoformat()`` give, including fractions that
    ``timedelta`` rounds up into the next second (and the next day)."""
    import math
    import random
    from types import SimpleNamespace

    rng = random.Random(7)
    values = [0.0, 0.4999995, 0.9999994, 0.9999995, 0.9999996, 53_999.9999996, 86_399.9999995]
    for whole in [*range(0, 120), 53_999, 140_399, *(rng.randrange(10**9) for _ in range(200))]:
        for frac in (0.0, 0.5, 0.9999995, 0.99999949, 0.99999950001):
            x = whole + frac
            for _ in range(3):
                values += [x, -x, math.nextafter(x, math.inf)]
                x = math.nextafter(x, 0.0)
    values += [rng.random() * 10 ** rng.randint(0, 10) for _ in range(20_000)]
    for now in values:
        ctx = SimpleNamespace(now=now)
        assert common.now_iso(ctx) == common.now_at(ctx).strftime("%Y-%m-%dT%H:%M:%SZ"), now
        assert common.today_iso(ctx) == common.today(ctx).isoformat(), now
