"""Seed a shipment for every order that left a warehouse, with carrier scans, and return
authorisations behind refunded orders plus a few open ones."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..common import parse_day, seq_ids, table_rng, world_day
from .models import CARRIERS

Rows = list[dict[str, Any]]


def shipments(seed: int, orders: Rows, reservations: Rows) -> Rows:
    rng = table_rng(seed, "Shipment")
    source = {r["order_id"]: r["warehouse_id"] for r in reservations}
    shipped = [o for o in orders if o["status"] in ("shipped", "delivered", "refunded")]
    rows = []
    for id, o in zip(seq_ids("SH-", len(shipped), width=5), shipped, strict=True):
        sent = parse_day(o["placed_at"]) + timedelta(days=1)
        carrier = rng.choice(CARRIERS)
        events = [{"at": f"{sent}T14:00:00Z", "status": "in_transit", "location": source[o["id"]]}]
        status = "in_transit"
        if o["delivered_at"]:
            status = "delivered"
            events.append(
                {
                    "at": f"{o['delivered_at']}T15:30:00Z",
                    "status": "delivered",
                    "location": "recipient",
                }
            )
        elif rng.random() < 0.05:
            status = "exception"
            events.append(
                {
                    "at": f"{world_day(0)}T06:00:00Z",
                    "status": "exception",
                    "location": "carrier hub",
                }
            )
        rows.append(
            {
                "id": id,
                "order_id": o["id"],
                "warehouse_id": source[o["id"]],
                "carrier": carrier,
                "service": rng.choice(("ground", "ground", "express", "overnight")),
                "tracking_number": f"{carrier[:2].upper()}{rng.randrange(10**9, 10**10)}",
                "status": status,
                "events": events,
                "shipped_at": f"{min(sent.isoformat(), world_day(0))}T14:00:00Z",
                "delivered_at": o["delivered_at"],
            }
        )
    return rows


def returns(seed: int, orders: Rows) -> Rows:
    rng = table_rng(seed, "ReturnRequest")
    planned = []
    for o in orders:
        if o["status"] == "refunded":
            planned.append((o, "received"))
        elif (
            o["status"] == "delivered"
            and o["delivered_at"] >= world_day(-30)
            and rng.random() < 0.05
        ):
            planned.append((o, "authorized"))
    rows = []
    for id, (o, status) in zip(seq_ids("RMA-", len(planned)), planned, strict=True):
        created = min((parse_day(o["delivered_at"]) + timedelta(days=2)).isoformat(), world_day(0))
        rows.append(
            {
                "id": id,
                "order_id": o["id"],
                "customer_id": o["customer_id"],
                "items": [
                    {"product_id": i["product_id"], "quantity": i["quantity"]} for i in o["items"]
                ],
                "reason": rng.choice(
                    ("changed mind", "defective", "wrong size", "arrived damaged")
                ),
                "status": status,
                "condition": "good" if status == "received" else None,
                "warehouse_id": "WH-03" if status == "received" else None,
                "created_at": f"{created}T10:00:00Z",
                "received_at": f"{created}T16:00:00Z" if status == "received" else None,
            }
        )
    return rows
