"""Seed finance: a budget per department for the fiscal year, vendors, and the purchase
requests, purchase orders and expense reports of the year so far."""

from __future__ import annotations

from typing import Any

from ..common import money, seq_ids, table_faker, table_rng, world_day
from ..hr.models import DEPARTMENTS

Rows = list[dict[str, Any]]
_VENDOR_KINDS = ("software", "hardware", "logistics", "office supplies", "consulting", "facilities")


def vendors(seed: int, scale: int) -> Rows:
    rng = table_rng(seed, "Vendor")
    fake = table_faker(seed, "Vendor")
    names = [fake.company() for _ in range(120)]
    return [
        {
            "id": id,
            "name": f"{rng.choice(names)} {n}" if n > len(names) else names[n - 1],
            "category": rng.choice(_VENDOR_KINDS),
            "status": "blocked" if rng.random() < 0.06 else "active",
            "payment_terms": rng.choice(("net30", "net30", "net45", "net60")),
            "country": rng.choice(("US", "US", "US", "CA", "DE", "MX")),
        }
        for n, id in enumerate(seq_ids("V-", 20 + 3 * scale), start=1)
    ]


def purchase_requests(seed: int, employees: Rows, vendors: Rows) -> Rows:
    rng = table_rng(seed, "PurchaseRequest")
    staff = [e for e in employees if e["status"] == "active"]
    active = [v for v in vendors if v["status"] == "active"]
    count = max(10, len(employees) // 3)
    rows = []
    for id in seq_ids("PR-", count):
        e, v = rng.choice(staff), rng.choice(active)
        status = rng.choice(("pending", "approved", "rejected", "ordered", "ordered"))
        rows.append(
            {
                "id": id,
                "requester_id": e["id"],
                "department": e["department"],
                "vendor_id": v["id"],
                "description": f"{v['category'].title()} for the {e['department']} team",
                "amount": money(
                    rng.choice((180, 450, 1200, 2400, 5600, 8900, 14500)) * (0.9 + rng.random() / 5)
                ),
                "status": status,
                "approver_id": None if status == "pending" else "E-0006",
                "decision_note": "",
                "created_at": f"{world_day(-rng.randint(0, 14))}T10:00:00Z",
            }
        )
    return rows


def purchase_orders(requests: Rows) -> Rows:
    ordered = [r for r in requests if r["status"] == "ordered"]
    return [
        {
            "id": id,
            "purchase_request_id": r["id"],
            "vendor_id": r["vendor_id"],
            "department": r["department"],
            "amount": r["amount"],
            "status": "issued",
            "issued_at": r["created_at"],
        }
        for id, r in zip(seq_ids("PO-", len(ordered)), ordered, strict=True)
    ]


def budgets(scale: int, orders: Rows) -> Rows:
    """Budgets sized so that seeded commitments use part of them."""
    committed: dict[str, float] = {}
    for po in orders:
        committed[po["department"]] = committed.get(po["department"], 0.0) + po["amount"]
    rows = []
    for id, dept in zip(seq_ids("BUD-", len(DEPARTMENTS), width=3), DEPARTMENTS, strict=True):
        used = money(committed.get(dept, 0.0))
        rows.append(
            {
                "id": id,
                "department": dept,
                "fiscal_year": 2026,
                "amount": money(60_000 + 25_000 * scale + used),
                "committed": used,
                "spent": money(10_000 + 1_000 * scale),
            }
        )
    return rows


def expense_reports(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "ExpenseReport")
    staff = [e for e in employees if e["status"] == "active" and e["manager_id"]]
    count = max(10, len(employees) // 2)
    rows = []
    for id in seq_ids("EXP-", count):
        e = rng.choice(staff)
        category = rng.choice(("travel", "meals", "software", "equipment", "other"))
        amount = money(rng.choice((18, 42, 64, 95, 180, 420, 1150)) * (0.8 + rng.random() / 2.5))
        status = rng.choice(("submitted", "approved", "approved", "paid", "rejected"))
        rows.append(
            {
                "id": id,
                "employee_id": e["id"],
                "amount": amount,
                "category": category,
                "description": f"{category.title()} for customer visit",
                "receipt_attached": amount <= 75 or rng.random() < 0.9,
                "status": status,
                "approver_id": None if status == "submitted" else e["manager_id"],
                "decision_note": "",
                "submitted_at": f"{world_day(-rng.randint(0, 60))}T18:00:00Z",
            }
        )
    return rows
