"""Support tools: read, open, annotate, escalate and resolve customer tickets."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, crud_tools, tool
from simforge.world import EntitySchema

from ..common import SUPPORT, now_iso, today_iso
from .models import PRIORITIES, Ticket, TicketPriority

ESCALATION_QUEUE = "tier-2"
AUTHOR = "support-agent"
_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "support",
    "entities": ["Ticket"],
    "latency": SUPPORT.write,
    "capacity": SUPPORT.capacity,
}


def _note(ctx: ToolContext, text: str) -> dict[str, Any]:
    return {"at": now_iso(ctx), "author": AUTHOR, "text": text}


def _open_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    ticket = ctx.require("Ticket", ticket_id)
    if ticket["status"] in ("resolved", "closed"):
        raise ToolError.conflict(f"Ticket {ticket_id} is {ticket['status']}")
    return ticket


def _text(argument: str, value: str) -> str:
    value = value.strip()
    if not value:
        raise ToolError.invalid(argument, f"{argument} must not be empty")
    return value


@tool(**_WRITE)
def create_ticket(
    ctx: ToolContext,
    customer_id: str,
    subject: str,
    description: str,
    order_id: str | None = None,
    priority: TicketPriority = "normal",
) -> dict[str, Any]:
    """Open a ticket for a customer in the tier-1 queue, optionally about one of their orders.
    Priority is one of low, normal, high, urgent. Returns the new Ticket."""
    ctx.require("Customer", customer_id)
    if order_id is not None and ctx.require("Order", order_id)["customer_id"] != customer_id:
        raise ToolError.invalid("order_id", f"Order {order_id} does not belong to {customer_id}")
    if priority not in PRIORITIES:
        raise ToolError.invalid(
            "priority", f"priority {priority!r} is not one of {list(PRIORITIES)}"
        )
    return ctx.insert(
        "Ticket",
        {
            "customer_id": customer_id,
            "order_id": order_id,
            "subject": _text("subject", subject),
            "priority": priority,
            "notes": [_note(ctx, _text("description", description))],
            "created_at": today_iso(ctx),
        },
    )


@tool(**_WRITE)
def add_ticket_note(ctx: ToolContext, ticket_id: str, text: str) -> dict[str, Any]:
    """Append a note to an open or pending ticket. Returns the updated Ticket."""
    ticket = _open_ticket(ctx, ticket_id)
    notes = [*ticket["notes"], _note(ctx, _text("text", text))]
    return ctx.update("Ticket", ticket_id, {"notes": notes})


@tool(**_WRITE)
def escalate_ticket(
    ctx: ToolContext,
    ticket_id: str = Field(description="The Ticket to escalate, e.g. T-0001."),
    reason: str = Field(description="Why the ticket needs tier-2; added as a note."),
) -> dict[str, Any]:
    """Escalate an open or pending ticket: its priority goes up one level (low, normal, high,
    urgent), it moves to the tier-2 queue, and the reason is added as a note. A ticket can be
    escalated once. Returns the updated Ticket."""
    ticket = _open_ticket(ctx, ticket_id)
    if ticket["queue"] == ESCALATION_QUEUE:
        raise ToolError.conflict(f"Ticket {ticket_id} is already in the {ESCALATION_QUEUE} queue")
    level = PRIORITIES.index(ticket["priority"]) if ticket["priority"] in PRIORITIES else 1
    priority = PRIORITIES[min(level + 1, len(PRIORITIES) - 1)]
    note = _note(ctx, f"Escalated to {ESCALATION_QUEUE}: {_text('reason', reason)}")
    return ctx.update(
        "Ticket",
        ticket_id,
        {"priority": priority, "queue": ESCALATION_QUEUE, "notes": [*ticket["notes"], note]},
    )


@tool(**_WRITE)
def resolve_ticket(
    ctx: ToolContext,
    ticket_id: str = Field(description="The Ticket to resolve, e.g. T-0001."),
    resolution: str = Field(description="What was done; added as a note."),
) -> dict[str, Any]:
    """Mark an open or pending ticket resolved, recording the resolution as a note. Returns the
    updated Ticket."""
    ticket = _open_ticket(ctx, ticket_id)
    note = _note(ctx, f"Resolved: {_text('resolution', resolution)}")
    return ctx.update(
        "Ticket", ticket_id, {"status": "resolved", "notes": [*ticket["notes"], note]}
    )


TOOLS = [
    *crud_tools(
        EntitySchema.of(Ticket), ops=["get", "list", "search"], system="support", **SUPPORT.crud()
    ),
    create_ticket,
    add_ticket_note,
    escalate_ticket,
    resolve_ticket,
]
