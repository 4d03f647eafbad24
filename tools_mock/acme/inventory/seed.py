"""Seed the warehouses and split every product's sellable stock across them; orders not yet
shipped hold reservations, and shipped ones have fulfilled reservations."""

from __future__ import annotations

from typing import Any

from ..common import seq_ids, table_rng

Rows = list[dict[str, Any]]
WAREHOUSES = (
    ("Portland Fulfilment Center", "Portland, OR", "active"),
    ("Columbus Distribution Hub", "Columbus, OH", "active"),
    ("Reno Returns & Fulfilment", "Reno, NV", "active"),
    ("Allentown Overflow", "Allentown, PA", "maintenance"),
)


def warehouses() -> Rows:
    return [
        {"id": id, "name": name, "city": city, "status": status}
        for id, (name, city, status) in zip(
            seq_ids("WH-", len(WAREHOUSES), width=2), WAREHOUSES, strict=True
        )
    ]


def reservations(orders: Rows, warehouses: Rows) -> Rows:
    active = [w["id"] for w in warehouses if w["status"] == "active"]
    planned = []
    for n, o in enumerate(orders):
        if o["status"] in ("pending", "processing"):
            status = "active"
        elif o["status"] in ("shipped", "delivered", "refunded"):
            status = "fulfilled"
        else:
            continue
        for item in o["items"]:
            planned.append((o, item, active[n % len(active)], status))
    return [
        {
            "id": id,
            "order_id": o["id"],
            "product_id": item["product_id"],
            "warehouse_id": wh,
            "quantity": item["quantity"],
            "status": status,
            "created_at": f"{o['placed_at']}T12:00:00Z",
        }
        for id, (o, item, wh, status) in zip(
            seq_ids("RES-", len(planned), width=6), planned, strict=True
        )
    ]


def stock_levels(seed: int, products: Rows, warehouses: Rows, reservations: Rows) -> Rows:
    """On hand = sellable share + what active reservations hold, so that a product's catalog
    stock equals its free units summed over the warehouses."""
    rng = table_rng(seed, "StockLevel")
    held: dict[tuple[str, str], int] = {}
    for r in reservations:
        if r["status"] == "active":
            key = (r["product_id"], r["warehouse_id"])
            held[key] = held.get(key, 0) + r["quantity"]
    ids = [w["id"] for w in warehouses]
    planned = []
    for p in products:
        shares = [rng.random() for _ in ids]
        total = sum(shares) or 1.0
        left = p["stock"]
        for k, wh in enumerate(ids):
            free = left if k == len(ids) - 1 else min(left, int(p["stock"] * shares[k] / total))
            left -= free
            planned.append((p["id"], wh, free + held.get((p["id"], wh), 0)))
    return [
        {
            "id": id,
            "product_id": product,
            "warehouse_id": wh,
            "on_hand": on_hand,
            "reserved": held.get((product, wh), 0),
            "reorder_point": 5,
        }
        for id, (product, wh, on_hand) in zip(
            seq_ids("SL-", len(planned), width=6), planned, strict=True
        )
    ]
