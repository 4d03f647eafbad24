"""Inventory tools: where stock is, reserving it for orders, releasing it, moving it between
warehouses and correcting counts."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import INVENTORY, now_iso, reads, text
from ..iam.tools import require_permission
from .models import Reservation, StockAdjustment, StockLevel, StockTransfer, Warehouse

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "inventory",
    "latency": INVENTORY.write,
    "capacity": INVENTORY.capacity,
}
LARGE_ADJUSTMENT = 20
"""Adjustments of more units than this need the stock.adjust_large permission."""


def stock_level(ctx: ToolContext, product_id: str, warehouse_id: str) -> dict[str, Any] | None:
    found = ctx.find(
        "StockLevel", lambda s: s["product_id"] == product_id and s["warehouse_id"] == warehouse_id
    )
    return found[0] if found else None


def _require_level(ctx: ToolContext, product_id: str, warehouse_id: str) -> dict[str, Any]:
    ctx.require("Product", product_id)
    ctx.require("Warehouse", warehouse_id)
    level = stock_level(ctx, product_id, warehouse_id)
    if level is None:
        raise ToolError.not_found("StockLevel", f"{product_id} at {warehouse_id}")
    return level


def _move_sellable(ctx: ToolContext, product_id: str, delta: int) -> None:
    product = ctx.get("Product", product_id)
    if product is not None:
        ctx.update("Product", product_id, {"stock": max(product["stock"] + delta, 0)})


def reserve(
    ctx: ToolContext, order_id: str, product_id: str, warehouse_id: str, quantity: int
) -> dict[str, Any]:
    """Hold ``quantity`` units at a warehouse for an order (409 when not enough are free)."""
    level = _require_level(ctx, product_id, warehouse_id)
    if ctx.require("Warehouse", warehouse_id)["status"] != "active":
        raise ToolError.precondition(f"Warehouse {warehouse_id} is not active")
    free = level["on_hand"] - level["reserved"]
    if quantity > free:
        raise ToolError.conflict(
            f"only {free} units of {product_id} are free at {warehouse_id}, {quantity} asked"
        )
    ctx.update("StockLevel", level["id"], {"reserved": level["reserved"] + quantity})
    _move_sellable(ctx, product_id, -quantity)
    return ctx.insert(
        "Reservation",
        {
            "order_id": order_id,
            "product_id": product_id,
            "warehouse_id": warehouse_id,
            "quantity": quantity,
            "created_at": now_iso(ctx),
        },
    )


def release_reservations(ctx: ToolContext, order_id: str, *, restock_catalog: bool) -> list[Any]:
    """Release every active reservation of an order; returns the released rows."""
    released = []
    for res in ctx.find(
        "Reservation", lambda r: r["order_id"] == order_id and r["status"] == "active"
    ):
        level = stock_level(ctx, res["product_id"], res["warehouse_id"])
        if level is not None:
            reserved = max(level["reserved"] - res["quantity"], 0)
            ctx.update("StockLevel", level["id"], {"reserved": reserved})
        if restock_catalog:
            _move_sellable(ctx, res["product_id"], res["quantity"])
        released.append(ctx.update("Reservation", res["id"], {"status": "released"}))
    return released


@tool(
    kind="read",
    system="inventory",
    entities=["Product", "StockLevel", "Warehouse"],
    latency=INVENTORY.read,
    capacity=INVENTORY.capacity,
)
def check_availability(
    ctx: ToolContext, product_id: str = Field(description="The Product, e.g. P-0001.")
) -> dict[str, Any]:
    """Free units of a product in every warehouse (on hand less reserved), and the total."""
    ctx.require("Product", product_id)
    rows = []
    for level in ctx.rows("StockLevel"):
        if level["product_id"] == product_id:
            warehouse = ctx.get("Warehouse", level["warehouse_id"])
            rows.append(
                {
                    "warehouse_id": level["warehouse_id"],
                    "warehouse_status": warehouse["status"] if warehouse else "unknown",
                    "on_hand": level["on_hand"],
                    "reserved": level["reserved"],
                    "free": level["on_hand"] - level["reserved"],
                }
            )
    rows.sort(key=lambda r: r["warehouse_id"])
    return {
        "product_id": product_id,
        "warehouses": rows,
        "total_free": sum(r["free"] for r in rows),
    }


@tool(entities=["Order", "Product", "StockLevel", "Reservation"], **_WRITE)
def reserve_stock(
    ctx: ToolContext,
    order_id: str = Field(description="The pending or processing Order."),
    product_id: str = Field(description="A Product on the order."),
    warehouse_id: str = Field(description="The active Warehouse to take it from."),
    quantity: int = Field(gt=0, description="Units to hold."),
) -> dict[str, Any]:
    """Hold units at a warehouse for an unshipped order (409 when not enough are free there).
    Returns the Reservation."""
    order = ctx.require("Order", order_id)
    if order["status"] not in ("pending", "processing"):
        raise ToolError.precondition(f"Order {order_id} is {order['status']}")
    ordered = sum(i["quantity"] for i in order["items"] if i["product_id"] == product_id)
    if ordered == 0:
        raise ToolError.invalid("product_id", f"{product_id} is not on Order {order_id}")
    held = sum(
        r["quantity"]
        for r in ctx.rows("Reservation")
        if r["order_id"] == order_id and r["product_id"] == product_id and r["status"] == "active"
    )
    if held + quantity > ordered:
        raise ToolError.invalid(
            "quantity", f"Order {order_id} has {ordered} of {product_id}, {held} already held"
        )
    return reserve(ctx, order_id, product_id, warehouse_id, quantity)


@tool(entities=["Product", "StockLevel", "Reservation"], **_WRITE)
def release_reservation(
    ctx: ToolContext, reservation_id: str = Field(description="An active Reservation.")
) -> dict[str, Any]:
    """Give the units of an active reservation back to sellable stock. Returns it."""
    res = ctx.require("Reservation", reservation_id)
    if res["status"] != "active":
        raise ToolError.conflict(f"Reservation {reservation_id} is {res['status']}")
    level = stock_level(ctx, res["product_id"], res["warehouse_id"])
    if level is not None:
        ctx.update(
            "StockLevel", level["id"], {"reserved": max(level["reserved"] - res["quantity"], 0)}
        )
    _move_sellable(ctx, res["product_id"], res["quantity"])
    return ctx.update("Reservation", reservation_id, {"status": "released"})


@tool(entities=["StockLevel", "StockTransfer", "Warehouse"], **_WRITE)
def transfer_stock(
    ctx: ToolContext,
    product_id: str = Field(description="The Product to move."),
    from_warehouse_id: str = Field(description="Where the units leave."),
    to_warehouse_id: str = Field(description="Where they arrive."),
    quantity: int = Field(gt=0, description="Units to move."),
    reason: str = Field("", description="Why; kept on the transfer."),
) -> dict[str, Any]:
    """Move free (unreserved) units between two active warehouses. Returns the StockTransfer
    and both stock levels."""
    if from_warehouse_id == to_warehouse_id:
        raise ToolError.invalid("to_warehouse_id", "source and destination are the same")
    source = _require_level(ctx, product_id, from_warehouse_id)
    for wh in (from_warehouse_id, to_warehouse_id):
        if ctx.require("Warehouse", wh)["status"] != "active":
            raise ToolError.precondition(f"Warehouse {wh} is not active")
    free = source["on_hand"] - source["reserved"]
    if quantity > free:
        raise ToolError.precondition(
            f"only {free} free units of {product_id} at {from_warehouse_id}, {quantity} asked"
        )
    target = stock_level(ctx, product_id, to_warehouse_id)
    src = ctx.update("StockLevel", source["id"], {"on_hand": source["on_hand"] - quantity})
    if target is None:
        dst = ctx.insert(
            "StockLevel",
            {"product_id": product_id, "warehouse_id": to_warehouse_id, "on_hand": quantity},
        )
    else:
        dst = ctx.update("StockLevel", target["id"], {"on_hand": target["on_hand"] + quantity})
    move = ctx.insert(
        "StockTransfer",
        {
            "product_id": product_id,
            "from_warehouse_id": from_warehouse_id,
            "to_warehouse_id": to_warehouse_id,
            "quantity": quantity,
            "reason": reason.strip(),
            "created_at": now_iso(ctx),
        },
    )
    return {"transfer": move, "from": src, "to": dst}


@tool(entities=["Product", "StockLevel", "StockAdjustment", "User"], **_WRITE)
def adjust_stock(
    ctx: ToolContext,
    actor_id: str = Field(description="The User making the correction."),
    product_id: str = Field(description="The Product counted."),
    warehouse_id: str = Field(description="The Warehouse counted."),
    delta: int = Field(description="Units to add (positive) or remove (negative)."),
    reason: str = Field(description="Why: cycle count, damage, loss..."),
) -> dict[str, Any]:
    """Correct on-hand units after a count, damage or loss. Corrections of more than 20 units
    need the stock.adjust_large permission; reserved units cannot be removed. Returns the
    StockAdjustment and the stock level."""
    if delta == 0:
        raise ToolError.invalid("delta", "delta must not be 0")
    require_permission(ctx, actor_id, "stock.adjust")
    if abs(delta) > LARGE_ADJUSTMENT:
        require_permission(ctx, actor_id, "stock.adjust_large")
    level = _require_level(ctx, product_id, warehouse_id)
    on_hand = level["on_hand"] + delta
    if on_hand < level["reserved"]:
        raise ToolError.precondition(
            f"{warehouse_id} would hold {on_hand} units of {product_id} with "
            f"{level['reserved']} reserved"
        )
    updated = ctx.update("StockLevel", level["id"], {"on_hand": on_hand})
    _move_sellable(ctx, product_id, delta)
    adjustment = ctx.insert(
        "StockAdjustment",
        {
            "product_id": product_id,
            "warehouse_id": warehouse_id,
            "delta": delta,
            "reason": text("reason", reason),
            "actor_id": actor_id,
            "created_at": now_iso(ctx),
        },
    )
    return {"adjustment": adjustment, "stock_level": updated}


TOOLS = [
    *reads(Warehouse, ["get", "list"], "inventory", INVENTORY),
    *reads(StockLevel, ["list"], "inventory", INVENTORY),
    check_availability,
    *reads(Reservation, ["get", "list"], "inventory", INVENTORY),
    reserve_stock,
    release_reservation,
    *reads(StockTransfer, ["list"], "inventory", INVENTORY),
    transfer_stock,
    *reads(StockAdjustment, ["list"], "inventory", INVENTORY),
    adjust_stock,
]
