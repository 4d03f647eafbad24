"""IT service desk: incidents, change requests and the hardware and licences staff hold."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field

from simforge.world import entity

from ..base import Base

INCIDENT_PRIORITIES = ("P1", "P2", "P3", "P4")


@entity(id_prefix="INC-", id_width=5, searchable=("title", "service"), system="itsm")
class Incident(Base, table=True):
    """Something broken for staff or customers. ``notes`` are ``{at, author, text}``."""

    id: str = Field(primary_key=True, description="Incident id, e.g. INC-00001.")
    title: str
    service: str = Field(description="The affected service, e.g. email, vpn, checkout.")
    priority: str = Field("P3", description="P1 (outage) | P2 | P3 | P4")
    status: str = Field("new", description="new | in_progress | resolved | closed")
    reporter_id: str = Field(description="The Employee who reported it.")
    assignee_id: str | None = Field(None, description="The IT Employee working on it.")
    asset_id: str | None = None
    notes: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: str
    resolved_at: str | None = None


@entity(id_prefix="CHG-", id_width=4, searchable=("title", "service"), system="itsm")
class ChangeRequest(Base, table=True):
    """A planned change to a production service, approved by the change board (CAB)."""

    id: str = Field(primary_key=True, description="Change id, e.g. CHG-0001.")
    title: str
    service: str
    risk: str = Field("low", description="low | medium | high")
    status: str = Field(
        "pending_approval", description="pending_approval | approved | rejected | implemented"
    )
    requester_id: str
    approver_id: str | None = None
    rollback_plan: str = ""
    window_start: str = Field(description="Start of the maintenance window (ISO time).")
    window_end: str
    created_at: str


@entity(id_prefix="AST-", id_width=5, searchable=("model", "serial"), system="itsm")
class Asset(Base, table=True):
    """A company device or licence and who holds it."""

    id: str = Field(primary_key=True, description="Asset id, e.g. AST-00001.")
    type: str = Field(description="laptop | monitor | phone | license")
    model: str
    serial: str
    status: str = Field("in_stock", description="in_stock | assigned | in_repair | retired")
    assigned_to: str | None = Field(None, description="The Employee holding it.")
    purchased_at: str
    cost: float
