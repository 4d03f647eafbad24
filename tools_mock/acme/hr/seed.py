"""Seed the staff: a CEO, a head per department, team leads and their reports; leave requests
and access requests. Faker fills name pools once; the table's stream combines them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..common import COMPANY_DOMAIN, parse_day, seq_ids, table_faker, table_rng, world_day
from .models import DEPARTMENTS

Rows = list[dict[str, Any]]
EMPLOYEES_BASE, EMPLOYEES_PER_SCALE = 24, 6
TEAM_SIZE = 7
_TITLES = {
    "executive": ("Chief of Staff", "Executive Assistant"),
    "engineering": ("Software Engineer", "Senior Software Engineer", "QA Engineer"),
    "it": ("IT Support Engineer", "Systems Administrator", "Network Engineer"),
    "sales": ("Account Executive", "Sales Development Rep", "Account Manager"),
    "support": ("Support Agent", "Senior Support Agent", "Support Specialist"),
    "finance": ("Accountant", "Financial Analyst", "Accounts Payable Clerk"),
    "hr": ("HR Generalist", "Recruiter", "HR Business Partner"),
    "operations": ("Warehouse Associate", "Logistics Coordinator", "Inventory Analyst"),
}
_LOCATIONS = ("Portland, OR", "Columbus, OH", "Reno, NV", "Allentown, PA", "Remote")


def employees(seed: int, scale: int) -> Rows:
    rng = table_rng(seed, "Employee")
    fake = table_faker(seed, "Employee")
    firsts = [fake.first_name() for _ in range(250)]
    lasts = [fake.last_name() for _ in range(250)]
    count = EMPLOYEES_BASE + EMPLOYEES_PER_SCALE * scale
    rows: Rows = []
    heads: dict[str, str] = {}
    leads: dict[str, tuple[str, int]] = {}
    for n, id in enumerate(seq_ids("E-", count), start=1):
        first, last = rng.choice(firsts), rng.choice(lasts)
        email = f"{first}.{last}{n}@{COMPANY_DOMAIN}".lower().replace(" ", "").replace("'", "")
        if n == 1:
            dept, title, manager = "executive", "Chief Executive Officer", None
        elif n <= len(DEPARTMENTS):
            dept = DEPARTMENTS[n - 1]
            title, manager = f"Head of {dept.title()}", "E-0001"
            heads[dept] = id
        else:
            dept = DEPARTMENTS[1 + (n % (len(DEPARTMENTS) - 1))]
            lead, members = leads.get(dept, (heads[dept], TEAM_SIZE))
            if members >= TEAM_SIZE:
                title, manager = f"{dept.title()} Team Lead", heads[dept]
                leads[dept] = (id, 0)
            else:
                title, manager = rng.choice(_TITLES[dept]), lead
                leads[dept] = (lead, members + 1)
        roll = rng.random()
        status = (
            "active" if roll < 0.95 or n <= 9 else ("on_leave" if roll < 0.98 else "terminated")
        )
        rows.append(
            {
                "id": id,
                "name": f"{first} {last}",
                "email": email,
                "department": dept,
                "title": title,
                "manager_id": manager,
                "status": status,
                "location": rng.choice(_LOCATIONS),
                "employment_type": "contractor" if rng.random() < 0.08 else "full_time",
                "hire_date": world_day(-rng.randint(20, 3000)),
                "leave_balance": float(rng.choice((0, 2, 4, 6, 8, 10, 12, 15, 18, 20))),
            }
        )
    return rows


def leave_requests(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "LeaveRequest")
    planned = []
    for e in employees:
        if e["status"] == "terminated" or rng.random() > 0.5:
            continue
        start = parse_day(world_day(rng.randint(-90, 90)))
        length = rng.choice((1, 1, 2, 3, 5))
        status = (
            "pending"
            if start.isoformat() > world_day(0) and rng.random() < 0.5
            else (rng.choice(("approved", "approved", "approved", "rejected", "cancelled")))
        )
        planned.append((e, start, length, status))
    rows = []
    for id, (e, start, length, status) in zip(seq_ids("LV-", len(planned)), planned, strict=True):
        end = start + timedelta(days=length - 1)
        days = sum(1 for k in range(length) if (start + timedelta(days=k)).weekday() < 5)
        rows.append(
            {
                "id": id,
                "employee_id": e["id"],
                "type": rng.choice(("vacation", "vacation", "sick", "personal")),
                "start_date": start.isoformat(),
                "end_date": end.isoformat(),
                "days": float(max(days, 1)),
                "status": status,
                "approver_id": None if status in ("pending", "cancelled") else e["manager_id"],
                "created_at": f"{min(world_day(0), str(start - timedelta(days=14)))}T10:00:00Z",
            }
        )
    return rows


def access_requests(seed: int, employees: Rows, groups: Rows) -> Rows:
    rng = table_rng(seed, "AccessRequest")
    picked = [(e, rng.choice(groups)) for e in employees if e["manager_id"] and rng.random() < 0.3]
    rows = []
    for id, (e, g) in zip(seq_ids("AR-", len(picked)), picked, strict=True):
        status = rng.choice(("pending", "approved", "approved", "rejected"))
        created = world_day(-rng.randint(0, 60))
        rows.append(
            {
                "id": id,
                "employee_id": e["id"],
                "group_id": g["id"],
                "justification": f"Needs {g['application']} for day-to-day work",
                "status": status,
                "approver_id": None if status == "pending" else e["manager_id"],
                "decided_at": None if status == "pending" else f"{created}T16:00:00Z",
                "created_at": f"{created}T09:00:00Z",
            }
        )
    return rows
