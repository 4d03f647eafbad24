"""Shipping tools: quotes, labels (which take reserved stock off the shelf), tracking,
delivery, and return authorisations (which put good units back into stock)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import SHIPPING, money, now_iso, parse_day, reads, text, today, today_iso
from ..inventory.tools import stock_level
from .models import (
    CARRIERS,
    SERVICES,
    Carrier,
    ReturnCondition,
    ReturnRequest,
    Shipment,
    ShippingService,
)

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "shipping",
    "latency": SHIPPING.write,
    "capacity": SHIPPING.capacity,
}
_READ: dict[str, Any] = {
    "kind": "read",
    "system": "shipping",
    "latency": SHIPPING.read,
    "capacity": SHIPPING.capacity,
}
RETURN_WINDOW_DAYS = 30
_RATES = {"ground": (6.99, 0.8, 5), "express": (14.99, 1.4, 2), "overnight": (29.99, 2.2, 1)}


class ReturnItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product_id: str
    quantity: int = Field(gt=0)


def _order_units(order: dict[str, Any]) -> int:
    return sum(int(i["quantity"]) for i in order["items"])


@tool(entities=["Order"], **_READ)
def get_shipping_quote(
    ctx: ToolContext,
    order_id: str = Field(description="The Order to ship."),
    service: ShippingService = "ground",
) -> dict[str, Any]:
    """Price and transit days of shipping an order with a service level."""
    order = ctx.require("Order", order_id)
    if service not in SERVICES:
        raise ToolError.invalid("service", f"service {service!r} is not one of {list(SERVICES)}")
    base, per_unit, days = _RATES[service]
    return {
        "order_id": order_id,
        "service": service,
        "price": money(base + per_unit * _order_units(order)),
        "transit_days": days,
    }


@tool(entities=["Shipment"], **_READ)
def track_shipment(
    ctx: ToolContext, tracking_number: str = Field(description="The carrier's tracking number.")
) -> dict[str, Any]:
    """A shipment's carrier status and scan history, by tracking number."""
    for shipment in ctx.rows("Shipment"):
        if shipment["tracking_number"] == tracking_number.strip():
            return {
                "shipment_id": shipment["id"],
                "order_id": shipment["order_id"],
                "carrier": shipment["carrier"],
                "status": shipment["status"],
                "events": shipment["events"],
            }
    raise ToolError.not_found("Shipment", tracking_number)


@tool(entities=["Order", "Shipment", "Reservation", "StockLevel"], **_WRITE)
def create_shipment(
    ctx: ToolContext,
    order_id: str = Field(description="A paid Order in processing."),
    warehouse_id: str = Field(description="The Warehouse holding the order's reservations."),
    carrier: Carrier = Field(description="Who carries the parcel."),
    service: ShippingService = "ground",
) -> dict[str, Any]:
    """Buy a label and hand a paid, processing order to the carrier from one warehouse. Every
    line must be reserved at that warehouse; the reserved units leave the shelf and the order
    becomes shipped. Returns the Shipment."""
    order = ctx.require("Order", order_id)
    ctx.require("Warehouse", warehouse_id)
    if carrier not in CARRIERS:
        raise ToolError.invalid("carrier", f"carrier {carrier!r} is not one of {list(CARRIERS)}")
    if service not in SERVICES:
        raise ToolError.invalid("service", f"service {service!r} is not one of {list(SERVICES)}")
    if order["status"] != "processing":
        raise ToolError.precondition(f"Order {order_id} is {order['status']}, not processing")
    if not order["paid"]:
        raise ToolError.precondition(f"Order {order_id} has no captured payment")
    held = ctx.find(
        "Reservation",
        lambda r: (
            r["order_id"] == order_id
            and r["status"] == "active"
            and r["warehouse_id"] == warehouse_id
        ),
    )
    for item in order["items"]:
        have = sum(r["quantity"] for r in held if r["product_id"] == item["product_id"])
        if have < item["quantity"]:
            raise ToolError.precondition(
                f"{item['product_id']} of Order {order_id} is not reserved at {warehouse_id} "
                f"({have} of {item['quantity']})"
            )
    for res in held:
        level = stock_level(ctx, res["product_id"], warehouse_id)
        if level is not None:
            ctx.update(
                "StockLevel",
                level["id"],
                {
                    "on_hand": level["on_hand"] - res["quantity"],
                    "reserved": max(level["reserved"] - res["quantity"], 0),
                },
            )
        ctx.update("Reservation", res["id"], {"status": "fulfilled"})
    ctx.update("Order", order_id, {"status": "shipped"})
    number = f"{carrier[:2].upper()}{ctx.rng.randrange(10**9, 10**10)}"
    return ctx.insert(
        "Shipment",
        {
            "order_id": order_id,
            "warehouse_id": warehouse_id,
            "carrier": carrier,
            "service": service,
            "tracking_number": number,
            "events": [{"at": now_iso(ctx), "status": "label_created", "location": warehouse_id}],
            "shipped_at": now_iso(ctx),
        },
    )


@tool(entities=["Order", "Shipment"], **_WRITE)
def mark_shipment_delivered(
    ctx: ToolContext, shipment_id: str = Field(description="A Shipment on its way.")
) -> dict[str, Any]:
    """Record a carrier's proof of delivery: the shipment and its order become delivered.
    Returns the Shipment."""
    shipment = ctx.require("Shipment", shipment_id)
    if shipment["status"] == "delivered":
        raise ToolError.conflict(f"Shipment {shipment_id} is already delivered")
    if shipment["status"] not in ("label_created", "in_transit"):
        raise ToolError.precondition(f"Shipment {shipment_id} is {shipment['status']}")
    day = today_iso(ctx)
    event = {"at": now_iso(ctx), "status": "delivered", "location": "recipient"}
    ctx.update("Order", shipment["order_id"], {"status": "delivered", "delivered_at": day})
    return ctx.update(
        "Shipment",
        shipment_id,
        {"status": "delivered", "delivered_at": day, "events": [*shipment["events"], event]},
    )


@tool(entities=["Order", "ReturnRequest"], **_WRITE)
def create_return(
    ctx: ToolContext,
    order_id: str = Field(description="A delivered Order."),
    items: list[ReturnItem] = Field(description="What comes back: product_id and quantity."),
    reason: str = Field(description="Why the customer returns it."),
) -> dict[str, Any]:
    """Authorise a return (RMA) of some units of a delivered order, at most 30 days after
    delivery and at most the units ordered. One open return per order. Returns the
    ReturnRequest."""
    order = ctx.require("Order", order_id)
    if order["status"] != "delivered":
        raise ToolError.precondition(f"Order {order_id} is {order['status']}, not delivered")
    delivered = parse_day(order["delivered_at"] or order["placed_at"])
    closes = delivered + timedelta(days=RETURN_WINDOW_DAYS)
    if today(ctx) > closes:
        raise ToolError.precondition(
            f"Order {order_id} was delivered on {delivered.isoformat()}; its return window "
            f"closed on {closes.isoformat()}"
        )
    if not items:
        raise ToolError.invalid("items", "name at least one item")
    ordered = {i["product_id"]: int(i["quantity"]) for i in order["items"]}
    for item in items:
        if item.quantity > ordered.get(item.product_id, 0):
            raise ToolError.invalid(
                "items",
                f"Order {order_id} has {ordered.get(item.product_id, 0)} of {item.product_id}",
            )
    for other in ctx.rows("ReturnRequest"):
        if other["order_id"] == order_id and other["status"] == "authorized":
            raise ToolError.conflict(f"ReturnRequest {other['id']} for {order_id} is open")
    return ctx.insert(
        "ReturnRequest",
        {
            "order_id": order_id,
            "customer_id": order["customer_id"],
            "items": [i.model_dump() for i in items],
            "reason": text("reason", reason),
            "created_at": now_iso(ctx),
        },
    )


@tool(entities=["ReturnRequest", "StockLevel", "Product", "Warehouse"], **_WRITE)
def receive_return(
    ctx: ToolContext,
    return_id: str = Field(description="An authorized ReturnRequest."),
    warehouse_id: str = Field(description="The Warehouse that received the parcel."),
    condition: ReturnCondition = Field(
        description="good goes back to stock; damaged is written off."
    ),
) -> dict[str, Any]:
    """Check in a returned parcel. Units in good condition go back on the shelf and become
    sellable again. Returns the ReturnRequest and the value of the returned units, which
    billing may refund."""
    rma = ctx.require("ReturnRequest", return_id)
    if rma["status"] != "authorized":
        raise ToolError.conflict(f"ReturnRequest {return_id} is {rma['status']}")
    if ctx.require("Warehouse", warehouse_id)["status"] != "active":
        raise ToolError.precondition(f"Warehouse {warehouse_id} is not active")
    if condition not in ("good", "damaged"):
        raise ToolError.invalid("condition", "condition is good or damaged")
    order = ctx.require("Order", rma["order_id"])
    prices = {i["product_id"]: i["unit_price"] for i in order["items"]}
    value = money(sum(prices.get(i["product_id"], 0.0) * i["quantity"] for i in rma["items"]))
    if condition == "good":
        for item in rma["items"]:
            level = stock_level(ctx, item["product_id"], warehouse_id)
            if level is None:
                ctx.insert(
                    "StockLevel",
                    {
                        "product_id": item["product_id"],
                        "warehouse_id": warehouse_id,
                        "on_hand": item["quantity"],
                    },
                )
            else:
                ctx.update(
                    "StockLevel", level["id"], {"on_hand": level["on_hand"] + item["quantity"]}
                )
            product = ctx.get("Product", item["product_id"])
            if product is not None:
                ctx.update("Product", product["id"], {"stock": product["stock"] + item["quantity"]})
    updated = ctx.update(
        "ReturnRequest",
        return_id,
        {
            "status": "received",
            "condition": condition,
            "warehouse_id": warehouse_id,
            "received_at": now_iso(ctx),
        },
    )
    return {"return": updated, "returned_value": value}


@tool(entities=["ReturnRequest"], **_WRITE)
def cancel_return(
    ctx: ToolContext, return_id: str = Field(description="An authorized ReturnRequest.")
) -> dict[str, Any]:
    """Cancel a return authorisation that has not been received. Returns it."""
    rma = ctx.require("ReturnRequest", return_id)
    if rma["status"] != "authorized":
        raise ToolError.conflict(f"ReturnRequest {return_id} is {rma['status']}")
    return ctx.update("ReturnRequest", return_id, {"status": "cancelled"})


TOOLS = [
    *reads(Shipment, ["get", "list"], "shipping", SHIPPING),
    track_shipment,
    get_shipping_quote,
    create_shipment,
    mark_shipment_delivered,
    *reads(ReturnRequest, ["get", "list"], "shipping", SHIPPING),
    create_return,
    receive_return,
    cancel_return,
]
