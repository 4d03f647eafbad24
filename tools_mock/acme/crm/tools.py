"""CRM tools: look customers up, open accounts, keep contact details current."""

from __future__ import annotations

import re
from typing import Any

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..common import CRM, today
from .models import Customer

TIERS = ("standard", "silver", "gold", "platinum")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def check_email(ctx: ToolContext, email: str, *, owner: str | None = None) -> str:
    """A well-formed email that no other customer uses (422, 409)."""
    email = email.strip().lower()
    if not _EMAIL.match(email):
        raise ToolError.invalid("email", f"{email!r} is not a valid email address")
    for row in ctx.rows("Customer"):
        if row["email"] == email and row["id"] != owner:
            raise ToolError.conflict(f"email {email!r} already belongs to Customer {row['id']}")
    return email


@tool(kind="write", system="crm", entities=["Customer"], latency=CRM.write, capacity=CRM.capacity)
def create_customer(
    ctx: ToolContext,
    name: str,
    email: str,
    phone: str = "",
    address: str = "",
    tier: str = "standard",
) -> dict[str, Any]:
    """Open a new customer account. The email must be unique; tier is one of standard, silver,
    gold, platinum. Returns the new Customer with its assigned id."""
    if not name.strip():
        raise ToolError.invalid("name", "name must not be empty")
    if tier not in TIERS:
        raise ToolError.invalid("tier", f"tier {tier!r} is not one of {list(TIERS)}")
    row = {
        "name": name.strip(),
        "email": check_email(ctx, email),
        "phone": phone,
        "address": address,
        "tier": tier,
        "created_at": today(ctx).isoformat(),
    }
    return ctx.insert("Customer", row)


@tool(kind="write", system="crm", entities=["Customer"], latency=CRM.write, capacity=CRM.capacity)
def update_customer_contact(
    ctx: ToolContext,
    customer_id: str,
    email: str | None = None,
    phone: str | None = None,
    address: str | None = None,
) -> dict[str, Any]:
    """Change a customer's email, phone or default address; fields not given are kept.
    Closed accounts cannot be changed. Returns the updated Customer."""
    customer = ctx.require("Customer", customer_id)
    if customer["status"] == "closed":
        raise ToolError.precondition(f"Customer {customer_id} is closed and cannot be changed")
    changes: dict[str, Any] = {}
    if email is not None:
        changes["email"] = check_email(ctx, email, owner=customer_id)
    if phone is not None:
        changes["phone"] = phone
    if address is not None:
        if len(address.strip()) < 10:
            raise ToolError.invalid("address", "address must be a full postal address")
        changes["address"] = address.strip()
    if not changes:
        raise ToolError.invalid("customer_id", "give at least one of email, phone, address")
    return ctx.update("Customer", customer_id, changes)


TOOLS = [
    *crud_tools(
        EntitySchema.of(Customer), ops=["get", "list", "search"], system="crm", **CRM.crud()
    ),
    create_customer,
    update_customer_contact,
]
