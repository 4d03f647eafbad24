"""Billing tools: invoices, refunds, credit notes, approvals, account credit and the ledger."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..common import BILLING, money, now_iso, parse_day, today
from .models import Approval, CreditNote, Invoice, LedgerEntry, Refund

REFUND_WINDOW_DAYS = 30
APPROVAL_ABOVE = 500.00
CREDIT_LIMIT = 250.00
_CENT = 0.005


def post_ledger_entry(
    ctx: ToolContext,
    customer_id: str,
    order_id: str | None,
    kind: str,
    amount: float,
    reference: str,
) -> dict[str, Any]:
    """Record money owed to a customer; every refund, credit note and credit leaves one."""
    return ctx.insert(
        "LedgerEntry",
        {
            "customer_id": customer_id,
            "order_id": order_id,
            "kind": kind,
            "amount": money(amount),
            "reference": reference,
            "created_at": now_iso(ctx),
        },
    )


def refunded_so_far(ctx: ToolContext, order_id: str) -> float:
    return money(sum(r["amount"] for r in ctx.rows("Refund") if r["order_id"] == order_id))


def _check_refundable(ctx: ToolContext, order: dict[str, Any]) -> None:
    order_id = order["id"]
    status = order["status"]
    if status == "refunded":
        raise ToolError.conflict(f"Order {order_id} is already fully refunded")
    if status == "cancelled":
        raise ToolError.conflict(f"Order {order_id} is cancelled; it has nothing to refund")
    if status != "delivered":
        raise ToolError.precondition(
            f"Order {order_id} is {status}; only delivered orders can be refunded"
        )
    if not order["paid"]:
        raise ToolError.precondition(f"Order {order_id} has no captured payment to refund")
    delivered = parse_day(order["delivered_at"] or order["placed_at"])
    closes = delivered + timedelta(days=REFUND_WINDOW_DAYS)
    if today(ctx) > closes:
        raise ToolError.precondition(
            f"Order {order_id} was delivered on {delivered.isoformat()}; its refund window "
            f"closed on {closes.isoformat()}"
        )


def _check_approval(
    ctx: ToolContext, order_id: str, amount: float, approval_id: str | None
) -> None:
    if approval_id is None:
        raise ToolError.forbidden(
            f"refunds above {APPROVAL_ABOVE:.2f} need an approved approval_id "
            f"(Order {order_id}, amount {amount:.2f})"
        )
    approval = ctx.require("Approval", approval_id)
    if approval["kind"] != "refund" or approval["order_id"] != order_id:
        raise ToolError.forbidden(
            f"Approval {approval_id} does not cover a refund of Order {order_id}"
        )
    if approval["status"] != "approved":
        raise ToolError.forbidden(f"Approval {approval_id} is {approval['status']}, not approved")
    if amount > approval["amount_limit"] + _CENT:
        raise ToolError.forbidden(
            f"Approval {approval_id} covers at most {approval['amount_limit']:.2f}, "
            f"not {amount:.2f}"
        )


@tool(
    kind="write",
    system="billing",
    entities=["Order", "Refund", "LedgerEntry", "Approval"],
    latency=BILLING.write,
    capacity=BILLING.capacity,
)
def refund_order(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to refund, e.g. O-1001."),
    amount: float = Field(description="Amount to return, in USD."),
    reason: str = Field(description="Why the money is returned; kept on the Refund."),
    approval_id: str | None = Field(None, description="An approved refund Approval's id."),
) -> dict[str, Any]:
    """Refund part or all of a delivered, paid order to the original payment method.

    Refunds are accepted up to 30 days after delivery, for at most the order total less earlier
    refunds. A refund above 500.00 needs the id of an approved refund Approval for that order.
    When the order is refunded in full its status becomes refunded. Returns the Refund, the
    order's status and what is still refundable."""
    order = ctx.require("Order", order_id)
    amount = money(amount)
    if amount <= 0:
        raise ToolError.invalid("amount", f"amount must be greater than 0, got {amount:.2f}")
    _check_refundable(ctx, order)
    already = refunded_so_far(ctx, order_id)
    remaining = money(order["total"] - already)
    if amount > remaining + _CENT:
        raise ToolError.invalid(
            "amount",
            f"amount {amount:.2f} exceeds the refundable balance {remaining:.2f} of Order "
            f"{order_id} (total {order['total']:.2f}, refunded {already:.2f})",
        )
    if amount > APPROVAL_ABOVE + _CENT:
        _check_approval(ctx, order_id, amount, approval_id)
    elif approval_id is not None:
        ctx.require("Approval", approval_id)
    refund = ctx.insert(
        "Refund",
        {
            "order_id": order_id,
            "customer_id": order["customer_id"],
            "amount": amount,
            "reason": reason.strip(),
            "approval_id": approval_id,
            "created_at": now_iso(ctx),
        },
    )
    post_ledger_entry(ctx, order["customer_id"], order_id, "refund", amount, refund["id"])
    left = money(remaining - amount)
    status = order["status"]
    if left < _CENT:
        status = ctx.update("Order", order_id, {"status": "refunded"})["status"]
    return {"refund": refund, "order_status": status, "remaining_refundable": max(left, 0.0)}


@tool(
    kind="write",
    system="billing",
    entities=["Customer", "LedgerEntry"],
    latency=BILLING.write,
    capacity=BILLING.capacity,
)
def apply_account_credit(
    ctx: ToolContext,
    customer_id: str = Field(description="The Customer to credit, e.g. C-0001."),
    amount: float = Field(description="Store credit to add, in USD."),
    reason: str = Field(description="Why the credit is given; kept on the ledger entry."),
    order_id: str | None = Field(None, description="The Order the credit relates to, if any."),
) -> dict[str, Any]:
    """Add store credit to a customer's account (a goodwill gesture, not a refund). One credit
    may be at most 250.00. Returns the new balance and the ledger entry."""
    customer = ctx.require("Customer", customer_id)
    amount = money(amount)
    if amount <= 0:
        raise ToolError.invalid("amount", f"amount must be greater than 0, got {amount:.2f}")
    if amount > CREDIT_LIMIT + _CENT:
        raise ToolError.forbidden(
            f"a credit of {amount:.2f} exceeds the {CREDIT_LIMIT:.2f} limit for account credits"
        )
    if customer["status"] != "active":
        raise ToolError.precondition(f"Customer {customer_id} is {customer['status']}")
    if not reason.strip():
        raise ToolError.invalid("reason", "a reason is required")
    if order_id is not None and ctx.require("Order", order_id)["customer_id"] != customer_id:
        raise ToolError.invalid("order_id", f"Order {order_id} does not belong to {customer_id}")
    balance = money(customer["account_credit"] + amount)
    ctx.update("Customer", customer_id, {"account_credit": balance})
    entry = post_ledger_entry(ctx, customer_id, order_id, "account_credit", amount, reason.strip())
    return {"customer_id": customer_id, "account_credit": balance, "ledger_entry": entry}


@tool(
    kind="write",
    system="billing",
    entities=["Approval"],
    latency=BILLING.write,
    capacity=BILLING.capacity,
)
def request_refund_approval(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to be refunded."),
    amount: float = Field(description="The refund amount to approve, in USD."),
    justification: str = Field(description="Why the refund is warranted, for finance."),
) -> dict[str, Any]:
    """Ask finance to approve a refund above the self-service limit. The new Approval starts
    pending; finance decides later. Returns the Approval."""
    order = ctx.require("Order", order_id)
    amount = money(amount)
    if amount <= 0 or amount > order["total"] + _CENT:
        raise ToolError.invalid(
            "amount", f"amount must be between 0 and the order total {order['total']:.2f}"
        )
    if not justification.strip():
        raise ToolError.invalid("justification", "a justification is required")
    return ctx.insert(
        "Approval",
        {
            "kind": "refund",
            "order_id": order_id,
            "amount_limit": amount,
            "status": "pending",
            "requested_by": "support-agent",
            "created_at": now_iso(ctx),
        },
    )


def _reads(model: type, ops: list[str]) -> list[Any]:
    return crud_tools(EntitySchema.of(model), ops=ops, system="billing", **BILLING.crud())


TOOLS = [
    *_reads(Invoice, ["get", "list"]),
    *_reads(Refund, ["get", "list"]),
    *_reads(CreditNote, ["get", "list"]),
    *_reads(Approval, ["get", "list"]),
    *_reads(LedgerEntry, ["list"]),
    refund_order,
    apply_account_credit,
    request_refund_approval,
]
