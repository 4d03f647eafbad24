"""CRM tools: look customers up, open accounts, keep contact details current."""

from __future__ import annotations

import re
from typing import Any, get_args

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..common import CRM, reads, today_iso
from .models import Contact, ContactRole, Customer, Tier
from .sales import SALES_TOOLS

TIERS: tuple[str, ...] = get_args(Tier)
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
    tier: Tier = "standard",
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
        "created_at": today_iso(ctx),
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


CONTACT_ROLES: tuple[str, ...] = get_args(ContactRole)


def _contact_email(ctx: ToolContext, customer_id: str, email: str, owner: str | None) -> str:
    email = email.strip().lower()
    if not _EMAIL.match(email):
        raise ToolError.invalid("email", f"{email!r} is not a valid email address")
    for row in ctx.rows("Contact"):
        if row["customer_id"] == customer_id and row["email"] == email and row["id"] != owner:
            raise ToolError.conflict(f"{email!r} is already Contact {row['id']} of {customer_id}")
    return email


def _role(role: str) -> str:
    if role not in CONTACT_ROLES:
        raise ToolError.invalid("role", f"role {role!r} is not one of {list(CONTACT_ROLES)}")
    return role


def _demote_primary(ctx: ToolContext, customer_id: str, keep: str | None) -> None:
    for row in ctx.find("Contact", lambda r: r["customer_id"] == customer_id and r["is_primary"]):
        if row["id"] != keep:
            ctx.update("Contact", row["id"], {"is_primary": False})


@tool(
    kind="write",
    system="crm",
    entities=["Customer", "Contact"],
    latency=CRM.write,
    capacity=CRM.capacity,
)
def create_contact(
    ctx: ToolContext,
    customer_id: str,
    name: str,
    email: str,
    phone: str = "",
    role: ContactRole = "other",
    is_primary: bool = False,
) -> dict[str, Any]:
    """Add a contact person to an open account. An email appears once per account; making the
    contact primary demotes the previous primary contact. Returns the Contact."""
    customer = ctx.require("Customer", customer_id)
    if customer["status"] == "closed":
        raise ToolError.precondition(f"Customer {customer_id} is closed")
    if not name.strip():
        raise ToolError.invalid("name", "name must not be empty")
    row = {
        "customer_id": customer_id,
        "name": name.strip(),
        "email": _contact_email(ctx, customer_id, email, None),
        "phone": phone,
        "role": _role(role),
        "is_primary": is_primary,
    }
    if is_primary:
        _demote_primary(ctx, customer_id, None)
    return ctx.insert("Contact", row)


@tool(kind="write", system="crm", entities=["Contact"], latency=CRM.write, capacity=CRM.capacity)
def update_contact(
    ctx: ToolContext,
    contact_id: str,
    email: str | None = None,
    phone: str | None = None,
    role: ContactRole | None = None,
    is_primary: bool | None = None,
) -> dict[str, Any]:
    """Change a contact's email, phone, role or primary flag; fields not given are kept.
    Returns the Contact."""
    contact = ctx.require("Contact", contact_id)
    changes: dict[str, Any] = {}
    if email is not None:
        changes["email"] = _contact_email(ctx, contact["customer_id"], email, contact_id)
    if phone is not None:
        changes["phone"] = phone
    if role is not None:
        changes["role"] = _role(role)
    if is_primary is not None:
        changes["is_primary"] = is_primary
        if is_primary:
            _demote_primary(ctx, contact["customer_id"], contact_id)
    if not changes:
        raise ToolError.invalid("contact_id", "give at least one field to change")
    return ctx.update("Contact", contact_id, changes)


TOOLS = [
    *crud_tools(
        EntitySchema.of(Customer), ops=["get", "list", "search"], system="crm", **CRM.crud()
    ),
    create_customer,
    update_customer_contact,
    *reads(Contact, ["get", "list", "search"], "crm", CRM),
    create_contact,
    update_contact,
    *SALES_TOOLS,
]
