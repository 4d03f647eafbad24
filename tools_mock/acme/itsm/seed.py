"""Seed the service desk: a laptop (and often a phone or monitor) per employee, incidents
reported over the last quarter, and a few change requests."""

from __future__ import annotations

from typing import Any

from ..common import seq_ids, table_rng, world_day

Rows = list[dict[str, Any]]
_MODELS = {
    "laptop": (
        ("ThinkPad X1 Carbon", 1650.0),
        ("MacBook Pro 14", 2199.0),
        ("Dell Latitude 7440", 1420.0),
    ),
    "phone": (("iPhone 15", 829.0), ("Pixel 8", 699.0)),
    "monitor": (("Dell U2723QE", 579.0), ("LG 27UP850", 449.0)),
    "license": (("Adobe Creative Cloud", 660.0), ("JetBrains All Products", 289.0)),
}
_SERVICES = ("email", "vpn", "laptop", "wifi", "erp", "crm", "checkout", "warehouse-wms", "sso")
_PROBLEMS = (
    "cannot connect",
    "very slow",
    "error on login",
    "keeps crashing",
    "password expired",
    "not syncing",
    "timeouts since this morning",
)


def assets(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "Asset")
    planned = []
    for e in employees:
        holder = e["id"] if e["status"] != "terminated" else None
        planned.append(("laptop", holder))
        if rng.random() < 0.4:
            planned.append((rng.choice(("phone", "monitor", "license")), holder))
    for _ in range(max(6, len(employees) // 10)):
        planned.append((rng.choice(("laptop", "monitor", "phone")), None))
    rows = []
    for id, (kind, holder) in zip(seq_ids("AST-", len(planned), width=5), planned, strict=True):
        model, cost = rng.choice(_MODELS[kind])
        status = (
            "assigned" if holder else rng.choice(("in_stock", "in_stock", "in_repair", "retired"))
        )
        rows.append(
            {
                "id": id,
                "type": kind,
                "model": model,
                "serial": f"{kind[:2].upper()}{rng.randrange(10**7, 10**8)}",
                "status": status,
                "assigned_to": holder,
                "purchased_at": world_day(-rng.randint(30, 1400)),
                "cost": cost,
            }
        )
    return rows


def incidents(seed: int, employees: Rows, assets: Rows) -> Rows:
    rng = table_rng(seed, "Incident")
    it_staff = [e["id"] for e in employees if e["department"] == "it" and e["status"] == "active"]
    active = [e for e in employees if e["status"] == "active"]
    count = int(len(employees) * 0.8)
    rows = []
    for id in seq_ids("INC-", count, width=5):
        reporter = rng.choice(active)
        service = rng.choice(_SERVICES)
        age = rng.randint(0, 90)
        status = "new" if age < 2 else rng.choice(("in_progress", "resolved", "resolved", "closed"))
        created = world_day(-age)
        assignee = None if status == "new" else rng.choice(it_staff)
        rows.append(
            {
                "id": id,
                "title": f"{service.upper()} {rng.choice(_PROBLEMS)}",
                "service": service,
                "priority": rng.choices(("P1", "P2", "P3", "P4"), (2, 13, 55, 30))[0],
                "status": status,
                "reporter_id": reporter["id"],
                "assignee_id": assignee,
                "asset_id": None,
                "notes": [
                    {
                        "at": f"{created}T09:00:00Z",
                        "author": reporter["id"],
                        "text": "Reported via the service portal.",
                    }
                ],
                "created_at": f"{created}T09:00:00Z",
                "resolved_at": f"{created}T15:00:00Z" if status in ("resolved", "closed") else None,
            }
        )
    return rows


def change_requests(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "ChangeRequest")
    engineers = [e["id"] for e in employees if e["department"] in ("it", "engineering")]
    count = max(5, len(employees) // 8)
    rows = []
    for id in seq_ids("CHG-", count):
        offset = rng.randint(-60, 30)
        status = (
            "pending_approval"
            if offset > 0
            else rng.choice(("implemented", "implemented", "rejected"))
        )
        risk = rng.choice(("low", "low", "medium", "high"))
        day = world_day(offset)
        rows.append(
            {
                "id": id,
                "title": f"Upgrade {rng.choice(_SERVICES)} to the next release",
                "service": rng.choice(_SERVICES),
                "risk": risk,
                "status": status,
                "requester_id": rng.choice(engineers),
                "approver_id": None,
                "rollback_plan": "Redeploy the previous release." if rng.random() < 0.7 else "",
                "window_start": f"{day}T22:00:00Z",
                "window_end": f"{day}T23:59:00Z",
                "created_at": f"{world_day(min(offset, 0) - 5)}T10:00:00Z",
            }
        )
    return rows
