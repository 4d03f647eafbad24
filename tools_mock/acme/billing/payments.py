"""Billing tools for money coming in and going out beyond refunds: payments against invoices,
voiding invoices, manual credit notes, and a customer's balance."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import BILLING, money, now_iso, reads, text, today_iso
from .models import Payment, PaymentMethod
from .tools import post_ledger_entry, refunded_so_far

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "billing",
    "latency": BILLING.write,
    "capacity": BILLING.capacity,
}
METHODS: tuple[str, ...] = get_args(PaymentMethod)
_CENT = 0.005


def open_invoice(
    ctx: ToolContext, order_id: str, customer_id: str, amount: float
) -> dict[str, Any]:
    """Raise the invoice of a new order."""
    return ctx.insert(
        "Invoice",
        {
            "order_id": order_id,
            "customer_id": customer_id,
            "amount": money(amount),
            "status": "open",
            "issued_at": today_iso(ctx),
        },
    )


def void_open_invoices(ctx: ToolContext, order_id: str) -> list[dict[str, Any]]:
    return [
        ctx.update("Invoice", inv["id"], {"status": "void"})
        for inv in ctx.find(
            "Invoice", lambda i: i["order_id"] == order_id and i["status"] == "open"
        )
    ]


@tool(entities=["Invoice", "Payment", "Order", "Customer"], **_WRITE)
def record_payment(
    ctx: ToolContext,
    invoice_id: str = Field(description="An open Invoice."),
    amount: float = Field(description="Amount captured; must equal the invoice amount."),
    method: PaymentMethod = "card",
) -> dict[str, Any]:
    """Capture payment of an open invoice in full. Store credit is drawn from the customer's
    balance. The invoice becomes paid, and its order paid (a pending order moves to
    processing). Returns the Payment and the order's status."""
    invoice = ctx.require("Invoice", invoice_id)
    if invoice["status"] == "paid":
        raise ToolError.conflict(f"Invoice {invoice_id} is already paid")
    if invoice["status"] != "open":
        raise ToolError.precondition(f"Invoice {invoice_id} is {invoice['status']}")
    if method not in METHODS:
        raise ToolError.invalid("method", f"method {method!r} is not one of {list(METHODS)}")
    amount = money(amount)
    if abs(amount - invoice["amount"]) > _CENT:
        raise ToolError.invalid(
            "amount", f"Invoice {invoice_id} is for {invoice['amount']:.2f}, not {amount:.2f}"
        )
    if method == "store_credit":
        customer = ctx.require("Customer", invoice["customer_id"])
        if customer["account_credit"] + _CENT < amount:
            raise ToolError.precondition(
                f"Customer {customer['id']} has {customer['account_credit']:.2f} of store credit"
            )
        ctx.update(
            "Customer",
            customer["id"],
            {"account_credit": money(customer["account_credit"] - amount)},
        )
    payment = ctx.insert(
        "Payment",
        {
            "invoice_id": invoice_id,
            "order_id": invoice["order_id"],
            "customer_id": invoice["customer_id"],
            "amount": amount,
            "method": method,
            "created_at": now_iso(ctx),
        },
    )
    ctx.update("Invoice", invoice_id, {"status": "paid"})
    order = ctx.get("Order", invoice["order_id"])
    status = None
    if order is not None:
        changes: dict[str, Any] = {"paid": True}
        if order["status"] == "pending":
            changes["status"] = "processing"
        status = ctx.update("Order", order["id"], changes)["status"]
    return {"payment": payment, "order_status": status}


@tool(entities=["Invoice", "Payment"], **_WRITE)
def void_invoice(
    ctx: ToolContext,
    invoice_id: str = Field(description="An open Invoice."),
    reason: str = Field(description="Why the invoice is withdrawn."),
) -> dict[str, Any]:
    """Withdraw an open invoice that was raised in error. Paid invoices cannot be voided (refund
    or credit them instead). Returns the Invoice."""
    invoice = ctx.require("Invoice", invoice_id)
    text("reason", reason)
    if invoice["status"] == "void":
        raise ToolError.conflict(f"Invoice {invoice_id} is already void")
    if invoice["status"] == "paid":
        raise ToolError.precondition(f"Invoice {invoice_id} is paid; issue a refund instead")
    return ctx.update("Invoice", invoice_id, {"status": "void"})


@tool(entities=["Order", "CreditNote", "LedgerEntry"], **_WRITE)
def issue_credit_note(
    ctx: ToolContext,
    order_id: str = Field(description="A paid Order."),
    amount: float = Field(description="Amount to credit, in USD."),
    reason: str = Field(description="Why; kept on the credit note."),
) -> dict[str, Any]:
    """Credit part of a paid order's invoice (a price adjustment, a missing accessory), up to
    what has not been refunded or credited yet. Returns the CreditNote."""
    order = ctx.require("Order", order_id)
    if not order["paid"]:
        raise ToolError.precondition(f"Order {order_id} has no captured payment")
    amount = money(amount)
    if amount <= 0:
        raise ToolError.invalid("amount", "amount must be greater than 0")
    credited = sum(c["amount"] for c in ctx.rows("CreditNote") if c["order_id"] == order_id)
    left = money(order["total"] - refunded_so_far(ctx, order_id) - credited)
    if amount > left + _CENT:
        raise ToolError.invalid("amount", f"at most {left:.2f} of Order {order_id} can be credited")
    note = ctx.insert(
        "CreditNote",
        {
            "order_id": order_id,
            "customer_id": order["customer_id"],
            "amount": amount,
            "reason": text("reason", reason),
            "created_at": now_iso(ctx),
        },
    )
    post_ledger_entry(ctx, order["customer_id"], order_id, "credit_note", amount, note["id"])
    return note


@tool(
    kind="read",
    system="billing",
    entities=["Customer", "Invoice", "LedgerEntry"],
    latency=BILLING.read,
    capacity=BILLING.capacity,
)
def get_customer_balance(
    ctx: ToolContext, customer_id: str = Field(description="The Customer, e.g. C-0001.")
) -> dict[str, Any]:
    """What a customer owes and is owed: open invoices, store credit, and ledger totals by kind."""
    customer = ctx.require("Customer", customer_id)
    owed = money(
        sum(
            i["amount"]
            for i in ctx.rows("Invoice")
            if i["customer_id"] == customer_id and i["status"] == "open"
        )
    )
    totals: dict[str, float] = {}
    for entry in ctx.rows("LedgerEntry"):
        if entry["customer_id"] == customer_id:
            totals[entry["kind"]] = money(totals.get(entry["kind"], 0.0) + entry["amount"])
    return {
        "customer_id": customer_id,
        "open_invoices_total": owed,
        "account_credit": customer["account_credit"],
        "ledger_totals": totals,
    }


PAYMENT_TOOLS = [
    *reads(Payment, ["get", "list"], "billing", BILLING),
    record_payment,
    void_invoice,
    issue_credit_note,
    get_customer_balance,
]
