"""Support: customer tickets, their queue, priority and notes."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

TicketPriority = Literal["low", "normal", "high", "urgent"]
PRIORITIES: tuple[str, ...] = get_args(TicketPriority)
TicketStatus = Literal["open", "pending", "resolved", "closed"]
TICKET_STATUSES: tuple[str, ...] = get_args(TicketStatus)


@entity(id_prefix="T-", id_width=4, searchable=("subject",), system="support")
class Ticket(Base, table=True):
    """A support ticket. ``notes`` are ``{at, author, text}``, oldest first."""

    id: str = Field(primary_key=True, description="Ticket id, e.g. T-0001.")
    customer_id: str
    order_id: str | None = None
    subject: str
    status: TicketStatus = Field("open", sa_type=AutoString)
    priority: TicketPriority = Field("normal", sa_type=AutoString)
    queue: Literal["tier-1", "tier-2", "billing"] = Field("tier-1", sa_type=AutoString)
    notes: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: str
