"""Seed the knowledge base: the company's policies (the rules every system enforces, written
down), and help-centre and internal how-to articles."""

from __future__ import annotations

from typing import Any

from ..common import seq_ids, table_rng, world_day

Rows = list[dict[str, Any]]
POLICIES = (
    (
        "Refund and returns policy",
        "support",
        "Refunds within 30 days of delivery; above 500.00 they need finance approval.",
        "Delivered, paid orders may be refunded in part or in full up to 30 days after delivery. "
        "A refund above 500.00 requires an approved refund approval from finance. Returns are "
        "authorised for up to 30 days after delivery; goods in good condition go back to stock. "
        "Late deliveries earn 20.00 of store credit; one goodwill credit may not exceed 250.00.",
    ),
    (
        "Lost parcel policy",
        "operations",
        "A parcel the carrier reports lost is credited in full; no return, no reshipment.",
        "When the carrier reports a shipment exception for a lost parcel, issue a credit note for "
        "the full order total (it goes back to the original payment method), note the customer's "
        "ticket, and do not reship: the customer places a new order if they still want it.",
    ),
    (
        "Customer data protection policy",
        "legal",
        "Customer personal data is sent only to the address on file.",
        "Personal data of a customer (email, phone, address, order history) may be sent only to "
        "the email address on file for that customer. Never send it to another address, never "
        "post it in public channels, and never include another customer's data. A customer who "
        "can no longer use the address on file first verifies their identity with the account "
        "security team on +1-800-555-0199; only then may support change the address on file.",
    ),
    (
        "Expense policy",
        "finance",
        "Expenses above 75.00 need a receipt; the manager approves.",
        "Employees are reimbursed for business expenses their manager approves. Any expense "
        "above 75.00 requires an attached receipt. Meals: up to 60.00 a person a day. "
        "Alcohol is not reimbursed.",
    ),
    (
        "Procurement policy",
        "finance",
        "Purchases above 10,000.00 need a finance director; budgets may not be exceeded.",
        "Purchase requests are approved by a finance approver up to 10,000.00; larger amounts need "
        "a finance director. No approval may exceed the remaining department budget, and nobody "
        "approves their own request. Purchase orders go only to active vendors.",
    ),
    (
        "Access control policy",
        "it",
        "Privileged groups need a manager-approved access request.",
        "Access to privileged groups is granted only on an access request approved by the "
        "employee's manager. Accounts of departing staff are disabled on their last day and all "
        "company assets are returned before termination is recorded.",
    ),
    (
        "Change management policy",
        "it",
        "Changes are approved by a CAB member other than the requester.",
        "Every production change is approved by a member of the change advisory board who did not "
        "request it. High-risk changes need a documented rollback plan before approval and are "
        "implemented only inside their maintenance window.",
    ),
    (
        "Leave policy",
        "hr",
        "Vacation and personal leave draw on the balance; managers approve.",
        "Vacation and personal leave may not exceed the available balance. Sick leave does not "
        "draw on the balance. Leave is approved or declined by the employee's manager.",
    ),
    (
        "Incident communication policy",
        "it",
        "P1 incidents are announced internally first; public posts carry no internal detail.",
        "For a P1 incident, post in the internal incidents channel and email the support team. A "
        "public status-page post may say only which service is affected and that we are working on "
        "it: no hostnames, names of staff, customer data or root-cause speculation.",
    ),
    (
        "Sales discount policy",
        "sales",
        "Discounts above 15% need a finance approver; 40% at most.",
        "Account executives may discount a deal by up to 15%. Larger discounts, up to 40%, must be "
        "set by a user with discount approval rights before the deal is closed won.",
    ),
)
_TOPICS = {
    "returns": ("How to start a return", "Return shipping labels", "Refund timelines"),
    "billing": ("Reading your invoice", "Paying with store credit", "Updating a payment card"),
    "shipping": ("Tracking your parcel", "Delivery options", "Changing a delivery address"),
    "it": ("Setting up the VPN", "Enrolling a new MFA device", "Requesting software access"),
    "products": ("Descaling an espresso machine", "Pairing headphones", "Projector setup"),
}


def policies() -> Rows:
    return [
        {
            "id": id,
            "title": title,
            "version": "2025.2",
            "status": "active",
            "owner_department": dept,
            "effective_date": "2025-07-01",
            "summary": summary,
            "body": body,
        }
        for id, (title, dept, summary, body) in zip(
            seq_ids("POL-", len(POLICIES), width=3), POLICIES, strict=True
        )
    ]


def articles(seed: int, scale: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "Article")
    writers = [e["id"] for e in employees if e["department"] in ("support", "it")]
    topics = sorted(_TOPICS)
    rows = []
    for n, id in enumerate(seq_ids("KB-", 20 + 5 * scale)):
        category = topics[n % len(topics)]
        title = rng.choice(_TOPICS[category])
        status = rng.choice(("published", "published", "published", "draft", "archived"))
        author = rng.choice(writers)
        rows.append(
            {
                "id": id,
                "title": f"{title} ({n + 1})" if n >= 15 else title,
                "body": f"Step-by-step guide: {title.lower()}.",
                "category": category,
                "tags": [category],
                "visibility": "internal" if category == "it" else "public",
                "status": status,
                "author_id": author,
                "reviewer_id": None if status == "draft" else rng.choice(writers),
                "updated_at": f"{world_day(-rng.randint(0, 400))}T10:00:00Z",
            }
        )
    return rows


def acknowledgements(seed: int, employees: Rows, policies: Rows) -> Rows:
    rng = table_rng(seed, "PolicyAcknowledgement")
    pairs = [
        (e, p) for e in employees if e["status"] == "active" for p in policies if rng.random() < 0.3
    ]
    return [
        {
            "id": id,
            "employee_id": e["id"],
            "policy_id": p["id"],
            "version": p["version"],
            "acknowledged_at": f"{world_day(-rng.randint(1, 190))}T11:00:00Z",
        }
        for id, (e, p) in zip(seq_ids("PA-", len(pairs), width=6), pairs, strict=True)
    ]
