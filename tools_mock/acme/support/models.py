"""Support: customer tickets, their queue, priority and notes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field

from simforge.world import entity

from ..base import Base

PRIORITIES = ("low", "normal", "high", "urgent")
TICKET_STATUSES = ("open", "pending", "resolved", "closed")


@entity(id_prefix="T-", id_width=4, searchable=("subject",), system="support")
class Ticket(Base, table=True):
    """A support ticket. ``notes`` are ``{at, author, text}``, oldest first."""

    id: str = Field(primary_key=True, description="Ticket id, e.g. T-0001.")
    customer_id: str
    order_id: str | None = None
    subject: str
    status: str = Field("open", description=" | ".join(TICKET_STATUSES))
    priority: str = Field("normal", description=" | ".join(PRIORITIES))
    queue: str = Field("tier-1", description="tier-1 | tier-2 | billing")
    notes: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: str
