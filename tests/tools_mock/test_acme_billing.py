"""Billing rules: refund window and balance, approvals for large refunds, account credit."""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if TYPE_CHECKING:
    from conftest import Desk

DAY = 86_400.0


def test_refund_within_window_creates_refund_and_ledger_entry(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9001": 1, "P-9002": 2}, delivered=-10)
    out = desk.call("refund_order", order_id="O-9001", amount=100.0, reason="damaged")
    assert out["refund"]["amount"] == 100.0
    assert out["order_status"] == "delivered"
    assert out["remaining_refundable"] == 50.0
    [refund] = desk.created("Refund")
    assert refund["order_id"] == "O-9001" and refund["customer_id"] == "C-9001"
    [entry] = desk.created("LedgerEntry")
    assert (entry["kind"], entry["amount"], entry["reference"]) == ("refund", 100.0, refund["id"])
    assert desk.get("Order", "O-9001")["status"] == "delivered"


def test_refunding_the_rest_marks_the_order_refunded(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9001": 1, "P-9002": 2}, delivered=-10)
    desk.call("refund_order", order_id="O-9001", amount=100.0, reason="damaged")
    out = desk.call("refund_order", order_id="O-9001", amount=50.0, reason="rest")
    assert out["order_status"] == "refunded" and out["remaining_refundable"] == 0.0
    assert desk.get("Order", "O-9001")["status"] == "refunded"
    again = desk.error("refund_order", order_id="O-9001", amount=1.0, reason="more")
    assert again.status == 409 and "O-9001" in again.message


def test_refund_window_is_thirty_days_after_delivery(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9002": 1}, delivered=-30)
    desk.order("O-9002", "delivered", items={"P-9002": 1}, delivered=-31)
    assert desk.call("refund_order", order_id="O-9001", amount=25.0, reason="x")["refund"]
    late = desk.error("refund_order", order_id="O-9002", amount=25.0, reason="x")
    assert late.status == 412
    assert "O-9002" in late.message and desk.day(-31) in late.message


def test_the_window_follows_the_simulated_clock(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9002": 1}, delivered=-25)
    desk.now += 6 * DAY
    assert desk.error("refund_order", order_id="O-9001", amount=25.0, reason="x").status == 412


@pytest.mark.parametrize("amount", [0.0, -5.0])
def test_refund_amount_must_be_positive(desk: Desk, amount: float) -> None:
    desk.order("O-9001", "delivered", items={"P-9002": 1}, delivered=-3)
    err = desk.error("refund_order", order_id="O-9001", amount=amount, reason="x")
    assert err.status == 422 and err.details == [{"argument": "amount"}]


def test_over_refund_is_refused_and_names_the_balance(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9001": 1}, delivered=-3)
    desk.call("refund_order", order_id="O-9001", amount=60.0, reason="partial")
    err = desk.error("refund_order", order_id="O-9001", amount=40.01, reason="too much")
    assert err.status == 422
    assert "40.00" in err.message and "O-9001" in err.message
    assert len(desk.created("Refund")) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("pending", 412),
        ("processing", 412),
        ("shipped", 412),
        ("cancelled", 409),
        ("refunded", 409),
    ],
)
def test_only_delivered_orders_are_refundable(desk: Desk, status: str, code: int) -> None:
    desk.order("O-9001", status, items={"P-9002": 1})
    err = desk.error("refund_order", order_id="O-9001", amount=5.0, reason="x")
    assert err.status == code and "O-9001" in err.message
    assert desk.changes() == 0


def test_unpaid_order_has_nothing_to_refund(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9002": 1}, delivered=-2, paid=False)
    assert desk.error("refund_order", order_id="O-9001", amount=5.0, reason="x").status == 412


def test_refund_of_unknown_order_is_404(desk: Desk) -> None:
    err = desk.error("refund_order", order_id="O-0000", amount=5.0, reason="x")
    assert err.status == 404 and "O-0000" in err.message


def _big_order(desk: Desk) -> None:
    desk.order("O-9001", "delivered", items={"P-9001": 8}, delivered=-5)  # 800.00


def _approval(
    desk: Desk, id: str, status: str, *, order: str = "O-9001", limit: float = 800.0
) -> None:
    desk.add(
        "Approval",
        id=id,
        order_id=order,
        amount_limit=limit,
        status=status,
        created_at="2026-01-14T10:00:00Z",
    )


def test_refund_above_500_without_approval_is_forbidden(desk: Desk) -> None:
    _big_order(desk)
    err = desk.error("refund_order", order_id="O-9001", amount=500.01, reason="x")
    assert err.status == 403 and "O-9001" in err.message
    assert desk.call("refund_order", order_id="O-9001", amount=500.0, reason="x")["refund"]


@pytest.mark.parametrize(
    ("status", "order", "limit"),
    [
        ("pending", "O-9001", 800.0),
        ("rejected", "O-9001", 800.0),
        ("approved", "O-9002", 800.0),
        ("approved", "O-9001", 600.0),
    ],
    ids=["pending", "rejected", "other-order", "below-amount"],
)
def test_approval_must_be_approved_for_this_order_and_amount(
    desk: Desk, status: str, order: str, limit: float
) -> None:
    _big_order(desk)
    desk.order("O-9002", "delivered", items={"P-9001": 8}, delivered=-5)
    _approval(desk, "APR-9001", status, order=order, limit=limit)
    err = desk.error(
        "refund_order", order_id="O-9001", amount=800.0, reason="x", approval_id="APR-9001"
    )
    assert err.status == 403 and "APR-9001" in err.message
    assert desk.changes() == 0


def test_unknown_approval_is_404(desk: Desk) -> None:
    _big_order(desk)
    err = desk.error(
        "refund_order", order_id="O-9001", amount=800.0, reason="x", approval_id="APR-0000"
    )
    assert err.status == 404 and "APR-0000" in err.message


def test_approved_large_refund_goes_through_and_records_the_approval(desk: Desk) -> None:
    _big_order(desk)
    _approval(desk, "APR-9001", "approved")
    out = desk.call(
        "refund_order", order_id="O-9001", amount=800.0, reason="x", approval_id="APR-9001"
    )
    assert out["refund"]["approval_id"] == "APR-9001"
    assert desk.get("Order", "O-9001")["status"] == "refunded"


def test_request_refund_approval_starts_pending(desk: Desk) -> None:
    _big_order(desk)
    approval = desk.call(
        "request_refund_approval", order_id="O-9001", amount=800.0, justification="x"
    )
    assert approval["status"] == "pending" and approval["order_id"] == "O-9001"
    err = desk.error(
        "refund_order", order_id="O-9001", amount=800.0, reason="x", approval_id=approval["id"]
    )
    assert err.status == 403


def test_account_credit_raises_balance_and_posts_ledger_entry(desk: Desk) -> None:
    out = desk.call(
        "apply_account_credit", customer_id="C-9001", amount=20.0, reason="late delivery"
    )
    assert out["account_credit"] == 30.0
    assert desk.get("Customer", "C-9001")["account_credit"] == 30.0
    [entry] = desk.created("LedgerEntry")
    assert (entry["customer_id"], entry["kind"], entry["amount"]) == (
        "C-9001",
        "account_credit",
        20.0,
    )


@pytest.mark.parametrize(("amount", "code"), [(0.0, 422), (250.01, 403)])
def test_account_credit_limits(desk: Desk, amount: float, code: int) -> None:
    err = desk.error("apply_account_credit", customer_id="C-9001", amount=amount, reason="x")
    assert err.status == code
    assert desk.changes() == 0


def test_account_credit_for_closed_customer_is_refused(desk: Desk) -> None:
    desk.world.update("Customer", "C-9001", {"status": "closed"}, now=0.0)
    assert (
        desk.error("apply_account_credit", customer_id="C-9001", amount=5.0, reason="x").status
        == 412
    )


@settings(max_examples=2000)
@given(st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10**12, 10**12).map(lambda k: k / 100),
    st.integers(-10**12, 10**12).map(lambda k: math.nextafter(k / 100, math.inf)),
    st.integers(-10**12, 10**12).map(lambda k: math.nextafter(k / 100, -math.inf)),
))
def test_money_is_round_to_cents_bit_for_bit(value: float) -> None:
    """``money``'s shortcut for whole cents answers exactly what ``round(x, 2)`` answers."""
    from tools_mock.acme.common import money

    expected = round(float(value) + 0.0, 2)
    got = money(value)
    assert struct.pack("<d", got) == struct.pack("<d", expected) or (
        math.isnan(got) and math.isnan(expected))
