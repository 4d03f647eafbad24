"""Finance, sales and payments: approval thresholds, budgets, blocked vendors, expense receipts,
discount approval, and payments that move orders on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


@pytest.fixture
def books(desk: Desk) -> Desk:
    desk.employee("E-9100", department="finance", roles=("employee", "finance-approver"))
    desk.employee("E-9101", department="finance", roles=("employee", "finance-director"))
    desk.employee("E-9102", department="sales", manager="E-9100")
    desk.add("Vendor", id="V-9001", name="Acme Parts", category="hardware")
    desk.add("Vendor", id="V-9002", name="Shady Co", category="hardware", status="blocked")
    desk.world.update(
        "Budget", "BUD-004", {"amount": 20000.0, "committed": 0.0, "spent": 5000.0}, now=0.0
    )
    return desk


def _request(desk: Desk, amount: float) -> str:
    return desk.call(
        "create_purchase_request",
        requester_id="E-9102",
        vendor_id="V-9001",
        description="laptops",
        amount=amount,
    )["id"]


def test_purchase_thresholds_budgets_and_separation_of_duties(books: Desk) -> None:
    assert (
        books.error(
            "create_purchase_request",
            requester_id="E-9102",
            vendor_id="V-9002",
            description="x",
            amount=10,
        ).status
        == 412
    )
    big = _request(books, 12000.0)
    assert (
        books.error("approve_purchase_request", purchase_request_id=big, actor_id="U-9100").status
        == 403
    )
    assert (
        books.call("approve_purchase_request", purchase_request_id=big, actor_id="U-9101")[
            "budget_remaining"
        ]
        == 15000.0
    )
    books.call("issue_purchase_order", purchase_request_id=big)
    assert books.get("Budget", "BUD-004")["committed"] == 12000.0
    over = _request(books, 4000.0)
    err = books.error("approve_purchase_request", purchase_request_id=over, actor_id="U-9100")
    assert err.status == 412 and "3000.00" in err.message
    own = books.call(
        "create_purchase_request",
        requester_id="E-9100",
        vendor_id="V-9001",
        description="x",
        amount=10,
    )["id"]
    assert (
        books.error("approve_purchase_request", purchase_request_id=own, actor_id="U-9100").status
        == 403
    )
    assert books.error("issue_purchase_order", purchase_request_id=over).status == 412


def test_expenses_above_75_need_a_receipt_and_the_manager(books: Desk) -> None:
    bare = books.call(
        "submit_expense_report",
        employee_id="E-9102",
        amount=90,
        category="travel",
        description="taxi",
    )
    assert (
        books.error("approve_expense_report", expense_id=bare["id"], approver_id="E-9100").status
        == 412
    )
    assert (
        books.error("approve_expense_report", expense_id=bare["id"], approver_id="E-9101").status
        == 403
    )
    books.call(
        "reject_expense_report", expense_id=bare["id"], approver_id="E-9100", reason="no receipt"
    )
    small = books.call(
        "submit_expense_report",
        employee_id="E-9102",
        amount=40,
        category="meals",
        description="lunch",
    )
    assert (
        books.call("approve_expense_report", expense_id=small["id"], approver_id="E-9100")["status"]
        == "approved"
    )


def test_discounts_above_fifteen_percent_need_an_approver(books: Desk) -> None:
    books.add(
        "Opportunity",
        id="OPP-9001",
        customer_id="C-9001",
        name="Desks",
        stage="negotiation",
        amount=10000.0,
        owner_id="E-9102",
        close_date="2026-02-01",
        created_at="2025-12-01T00:00:00Z",
    )
    assert (
        books.error(
            "set_opportunity_discount",
            opportunity_id="OPP-9001",
            discount_pct=25,
            actor_id="U-9102",
        ).status
        == 403
    )
    assert (
        books.error(
            "set_opportunity_discount",
            opportunity_id="OPP-9001",
            discount_pct=45,
            actor_id="U-9100",
        ).status
        == 422
    )
    books.call(
        "set_opportunity_discount", opportunity_id="OPP-9001", discount_pct=25, actor_id="U-9100"
    )
    assert (
        books.error("update_opportunity_stage", opportunity_id="OPP-9001", stage="proposal").status
        == 412
    )
    won = books.call("update_opportunity_stage", opportunity_id="OPP-9001", stage="closed_won")
    assert (won["stage"], won["discount_approved_by"]) == ("closed_won", "U-9100")
    assert (
        books.error(
            "update_opportunity_stage", opportunity_id="OPP-9001", stage="closed_lost"
        ).status
        == 409
    )


def test_contacts_are_unique_per_account_and_one_is_primary(desk: Desk) -> None:
    first = desk.call(
        "create_contact", customer_id="C-9001", name="A", email="a@x.example", is_primary=True
    )
    second = desk.call(
        "create_contact", customer_id="C-9001", name="B", email="b@x.example", is_primary=True
    )
    assert desk.get("Contact", first["id"])["is_primary"] is False and second["is_primary"]
    assert desk.error("update_contact", contact_id=second["id"], email="A@x.example").status == 409
    assert (
        desk.error(
            "create_contact", customer_id="C-9001", name="C", email="c@x.example", role="boss"
        ).status
        == 422
    )


def test_paying_an_invoice_moves_the_order_to_processing(desk: Desk) -> None:
    desk.order("O-9001", "pending", items={"P-9001": 1}, paid=False)
    desk.add(
        "Invoice",
        id="INV-09001",
        order_id="O-9001",
        customer_id="C-9001",
        amount=100.0,
        status="open",
        issued_at=desk.day(0),
    )
    assert desk.error("record_payment", invoice_id="INV-09001", amount=90.0).status == 422
    assert (
        desk.error(
            "record_payment", invoice_id="INV-09001", amount=100.0, method="store_credit"
        ).status
        == 412
    )
    out = desk.call("record_payment", invoice_id="INV-09001", amount=100.0)
    assert out["order_status"] == "processing" and desk.get("Order", "O-9001")["paid"] is True
    assert desk.error("record_payment", invoice_id="INV-09001", amount=100.0).status == 409
    assert desk.error("void_invoice", invoice_id="INV-09001", reason="oops").status == 412
    note = desk.call("issue_credit_note", order_id="O-9001", amount=30.0, reason="price match")
    assert note["amount"] == 30.0
    assert desk.error("issue_credit_note", order_id="O-9001", amount=80.0, reason="x").status == 422
    balance = desk.call("get_customer_balance", customer_id="C-9001")
    assert balance["ledger_totals"] == {"credit_note": 30.0}
