"""Order rules: what may be cancelled, what a cancellation gives back, when an address changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


def test_cancel_paid_processing_order_releases_stock_and_issues_credit_note(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 1, "P-9002": 3})  # 175.00
    out = desk.call("cancel_order", order_id="O-9001", reason="changed mind")
    assert out["order"]["status"] == "cancelled"
    assert desk.get("Order", "O-9001")["status"] == "cancelled"
    assert desk.get("Product", "P-9001")["stock"] == 11
    assert desk.get("Product", "P-9002")["stock"] == 7
    assert {r["product_id"]: r["stock"] for r in out["released"]} == {"P-9001": 11, "P-9002": 7}
    [note] = desk.created("CreditNote")
    assert (note["order_id"], note["customer_id"], note["amount"]) == ("O-9001", "C-9001", 175.0)
    assert out["credit_note"] == note
    [entry] = desk.created("LedgerEntry")
    assert (entry["kind"], entry["amount"], entry["reference"]) == (
        "credit_note",
        175.0,
        note["id"],
    )


def test_cancel_unpaid_pending_order_issues_no_credit_note(desk: Desk) -> None:
    desk.order("O-9001", "pending", items={"P-9002": 2}, paid=False)
    out = desk.call("cancel_order", order_id="O-9001", reason="duplicate order")
    assert out["credit_note"] is None
    assert desk.created("CreditNote") == [] and desk.created("LedgerEntry") == []
    assert desk.get("Product", "P-9002")["stock"] == 6


@pytest.mark.parametrize(
    ("status", "code"),
    [("shipped", 412), ("delivered", 412), ("cancelled", 409), ("refunded", 409)],
)
def test_orders_past_processing_cannot_be_cancelled(desk: Desk, status: str, code: int) -> None:
    desk.order(
        "O-9001", status, items={"P-9001": 1}, delivered=-1 if status == "delivered" else None
    )
    err = desk.error("cancel_order", order_id="O-9001", reason="x")
    assert err.status == code and "O-9001" in err.message and status in err.message
    assert desk.changes() == 0
    assert desk.get("Product", "P-9001")["stock"] == 10


def test_cancel_unknown_order_is_404(desk: Desk) -> None:
    err = desk.error("cancel_order", order_id="O-4242", reason="x")
    assert (err.status, err.code) == (404, "not_found") and "O-4242" in err.message


def test_cancel_needs_a_reason(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 1})
    assert desk.error("cancel_order", order_id="O-9001", reason="  ").status == 422
    assert desk.changes() == 0


def test_shipping_address_changes_before_shipment(desk: Desk) -> None:
    desk.order("O-9001", "pending", items={"P-9001": 1}, paid=False)
    out = desk.call(
        "update_shipping_address", order_id="O-9001", shipping_address="9 Elm Rd, Salem, OR 97301"
    )
    assert out["shipping_address"] == "9 Elm Rd, Salem, OR 97301"
    assert desk.get("Order", "O-9001")["shipping_address"] == "9 Elm Rd, Salem, OR 97301"


@pytest.mark.parametrize(
    ("status", "code"), [("shipped", 412), ("delivered", 412), ("cancelled", 409)]
)
def test_shipping_address_is_frozen_once_shipped(desk: Desk, status: str, code: int) -> None:
    desk.order("O-9001", status, items={"P-9001": 1})
    err = desk.error(
        "update_shipping_address", order_id="O-9001", shipping_address="9 Elm Rd, Salem, OR 97301"
    )
    assert err.status == code and "O-9001" in err.message
    assert desk.changes() == 0


def test_shipping_address_must_be_a_postal_address(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 1})
    err = desk.error("update_shipping_address", order_id="O-9001", shipping_address="home")
    assert err.status == 422 and err.details == [{"argument": "shipping_address"}]


def test_list_orders_filters_by_customer_and_status(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 1})
    desk.order("O-9002", "shipped", items={"P-9002": 1})
    page = desk.call("list_orders", customer_id="C-9001", status="shipped")
    assert [o["id"] for o in page["items"]] == ["O-9002"] and page["total"] == 1


def test_get_order_returns_items_with_prices(desk: Desk) -> None:
    desk.order("O-9001", "processing", items={"P-9001": 2})
    order = desk.call("get_order", order_id="O-9001")
    assert order["items"] == [{"product_id": "P-9001", "quantity": 2, "unit_price": 100.0}]
    assert order["total"] == 200.0
