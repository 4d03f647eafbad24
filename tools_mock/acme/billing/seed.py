"""Seed billing from the orders: invoices, the refunds and credit notes behind refunded and
cancelled orders, finance approvals for large refunds, and the ledger that records them all."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..common import money, parse_day, seq_ids, table_rng, world_day

Rows = list[dict[str, Any]]
APPROVAL_ABOVE = 500.00


def _after(day: str, rng: Any, low: int, high: int) -> str:
    """A moment some days after ``day``, never later than the world's first morning."""
    when = min((parse_day(day) + timedelta(days=rng.randint(low, high))).isoformat(), world_day(0))
    return f"{when}T08:00:00Z"


def invoices(seed: int, orders: Rows) -> Rows:
    billable = [o for o in orders if o["paid"] or o["status"] not in ("pending", "cancelled")]
    ids = seq_ids("INV-", len(billable), width=5)
    return [
        {
            "id": id,
            "order_id": o["id"],
            "customer_id": o["customer_id"],
            "amount": o["total"],
            "status": "paid" if o["paid"] else "open",
            "issued_at": o["placed_at"],
        }
        for id, o in zip(ids, billable, strict=True)
    ]


def approvals(seed: int, orders: Rows) -> Rows:
    """Approved for every large refunded order; a few more pending or rejected ones."""
    rng = table_rng(seed, "Approval")
    picked = []
    for o in orders:
        if o["total"] <= APPROVAL_ABOVE:
            continue
        if o["status"] == "refunded":
            picked.append((o, "approved"))
        elif o["status"] == "delivered" and rng.random() < 0.08:
            picked.append((o, rng.choice(("pending", "rejected", "approved"))))
    rows = []
    for id, (o, status) in zip(seq_ids("APR-", len(picked)), picked, strict=True):
        rows.append(
            {
                "id": id,
                "kind": "refund",
                "order_id": o["id"],
                "amount_limit": o["total"],
                "status": status,
                "requested_by": "support-agent",
                "decided_by": None if status == "pending" else "finance-ops",
                "created_at": _after(o["delivered_at"], rng, 1, 3),
            }
        )
    return rows


def refunds(seed: int, orders: Rows, approved: Rows) -> Rows:
    """A full refund for each refunded order; a partial one for a few delivered orders."""
    rng = table_rng(seed, "Refund")
    approval_of = {a["order_id"]: a["id"] for a in approved if a["status"] == "approved"}
    planned = []
    for o in orders:
        if o["status"] == "refunded":
            planned.append((o, o["total"], "returned"))
        elif o["status"] == "delivered" and rng.random() < 0.05:
            line = rng.choice(o["items"])
            planned.append((o, money(line["unit_price"]), "damaged item"))
    rows = []
    for id, (o, amount, reason) in zip(seq_ids("R-", len(planned)), planned, strict=True):
        rows.append(
            {
                "id": id,
                "order_id": o["id"],
                "customer_id": o["customer_id"],
                "amount": amount,
                "reason": reason,
                "approval_id": approval_of.get(o["id"]) if amount > APPROVAL_ABOVE else None,
                "status": "settled",
                "created_at": _after(o["delivered_at"], rng, 2, 20),
            }
        )
    return rows


def credit_notes(seed: int, orders: Rows) -> Rows:
    rng = table_rng(seed, "CreditNote")
    cancelled = [o for o in orders if o["status"] == "cancelled" and o["paid"]]
    return [
        {
            "id": id,
            "order_id": o["id"],
            "customer_id": o["customer_id"],
            "amount": o["total"],
            "reason": "cancelled by customer",
            "created_at": _after(o["placed_at"], rng, 0, 2),
        }
        for id, o in zip(seq_ids("CN-", len(cancelled)), cancelled, strict=True)
    ]


def ledger(customers: Rows, refunded: Rows, credited: Rows) -> Rows:
    """Every money movement above, plus the entry behind each opening credit balance."""
    moves: Rows = []
    for c in customers:
        if c["account_credit"] > 0:
            moves.append(
                {
                    "customer_id": c["id"],
                    "order_id": None,
                    "kind": "account_credit",
                    "amount": c["account_credit"],
                    "reference": "goodwill credit",
                    "created_at": f"{c['created_at']}T12:00:00Z",
                }
            )
    for kind, rows in (("refund", refunded), ("credit_note", credited)):
        moves.extend(
            {
                "customer_id": r["customer_id"],
                "order_id": r["order_id"],
                "kind": kind,
                "amount": r["amount"],
                "reference": r["id"],
                "created_at": r["created_at"],
            }
            for r in rows
        )
    return [
        {"id": id, **move}
        for id, move in zip(seq_ids("LE-", len(moves), width=6), moves, strict=True)
    ]


def payments(seed: int, invoices: Rows) -> Rows:
    rng = table_rng(seed, "Payment")
    paid = [i for i in invoices if i["status"] == "paid"]
    return [
        {
            "id": id,
            "invoice_id": i["id"],
            "order_id": i["order_id"],
            "customer_id": i["customer_id"],
            "amount": i["amount"],
            "method": rng.choice(("card", "card", "card", "bank_transfer")),
            "created_at": f"{i['issued_at']}T12:30:00Z",
        }
        for id, i in zip(seq_ids("PAY-", len(paid), width=5), paid, strict=True)
    ]
