"""Inventory rules and their effects on orders: reservations hold stock, cancellations release
it, transfers move only free units, large corrections need a warehouse lead."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


@pytest.fixture
def stocked(desk: Desk) -> Desk:
    desk.add("StockLevel", id="SL-009001", product_id="P-9001", warehouse_id="WH-01", on_hand=6)
    desk.add("StockLevel", id="SL-009002", product_id="P-9001", warehouse_id="WH-02", on_hand=4)
    desk.add("StockLevel", id="SL-009003", product_id="P-9002", warehouse_id="WH-04", on_hand=9)
    desk.employee("E-9101", department="operations", roles=("employee", "warehouse-clerk"))
    desk.employee("E-9102", department="operations", roles=("employee", "warehouse-lead"))
    return desk


def test_availability_lists_free_units_per_warehouse(stocked: Desk) -> None:
    out = stocked.call("check_availability", product_id="P-9001")
    assert [(w["warehouse_id"], w["free"]) for w in out["warehouses"]] == [
        ("WH-01", 6),
        ("WH-02", 4),
    ]
    assert out["total_free"] == 10


def test_place_order_reserves_stock_and_raises_an_invoice(stocked: Desk) -> None:
    out = stocked.call(
        "place_order", customer_id="C-9001", items=[{"product_id": "P-9001", "quantity": 5}]
    )
    assert out["order"]["status"] == "pending" and out["order"]["total"] == 500.0
    [held] = out["reservations"]
    assert (held["warehouse_id"], held["quantity"], held["status"]) == ("WH-01", 5, "active")
    assert stocked.get("StockLevel", "SL-009001")["reserved"] == 5
    assert stocked.get("Product", "P-9001")["stock"] == 5
    assert out["invoice"]["amount"] == 500.0 and out["invoice"]["status"] == "open"


def test_place_order_is_a_conflict_when_no_warehouse_has_enough(stocked: Desk) -> None:
    err = stocked.error(
        "place_order", customer_id="C-9001", items=[{"product_id": "P-9001", "quantity": 7}]
    )
    assert err.status == 409 and "P-9001" in err.message
    assert stocked.changes() == 0


def test_cancelling_an_order_releases_its_reservations_and_voids_the_invoice(stocked: Desk) -> None:
    placed = stocked.call(
        "place_order", customer_id="C-9001", items=[{"product_id": "P-9001", "quantity": 2}]
    )
    order_id = placed["order"]["id"]
    stocked.call("cancel_order", order_id=order_id, reason="changed mind")
    assert stocked.get("StockLevel", "SL-009001")["reserved"] == 0
    assert stocked.get("Reservation", placed["reservations"][0]["id"])["status"] == "released"
    assert stocked.get("Invoice", placed["invoice"]["id"])["status"] == "void"
    assert stocked.get("Product", "P-9001")["stock"] == 10
    assert stocked.created("CreditNote") == []  # unpaid: nothing to credit


def test_transfer_moves_only_free_units_between_active_warehouses(stocked: Desk) -> None:
    out = stocked.call(
        "transfer_stock",
        product_id="P-9001",
        from_warehouse_id="WH-01",
        to_warehouse_id="WH-03",
        quantity=4,
    )
    assert out["from"]["on_hand"] == 2 and out["to"]["on_hand"] == 4
    assert stocked.created("StockTransfer")[0]["quantity"] == 4
    err = stocked.error(
        "transfer_stock",
        product_id="P-9001",
        from_warehouse_id="WH-02",
        to_warehouse_id="WH-03",
        quantity=5,
    )
    assert err.status == 412
    err = stocked.error(
        "transfer_stock",
        product_id="P-9002",
        from_warehouse_id="WH-04",
        to_warehouse_id="WH-01",
        quantity=1,
    )
    assert err.status == 412 and "WH-04" in err.message


@pytest.mark.parametrize(
    ("actor", "delta", "status"),
    [
        ("U-9101", -3, None),
        ("U-9101", -25, 403),
        ("U-9102", -25, None),
        ("U-0000", -1, 403),
    ],
)
def test_stock_corrections_need_the_right_role(
    stocked: Desk, actor: str, delta: int, status: int | None
) -> None:
    stocked.add("StockLevel", id="SL-009004", product_id="P-9002", warehouse_id="WH-01", on_hand=30)
    args = {
        "actor_id": actor,
        "product_id": "P-9002",
        "warehouse_id": "WH-01",
        "delta": delta,
        "reason": "cycle count",
    }
    if status is None:
        out = stocked.call("adjust_stock", **args)
        assert out["stock_level"]["on_hand"] == 30 + delta
        assert stocked.get("Product", "P-9002")["stock"] == max(4 + delta, 0)
    else:
        assert stocked.error("adjust_stock", **args).status == status


def test_reserving_more_than_the_order_holds_is_rejected(stocked: Desk) -> None:
    stocked.order("O-9001", "processing", items={"P-9001": 1})
    err = stocked.error(
        "reserve_stock", order_id="O-9001", product_id="P-9001", warehouse_id="WH-01", quantity=2
    )
    assert err.status == 422
    held = stocked.call(
        "reserve_stock", order_id="O-9001", product_id="P-9001", warehouse_id="WH-01", quantity=1
    )
    stocked.call("release_reservation", reservation_id=held["id"])
    assert stocked.error("release_reservation", reservation_id=held["id"]).status == 409
