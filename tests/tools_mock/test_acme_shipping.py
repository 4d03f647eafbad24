"""Shipping and returns: labels take reserved stock off the shelf, delivery updates the order,
returns follow the 30-day window and good units go back to stock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


@pytest.fixture
def ready(desk: Desk) -> Desk:
    desk.add(
        "StockLevel",
        id="SL-009001",
        product_id="P-9001",
        warehouse_id="WH-02",
        on_hand=5,
        reserved=1,
    )
    desk.order("O-9001", "processing", items={"P-9001": 1})
    desk.add(
        "Reservation",
        id="RES-009001",
        order_id="O-9001",
        product_id="P-9001",
        warehouse_id="WH-02",
        quantity=1,
        created_at="2026-01-14T10:00:00Z",
    )
    return desk


def test_shipping_fulfils_reservations_and_ships_the_order(ready: Desk) -> None:
    shipment = ready.call("create_shipment", order_id="O-9001", warehouse_id="WH-02", carrier="UPS")
    assert shipment["status"] == "label_created" and shipment["tracking_number"].startswith("UP")
    assert ready.get("Order", "O-9001")["status"] == "shipped"
    level = ready.get("StockLevel", "SL-009001")
    assert (level["on_hand"], level["reserved"]) == (4, 0)
    assert ready.get("Reservation", "RES-009001")["status"] == "fulfilled"
    track = ready.call("track_shipment", tracking_number=shipment["tracking_number"])
    assert track["order_id"] == "O-9001"
    ready.call("mark_shipment_delivered", shipment_id=shipment["id"])
    order = ready.get("Order", "O-9001")
    assert order["status"] == "delivered" and order["delivered_at"] == ready.day(0)


@pytest.mark.parametrize(
    ("warehouse", "carrier", "status"),
    [
        ("WH-01", "UPS", 412),
        ("WH-02", "Pigeon", 422),
        ("WH-99", "UPS", 404),
    ],
)
def test_shipping_refuses_bad_labels(
    ready: Desk, warehouse: str, carrier: str, status: int
) -> None:
    err = ready.error("create_shipment", order_id="O-9001", warehouse_id=warehouse, carrier=carrier)
    assert err.status == status
    assert ready.changes() == 0


def test_unpaid_orders_do_not_ship(ready: Desk) -> None:
    ready.order("O-9002", "processing", items={"P-9001": 1}, paid=False)
    err = ready.error("create_shipment", order_id="O-9002", warehouse_id="WH-02", carrier="UPS")
    assert err.status == 412 and "payment" in err.message


def test_returns_follow_the_window_and_restock_good_units(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9001": 2}, delivered=-5)
    desk.order("O-9002", "delivered", items={"P-9001": 1}, delivered=-40)
    err = desk.error(
        "create_return",
        order_id="O-9002",
        items=[{"product_id": "P-9001", "quantity": 1}],
        reason="late",
    )
    assert err.status == 412 and "window" in err.message
    err = desk.error(
        "create_return",
        order_id="O-9001",
        items=[{"product_id": "P-9001", "quantity": 3}],
        reason="x",
    )
    assert err.status == 422
    rma = desk.call(
        "create_return",
        order_id="O-9001",
        items=[{"product_id": "P-9001", "quantity": 1}],
        reason="broken",
    )
    assert (
        desk.error(
            "create_return",
            order_id="O-9001",
            items=[{"product_id": "P-9001", "quantity": 1}],
            reason="x",
        ).status
        == 409
    )
    out = desk.call("receive_return", return_id=rma["id"], warehouse_id="WH-03", condition="good")
    assert out["returned_value"] == 100.0 and out["return"]["status"] == "received"
    assert desk.get("Product", "P-9001")["stock"] == 11
    [level] = desk.created("StockLevel")
    assert (level["warehouse_id"], level["on_hand"]) == ("WH-03", 1)
    assert (
        desk.error(
            "receive_return", return_id=rma["id"], warehouse_id="WH-03", condition="good"
        ).status
        == 409
    )


def test_quote_prices_by_service(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 2})
    ground = desk.call("get_shipping_quote", order_id="O-9001")
    express = desk.call("get_shipping_quote", order_id="O-9001", service="express")
    assert ground["price"] < express["price"] and express["transit_days"] < ground["transit_days"]
