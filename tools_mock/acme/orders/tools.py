"""Orders & catalog tools: browse products, read orders, cancel and re-address orders."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..billing.payments import open_invoice, void_open_invoices
from ..billing.tools import post_ledger_entry
from ..common import ORDERS, money, now_iso, text, today_iso
from ..inventory.tools import release_reservations, reserve
from .models import Order, Product

CANCELLABLE = ("pending", "processing")


@tool(
    kind="write",
    system="orders",
    entities=[
        "Order",
        "Product",
        "CreditNote",
        "LedgerEntry",
        "Reservation",
        "StockLevel",
        "Invoice",
    ],
    latency=ORDERS.write,
    capacity=ORDERS.capacity,
)
def cancel_order(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to cancel, e.g. O-1001."),
    reason: str = Field(description="Why the order is cancelled; kept on the credit note."),
) -> dict[str, Any]:
    """Cancel an order that has not shipped yet (status pending or processing). The ordered
    units go back into stock (the warehouse reservations are released), an open invoice is
    voided, and when the order was paid a credit note for its total is issued to the customer.
    Returns the cancelled order, the stock released and the credit note."""
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
    release_reservations(ctx, order_id, restock_catalog=False)
    void_open_invoices(ctx, order_id)
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


class OrderLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product_id: str
    quantity: int = Field(gt=0, le=50)


def _free_at(ctx: ToolContext, product_id: str, quantity: int) -> str | None:
    """The first active warehouse (by id) with ``quantity`` free units of the product."""
    active = {w["id"] for w in ctx.rows("Warehouse") if w["status"] == "active"}
    best = None
    for level in ctx.rows("StockLevel"):
        if (
            level["product_id"] == product_id
            and level["warehouse_id"] in active
            and level["on_hand"] - level["reserved"] >= quantity
            and (best is None or level["warehouse_id"] < best)
        ):
            best = level["warehouse_id"]
    return best


@tool(
    kind="write",
    system="orders",
    entities=["Customer", "Order", "Product", "Reservation", "StockLevel", "Invoice"],
    latency=ORDERS.write,
    capacity=ORDERS.capacity,
)
def place_order(
    ctx: ToolContext,
    customer_id: str = Field(description="The active Customer ordering."),
    items: list[OrderLine] = Field(description="Lines: product_id and quantity (1-50)."),
    shipping_address: str | None = Field(None, description="Defaults to the account address."),
) -> dict[str, Any]:
    """Place an order at list prices. Every line is reserved in one active warehouse that has
    enough free units (409 when none has), and an open invoice is raised for the total. The
    order starts pending until payment is recorded. Returns the Order, its reservations and
    the invoice."""
    customer = ctx.require("Customer", customer_id)
    if customer["status"] != "active":
        raise ToolError.precondition(f"Customer {customer_id} is {customer['status']}")
    if not items:
        raise ToolError.invalid("items", "an order needs at least one line")
    ids = [line.product_id for line in items]
    if len(set(ids)) != len(ids):
        raise ToolError.invalid("items", "list each product once")
    lines, plan = [], []
    for line in items:
        product = ctx.require("Product", line.product_id)
        warehouse = _free_at(ctx, line.product_id, line.quantity)
        if warehouse is None:
            raise ToolError.conflict(
                f"no warehouse has {line.quantity} free units of {line.product_id}"
            )
        lines.append(
            {"product_id": product["id"], "quantity": line.quantity, "unit_price": product["price"]}
        )
        plan.append((line.product_id, warehouse, line.quantity))
    address = text("shipping_address", shipping_address or customer["address"])
    total = money(sum(i["unit_price"] * i["quantity"] for i in lines))
    order = ctx.insert(
        "Order",
        {
            "customer_id": customer_id,
            "status": "pending",
            "items": lines,
            "total": total,
            "paid": False,
            "placed_at": today_iso(ctx),
            "shipping_address": address,
        },
    )
    held = [reserve(ctx, order["id"], p, w, q) for p, w, q in plan]
    invoice = open_invoice(ctx, order["id"], customer_id, total)
    return {"order": order, "reservations": held, "invoice": invoice}


TOOLS = [
    *crud_tools(
        EntitySchema.of(Product),
        ops=["get", "list", "search", "update"],
        system="orders",
        **ORDERS.crud(),
    ),
    *crud_tools(EntitySchema.of(Order), ops=["get", "list"], system="orders", **ORDERS.crud()),
    place_order,
    cancel_order,
    update_shipping_address,
]
