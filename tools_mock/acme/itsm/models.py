"""IT service desk: incidents, change requests and the hardware and licences staff hold."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

ChangeRisk = Literal["low", "medium", "high"]
AssetCondition = Literal["good", "damaged"]
IncidentPriority = Literal["P1", "P2", "P3", "P4"]
INCIDENT_PRIORITIES: tuple[str, ...] = get_args(IncidentPriority)


@entity(id_prefix="INC-", id_width=5, searchable=("title", "service"), system="itsm")
class Incident(Base, table=True):
    """Something broken for staff or customers. ``notes`` are ``{at, author, text}``."""

    id: str = Field(primary_key=True, description="Incident id, e.g. INC-00001.")
    title: str
    service: str = Field(description="The affected service, e.g. email, vpn, checkout.")
    priority: Literal["P1", "P2", "P3", "P4"] = Field(
        "P3", sa_type=AutoString, description="P1 is an outage."
    )
    status: Literal["new", "in_progress", "resolved", "closed"] = Field("new", sa_type=AutoString)
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
    risk: ChangeRisk = Field("low", sa_type=AutoString)
    status: Literal["pending_approval", "approved", "rejected", "implemented"] = Field(
        "pending_approval", sa_type=AutoString
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
    type: Literal["laptop", "monitor", "phone", "license"] = Field(sa_type=AutoString)
    model: str
    serial: str
    status: Literal["in_stock", "assigned", "in_repair", "retired"] = Field(
        "in_stock", sa_type=AutoString
    )
    assigned_to: str | None = Field(None, description="The Employee holding it.")
    purchased_at: str
    cost: float
