"""IT service desk tools: incidents (triage, assignment, resolution), change approval and
implementation, and the asset register."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import ITSM, now_iso, reads, text
from ..iam.tools import require_permission
from .models import (
    INCIDENT_PRIORITIES,
    Asset,
    AssetCondition,
    ChangeRequest,
    ChangeRisk,
    Incident,
    IncidentPriority,
)

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "itsm",
    "latency": ITSM.write,
    "capacity": ITSM.capacity,
}
_OPEN = ("new", "in_progress")


def _note(ctx: ToolContext, author: str, body: str) -> dict[str, Any]:
    return {"at": now_iso(ctx), "author": author, "text": body}


def _open_incident(ctx: ToolContext, incident_id: str) -> dict[str, Any]:
    incident = ctx.require("Incident", incident_id)
    if incident["status"] not in _OPEN:
        raise ToolError.conflict(f"Incident {incident_id} is {incident['status']}")
    return incident


def _priority(priority: str) -> str:
    if priority not in INCIDENT_PRIORITIES:
        raise ToolError.invalid(
            "priority", f"priority {priority!r} is not one of {list(INCIDENT_PRIORITIES)}"
        )
    return priority


def _it_staff(ctx: ToolContext, employee_id: str) -> dict[str, Any]:
    employee = ctx.require("Employee", employee_id)
    if employee["department"] != "it" or employee["status"] != "active":
        raise ToolError.precondition(
            f"Employee {employee_id} is not active IT staff (department {employee['department']},"
            f" status {employee['status']})"
        )
    return employee


@tool(entities=["Incident", "Employee", "Asset"], **_WRITE)
def create_incident(
    ctx: ToolContext,
    title: str = Field(description="One line: what is broken."),
    service: str = Field(description="The affected service."),
    reporter_id: str = Field(description="The Employee reporting it."),
    priority: IncidentPriority = Field("P3", description="P1 is an outage."),
    description: str = Field("", description="Details; kept as the first note."),
    asset_id: str | None = Field(None, description="The Asset involved, if any."),
) -> dict[str, Any]:
    """Open an incident in status new. Returns the Incident."""
    ctx.require("Employee", reporter_id)
    if asset_id is not None:
        ctx.require("Asset", asset_id)
    notes = [_note(ctx, reporter_id, description.strip())] if description.strip() else []
    return ctx.insert(
        "Incident",
        {
            "title": text("title", title),
            "service": text("service", service),
            "priority": _priority(priority),
            "reporter_id": reporter_id,
            "asset_id": asset_id,
            "notes": notes,
            "created_at": now_iso(ctx),
        },
    )


@tool(entities=["Incident", "Employee"], **_WRITE)
def assign_incident(
    ctx: ToolContext,
    incident_id: str = Field(description="The open Incident."),
    assignee_id: str = Field(description="An active Employee of the IT department."),
    priority: IncidentPriority | None = Field(
        None, description="A new priority, if triage changes it."
    ),
) -> dict[str, Any]:
    """Assign an open incident to an IT engineer (status becomes in_progress), optionally
    changing its priority. Returns the Incident."""
    incident = _open_incident(ctx, incident_id)
    _it_staff(ctx, assignee_id)
    changes: dict[str, Any] = {"assignee_id": assignee_id, "status": "in_progress"}
    if priority is not None and priority != incident["priority"]:
        changes["priority"] = _priority(priority)
    return ctx.update("Incident", incident_id, changes)


@tool(entities=["Incident"], **_WRITE)
def add_incident_note(
    ctx: ToolContext,
    incident_id: str = Field(description="The open Incident."),
    author_id: str = Field(description="The Employee writing the note."),
    note: str = Field(description="The note."),
) -> dict[str, Any]:
    """Append a work note to an open incident. Returns the Incident."""
    incident = _open_incident(ctx, incident_id)
    ctx.require("Employee", author_id)
    notes = [*incident["notes"], _note(ctx, author_id, text("note", note))]
    return ctx.update("Incident", incident_id, {"notes": notes})


@tool(entities=["Incident"], **_WRITE)
def resolve_incident(
    ctx: ToolContext,
    incident_id: str = Field(description="The Incident being worked on."),
    resolution: str = Field(description="What fixed it; added as a note."),
) -> dict[str, Any]:
    """Resolve an incident that is in progress (it must have an assignee). Returns the
    Incident."""
    incident = _open_incident(ctx, incident_id)
    if incident["assignee_id"] is None:
        raise ToolError.precondition(f"Incident {incident_id} has no assignee yet")
    note = _note(ctx, incident["assignee_id"], f"Resolved: {text('resolution', resolution)}")
    return ctx.update(
        "Incident",
        incident_id,
        {"status": "resolved", "resolved_at": now_iso(ctx), "notes": [*incident["notes"], note]},
    )


@tool(entities=["ChangeRequest", "Employee"], **_WRITE)
def create_change_request(
    ctx: ToolContext,
    title: str,
    service: str,
    requester_id: str = Field(description="The Employee asking for the change."),
    window_start: str = Field(description="Maintenance window start, ISO time."),
    window_end: str = Field(description="Maintenance window end, ISO time."),
    risk: ChangeRisk = "low",
    rollback_plan: str = Field("", description="How the change is undone; high risk needs one."),
) -> dict[str, Any]:
    """Submit a change for CAB approval (status pending_approval). Returns the ChangeRequest."""
    ctx.require("Employee", requester_id)
    if risk not in ("low", "medium", "high"):
        raise ToolError.invalid("risk", f"risk {risk!r} is not one of low, medium, high")
    if window_end <= window_start:
        raise ToolError.invalid("window_end", "the window must end after it starts")
    return ctx.insert(
        "ChangeRequest",
        {
            "title": text("title", title),
            "service": text("service", service),
            "risk": risk,
            "requester_id": requester_id,
            "rollback_plan": rollback_plan.strip(),
            "window_start": window_start,
            "window_end": window_end,
            "created_at": now_iso(ctx),
        },
    )


def _pending_change(ctx: ToolContext, change_request_id: str, actor_id: str) -> dict[str, Any]:
    change = ctx.require("ChangeRequest", change_request_id)
    actor = require_permission(ctx, actor_id, "changes.approve")
    if change["status"] != "pending_approval":
        raise ToolError.conflict(f"ChangeRequest {change_request_id} is {change['status']}")
    if actor["employee_id"] == change["requester_id"]:
        raise ToolError.forbidden("the requester of a change cannot decide on it")
    return change


@tool(entities=["ChangeRequest", "User"], **_WRITE)
def approve_change_request(
    ctx: ToolContext,
    change_request_id: str = Field(description="The pending ChangeRequest."),
    actor_id: str = Field(description="The approving User (a CAB member, not the requester)."),
) -> dict[str, Any]:
    """Approve a pending change as a CAB member (changes.approve). A high-risk change needs a
    rollback plan first. Returns the ChangeRequest."""
    change = _pending_change(ctx, change_request_id, actor_id)
    if change["risk"] == "high" and not change["rollback_plan"]:
        raise ToolError.precondition(
            f"ChangeRequest {change_request_id} is high risk without a rollback plan"
        )
    approver = ctx.require("User", actor_id)["employee_id"]
    return ctx.update(
        "ChangeRequest", change_request_id, {"status": "approved", "approver_id": approver}
    )


@tool(entities=["ChangeRequest", "User"], **_WRITE)
def reject_change_request(
    ctx: ToolContext,
    change_request_id: str = Field(description="The pending ChangeRequest."),
    actor_id: str = Field(description="The deciding User (a CAB member, not the requester)."),
) -> dict[str, Any]:
    """Reject a pending change as a CAB member (changes.approve). Returns the ChangeRequest."""
    _pending_change(ctx, change_request_id, actor_id)
    approver = ctx.require("User", actor_id)["employee_id"]
    return ctx.update(
        "ChangeRequest", change_request_id, {"status": "rejected", "approver_id": approver}
    )


@tool(entities=["ChangeRequest"], **_WRITE)
def implement_change(
    ctx: ToolContext, change_request_id: str = Field(description="The approved ChangeRequest.")
) -> dict[str, Any]:
    """Mark an approved change as implemented; only inside its maintenance window. Returns the
    ChangeRequest."""
    change = ctx.require("ChangeRequest", change_request_id)
    if change["status"] != "approved":
        raise ToolError.precondition(f"ChangeRequest {change_request_id} is {change['status']}")
    moment = now_iso(ctx)
    if not change["window_start"] <= moment <= change["window_end"]:
        raise ToolError.precondition(
            f"now ({moment}) is outside the window {change['window_start']} to "
            f"{change['window_end']}"
        )
    return ctx.update("ChangeRequest", change_request_id, {"status": "implemented"})


@tool(entities=["Asset", "Employee"], **_WRITE)
def assign_asset(
    ctx: ToolContext,
    asset_id: str = Field(description="An Asset in stock."),
    employee_id: str = Field(description="The active Employee receiving it."),
) -> dict[str, Any]:
    """Hand an asset from stock to an employee. Returns the Asset."""
    asset = ctx.require("Asset", asset_id)
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.precondition(f"Employee {employee_id} is terminated")
    if asset["status"] == "assigned":
        raise ToolError.conflict(f"Asset {asset_id} is assigned to {asset['assigned_to']}")
    if asset["status"] != "in_stock":
        raise ToolError.precondition(f"Asset {asset_id} is {asset['status']}")
    return ctx.update("Asset", asset_id, {"status": "assigned", "assigned_to": employee_id})


@tool(entities=["Asset"], **_WRITE)
def return_asset(
    ctx: ToolContext,
    asset_id: str = Field(description="An assigned Asset."),
    condition: AssetCondition = Field("good", description="A damaged asset goes to repair."),
) -> dict[str, Any]:
    """Take an asset back from its holder: into stock, or into repair when damaged. Returns the
    Asset."""
    asset = ctx.require("Asset", asset_id)
    if asset["status"] != "assigned":
        raise ToolError.conflict(f"Asset {asset_id} is {asset['status']}, not assigned")
    if condition not in ("good", "damaged"):
        raise ToolError.invalid("condition", "condition is good or damaged")
    status = "in_stock" if condition == "good" else "in_repair"
    return ctx.update("Asset", asset_id, {"status": status, "assigned_to": None})


@tool(entities=["Asset"], **_WRITE)
def retire_asset(
    ctx: ToolContext, asset_id: str = Field(description="An Asset in stock or in repair.")
) -> dict[str, Any]:
    """Retire an asset for disposal; assigned assets must be returned first. Returns it."""
    asset = ctx.require("Asset", asset_id)
    if asset["status"] == "retired":
        raise ToolError.conflict(f"Asset {asset_id} is already retired")
    if asset["status"] == "assigned":
        raise ToolError.precondition(
            f"Asset {asset_id} is still assigned to {asset['assigned_to']}"
        )
    return ctx.update("Asset", asset_id, {"status": "retired"})


TOOLS = [
    *reads(Incident, ["get", "list", "search"], "itsm", ITSM),
    create_incident,
    assign_incident,
    add_incident_note,
    resolve_incident,
    *reads(ChangeRequest, ["get", "list"], "itsm", ITSM),
    create_change_request,
    approve_change_request,
    reject_change_request,
    implement_change,
    *reads(Asset, ["get", "list", "search"], "itsm", ITSM),
    assign_asset,
    return_asset,
    retire_asset,
]
