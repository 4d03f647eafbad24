"""Orders & catalog tools: browse products, read orders, cancel and re-address orders."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..billing.tools import post_ledger_entry
from ..common import ORDERS, money, now_iso
from .models import Order, Product

CANCELLABLE = ("pending", "processing")


@tool(
    kind="write",
    system="orders",
    entities=["Order", "Product", "CreditNote", "LedgerEntry"],
    latency=ORDERS.write,
    capacity=ORDERS.capacity,
)
def cancel_order(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to cancel, e.g. O-1001."),
    reason: str = Field(description="Why the order is cancelled; kept on the credit note."),
) -> dict[str, Any]:
    """Cancel an order that has not shipped yet (status pending or processing). The ordered
    units go back into stock, and when the order was paid a credit note for its total is issued
    to the customer. Returns the cancelled order, the stock released and the credit note."""
    order = ctx.require("Order", order_id)
    status = order["status"]
    if status in ("cancelled", "refunded"):
        raise ToolError.conflict(f"Order {order_id} is already {status}")
    if status not in CANCELLABLE:
        raise ToolError.precondition(
            f"Order {order_id} is {status}; only pending or processing orders can be cancelled"
        )
    if not reason.strip():
        raise ToolError.invalid("reason", "a cancellation reason is required")
    released = []
    for item in order["items"]:
        product = ctx.get("Product", item["product_id"])
        if product is None:
            continue
        stock = product["stock"] + int(item["quantity"])
        ctx.update("Product", product["id"], {"stock": stock})
        released.append({"product_id": product["id"], "quantity": item["quantity"], "stock": stock})
    updated = ctx.update("Order", order_id, {"status": "cancelled"})
    credit_note = None
    if order["paid"]:
        amount = money(order["total"])
        credit_note = ctx.insert(
            "CreditNote",
            {
                "order_id": order_id,
                "customer_id": order["customer_id"],
                "amount": amount,
                "reason": reason.strip(),
                "created_at": now_iso(ctx),
            },
        )
        post_ledger_entry(
            ctx, order["customer_id"], order_id, "credit_note", amount, credit_note["id"]
        )
    return {"order": updated, "released": released, "credit_note": credit_note}


@tool(
    kind="write",
    system="orders",
    entities=["Order"],
    latency=ORDERS.write,
    capacity=ORDERS.capacity,
)
def update_shipping_address(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to re-address, e.g. O-1001."),
    shipping_address: str = Field(description="Full postal address: street, city, state, ZIP."),
) -> dict[str, Any]:
    """Change where an order will be delivered. Only possible before the order ships (status
    pending or processing). Returns the updated order."""
    order = ctx.require("Order", order_id)
    status = order["status"]
    if status in ("cancelled", "refunded"):
        raise ToolError.conflict(f"Order {order_id} is {status}; its address cannot be changed")
    if status not in CANCELLABLE:
        raise ToolError.precondition(
            f"Order {order_id} is {status}; the shipping address can only change before shipment"
        )
    address = shipping_address.strip()
    if len(address) < 10 or not any(ch.isdigit() for ch in address):
        raise ToolError.invalid(
            "shipping_address", "shipping_address must be a full postal address"
        )
    return ctx.update("Order", order_id, {"shipping_address": address})


TOOLS = [
    *crud_tools(
        EntitySchema.of(Product),
        ops=["get", "list", "search", "update"],
        system="orders",
        **ORDERS.crud(),
    ),
    *crud_tools(EntitySchema.of(Order), ops=["get", "list"], system="orders", **ORDERS.crud()),
    cancel_order,
    update_shipping_address,
]
