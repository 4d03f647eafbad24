"""Seed support tickets, many of them about a customer's own order."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..common import parse_day, seq_ids, table_rng, world_day

TICKETS_PER_SCALE = 8
Rows = list[dict[str, Any]]

_ABOUT_ORDER = {
    "pending": ("Change delivery address", "Payment did not go through"),
    "processing": ("When will my order ship?", "Please cancel my order"),
    "shipped": ("Tracking has not updated", "Package delayed"),
    "delivered": ("Item arrived damaged", "Wrong item received", "Missing part in box"),
    "cancelled": ("Where is my credit for the cancellation?",),
    "refunded": ("Refund not showing on my card",),
}
_GENERAL = (
    "Cannot log in to my account",
    "Update my phone number",
    "Question about loyalty tier",
    "Request a copy of an invoice",
    "Unsubscribe from marketing emails",
)
_STATUSES = (("open", 30), ("pending", 15), ("resolved", 40), ("closed", 15))
_PRIORITIES = (("low", 20), ("normal", 55), ("high", 20), ("urgent", 5))


def tickets(seed: int, scale: int, customers: Rows, orders: Rows) -> Rows:
    rng = table_rng(seed, "Ticket")
    statuses, status_w = zip(*_STATUSES, strict=True)
    priorities, priority_w = zip(*_PRIORITIES, strict=True)
    rows = []
    for id in seq_ids("T-", TICKETS_PER_SCALE * scale):
        if rng.random() < 0.6:
            order = rng.choice(orders)
            customer_id, order_id = order["customer_id"], order["id"]
            subject = rng.choice(_ABOUT_ORDER[order["status"]])
            opened = parse_day(order["placed_at"]) + timedelta(days=rng.randint(0, 5))
            created = min(opened.isoformat(), world_day(0))
        else:
            customer_id, order_id = rng.choice(customers)["id"], None
            subject = rng.choice(_GENERAL)
            created = world_day(-rng.randint(0, 120))
        status = rng.choices(statuses, status_w)[0]
        queue = (
            "billing" if "refund" in subject.lower() or "credit" in subject.lower() else "tier-1"
        )
        if status in ("open", "pending") and rng.random() < 0.15:
            queue = "tier-2"
        notes = [{"at": f"{created}T08:30:00Z", "author": "customer", "text": subject}]
        if status != "open":
            notes.append(
                {
                    "at": f"{created}T11:00:00Z",
                    "author": "support-agent",
                    "text": "Looked into this with the customer.",
                }
            )
        rows.append(
            {
                "id": id,
                "customer_id": customer_id,
                "order_id": order_id,
                "subject": subject,
                "status": status,
                "priority": rng.choices(priorities, priority_w)[0],
                "queue": queue,
                "notes": notes,
                "created_at": created,
            }
        )
    return rows
