"""Seed the directory: roles and their permissions, a user per employee with roles fitting
their job, the access groups of the connected applications, and who is in them."""

from __future__ import annotations

from typing import Any

from ..common import seq_ids, table_rng, world_day

Rows = list[dict[str, Any]]

ROLES = {
    "employee": ("Every member of staff.", []),
    "helpdesk": (
        "IT service desk: unlock accounts, reset MFA, manage ordinary groups.",
        ["users.reset_mfa", "groups.manage"],
    ),
    "iam-admin": (
        "Identity administrators.",
        [
            "users.disable",
            "users.enable",
            "users.reset_mfa",
            "groups.manage",
            "groups.manage_privileged",
            "roles.assign",
        ],
    ),
    "cab-member": ("Change advisory board.", ["changes.approve"]),
    "finance-approver": (
        "Approves purchases up to 10,000 and sales discounts.",
        ["purchases.approve", "discounts.approve"],
    ),
    "finance-director": (
        "Approves purchases of any size and discounts.",
        ["purchases.approve", "purchases.approve_large", "discounts.approve"],
    ),
    "hr-partner": ("HR business partners.", ["employees.terminate"]),
    "warehouse-clerk": ("Counts and corrects stock.", ["stock.adjust"]),
    "warehouse-lead": ("Runs a warehouse.", ["stock.adjust", "stock.adjust_large"]),
}
GROUPS = (
    # name, application, privileged, owning department
    ("all-staff", "intranet", False, "hr"),
    ("vpn-users", "vpn", False, "it"),
    ("github-org", "github", False, "engineering"),
    ("crm-users", "crm", False, "sales"),
    ("support-console", "helpdesk", False, "support"),
    ("warehouse-scanners", "wms", False, "operations"),
    ("erp-readers", "erp", False, "finance"),
    ("prod-db-admins", "postgres", True, "engineering"),
    ("aws-prod-admins", "aws", True, "it"),
    ("erp-payments", "erp", True, "finance"),
    ("hr-records", "workday", True, "hr"),
    ("customer-pii-export", "warehouse-bi", True, "support"),
)
_BY_DEPT = {
    "engineering": ("github-org", "vpn-users"),
    "it": ("vpn-users", "github-org"),
    "sales": ("crm-users",),
    "support": ("support-console", "crm-users"),
    "finance": ("erp-readers",),
    "hr": ("erp-readers",),
    "operations": ("warehouse-scanners",),
    "executive": ("crm-users", "erp-readers"),
}


def roles() -> Rows:
    return [
        {"id": name, "description": about, "permissions": perms}
        for name, (about, perms) in ROLES.items()
    ]


def _roles_for(e: dict[str, Any], rng: Any) -> list[str]:
    out = ["employee"]
    dept, title = e["department"], e["title"]
    lead = title.startswith("Head of") or title.endswith("Team Lead")
    if dept == "it":
        out.append("iam-admin" if lead else "helpdesk")
        if lead:
            out.append("cab-member")
    if dept == "engineering" and lead:
        out.append("cab-member")
    if dept == "finance":
        out.append("finance-director" if title.startswith("Head of") else "finance-approver")
    if dept == "hr" and (lead or rng.random() < 0.4):
        out.append("hr-partner")
    if dept == "operations":
        out.append("warehouse-lead" if lead else "warehouse-clerk")
    return out


def users(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "User")
    rows = []
    for e in employees:
        status = (
            "disabled"
            if e["status"] == "terminated"
            else ("locked" if rng.random() < 0.02 else "active")
        )
        rows.append(
            {
                "id": "U-" + e["id"].removeprefix("E-"),
                "username": e["email"].split("@")[0],
                "email": e["email"],
                "employee_id": e["id"],
                "status": status,
                "roles": _roles_for(e, rng),
                "mfa_enabled": rng.random() < 0.93,
                "last_login_at": f"{world_day(-rng.randint(0, 20))}T0{rng.randint(6, 9)}:15:00Z",
            }
        )
    return rows


def groups(employees: Rows) -> Rows:
    heads = {e["department"]: e["id"] for e in employees if e["title"].startswith("Head of")}
    return [
        {
            "id": id,
            "name": name,
            "application": app,
            "description": f"Access to {app} ({name})",
            "privileged": privileged,
            "owner_id": heads.get(dept, "E-0001"),
        }
        for id, (name, app, privileged, dept) in zip(
            seq_ids("G-", len(GROUPS), width=3), GROUPS, strict=True
        )
    ]


def memberships(seed: int, users: Rows, employees: Rows, groups: Rows) -> Rows:
    rng = table_rng(seed, "GroupMembership")
    by_name = {g["name"]: g["id"] for g in groups}
    privileged = [g["id"] for g in groups if g["privileged"]]
    dept = {e["id"]: e["department"] for e in employees}
    pairs = []
    for u in users:
        names = ["all-staff", *_BY_DEPT.get(dept[u["employee_id"]], ())]
        for name in names:
            pairs.append((u, by_name[name], None))
        if rng.random() < 0.06:
            pairs.append((u, rng.choice(privileged), None))
    return [
        {
            "id": id,
            "user_id": u["id"],
            "group_id": g,
            "granted_at": f"{world_day(-rng.randint(10, 900))}T12:00:00Z",
            "granted_by": "provisioning",
            "access_request_id": ar,
        }
        for id, (u, g, ar) in zip(seq_ids("GM-", len(pairs), width=6), pairs, strict=True)
    ]
