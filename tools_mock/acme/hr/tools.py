"""HR tools: the staff directory, leave (balances, requests, manager approval) and access
requests, whose approval grants the IAM group membership."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import HR, now_iso, parse_day, reads, text, today
from ..iam.tools import grant, membership, require_permission, user_of_employee
from .models import LEAVE_TYPES, AccessRequest, Employee, LeaveRequest, LeaveType

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "hr",
    "latency": HR.write,
    "capacity": HR.capacity,
}
_BALANCED = ("vacation", "personal")


def working_days(start: date, end: date) -> int:
    days = 0
    day = start
    while day <= end:
        days += day.weekday() < 5
        day += timedelta(days=1)
    return days


def pending_days(ctx: ToolContext, employee_id: str) -> float:
    return sum(
        r["days"]
        for r in ctx.rows("LeaveRequest")
        if r["employee_id"] == employee_id and r["status"] == "pending" and r["type"] in _BALANCED
    )


def _manager_check(ctx: ToolContext, employee: dict[str, Any], approver_id: str) -> None:
    ctx.require("Employee", approver_id)
    if approver_id == employee["id"]:
        raise ToolError.forbidden("nobody may approve their own request")
    if employee["manager_id"] != approver_id:
        raise ToolError.forbidden(
            f"Employee {approver_id} is not the manager of {employee['id']} "
            f"(the manager is {employee['manager_id']})"
        )


def _pending(ctx: ToolContext, entity: str, id: str) -> dict[str, Any]:
    row = ctx.require(entity, id)
    if row["status"] != "pending":
        raise ToolError.conflict(f"{entity} {id} is already {row['status']}")
    return row


@tool(
    kind="read",
    system="hr",
    entities=["Employee", "LeaveRequest"],
    latency=HR.read,
    capacity=HR.capacity,
)
def get_leave_balance(
    ctx: ToolContext, employee_id: str = Field(description="The Employee, e.g. E-0001.")
) -> dict[str, Any]:
    """An employee's leave balance: days left, days held by pending requests, and days still
    available to request (vacation and personal leave draw on the balance; sick leave does
    not)."""
    employee = ctx.require("Employee", employee_id)
    held = pending_days(ctx, employee_id)
    return {
        "employee_id": employee_id,
        "leave_balance": employee["leave_balance"],
        "pending_days": held,
        "available_days": round(employee["leave_balance"] - held, 2),
    }


@tool(entities=["Employee"], **_WRITE)
def update_employee_profile(
    ctx: ToolContext,
    employee_id: str = Field(description="The Employee to change."),
    title: str | None = Field(None, description="New job title."),
    location: str | None = Field(None, description="New office location."),
) -> dict[str, Any]:
    """Change an employee's job title or office location; fields not given are kept. Records of
    terminated employees cannot change. Returns the updated Employee."""
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.precondition(f"Employee {employee_id} is terminated")
    changes = {}
    if title is not None:
        changes["title"] = text("title", title)
    if location is not None:
        changes["location"] = text("location", location)
    if not changes:
        raise ToolError.invalid("employee_id", "give at least one of title, location")
    return ctx.update("Employee", employee_id, changes)


@tool(entities=["Employee", "LeaveRequest"], **_WRITE)
def request_leave(
    ctx: ToolContext,
    employee_id: str = Field(description="The Employee taking leave."),
    start_date: str = Field(description="First day off, YYYY-MM-DD."),
    end_date: str = Field(description="Last day off, YYYY-MM-DD."),
    type: LeaveType = "vacation",
    note: str = "",
) -> dict[str, Any]:
    """File a leave request for the employee's manager to decide. Dates must not lie in the past;
    vacation and personal leave may not exceed the available balance (balance less pending
    requests), and requests may not overlap another pending or approved one. Returns the new
    LeaveRequest with its working-day count."""
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.precondition(f"Employee {employee_id} is terminated")
    if type not in LEAVE_TYPES:
        raise ToolError.invalid("type", f"type {type!r} is not one of {list(LEAVE_TYPES)}")
    try:
        start, end = parse_day(start_date), parse_day(end_date)
    except ValueError:
        raise ToolError.invalid("start_date", "dates must be YYYY-MM-DD") from None
    if end < start:
        raise ToolError.invalid("end_date", "end_date is before start_date")
    if start < today(ctx):
        raise ToolError.invalid("start_date", f"{start_date} is in the past")
    days = float(working_days(start, end))
    if days == 0:
        raise ToolError.invalid("end_date", "the dates contain no working day")
    for other in ctx.rows("LeaveRequest"):
        if (
            other["employee_id"] == employee_id
            and other["status"] in ("pending", "approved")
            and other["start_date"] <= end.isoformat()
            and other["end_date"] >= start.isoformat()
        ):
            raise ToolError.conflict(f"overlaps LeaveRequest {other['id']} ({other['status']})")
    if type in _BALANCED:
        available = employee["leave_balance"] - pending_days(ctx, employee_id)
        if days > available + 1e-9:
            raise ToolError.precondition(
                f"{days:g} days requested but only {available:g} available for {employee_id}"
            )
    return ctx.insert(
        "LeaveRequest",
        {
            "employee_id": employee_id,
            "type": type,
            "start_date": start.isoformat(),
            "end_date": end.isoformat(),
            "days": days,
            "note": note,
            "created_at": now_iso(ctx),
        },
    )


@tool(entities=["Employee", "LeaveRequest"], **_WRITE)
def approve_leave(
    ctx: ToolContext,
    leave_request_id: str = Field(description="The pending LeaveRequest."),
    approver_id: str = Field(description="The approving Employee: the requester's manager."),
) -> dict[str, Any]:
    """Approve a pending leave request as the employee's manager. Vacation and personal days are
    deducted from the balance. Returns the LeaveRequest and the new balance."""
    request = _pending(ctx, "LeaveRequest", leave_request_id)
    employee = ctx.require("Employee", request["employee_id"])
    _manager_check(ctx, employee, approver_id)
    balance = employee["leave_balance"]
    if request["type"] in _BALANCED:
        if request["days"] > balance + 1e-9:
            raise ToolError.precondition(
                f"{request['days']:g} days exceed the balance {balance:g} of {employee['id']}"
            )
        balance = round(balance - request["days"], 2)
        ctx.update("Employee", employee["id"], {"leave_balance": balance})
    updated = ctx.update(
        "LeaveRequest", leave_request_id, {"status": "approved", "approver_id": approver_id}
    )
    return {"leave_request": updated, "leave_balance": balance}


@tool(entities=["Employee", "LeaveRequest"], **_WRITE)
def reject_leave(
    ctx: ToolContext,
    leave_request_id: str = Field(description="The pending LeaveRequest."),
    approver_id: str = Field(description="The deciding Employee: the requester's manager."),
    reason: str = Field(description="Why the leave is declined."),
) -> dict[str, Any]:
    """Decline a pending leave request as the employee's manager. Returns the LeaveRequest."""
    request = _pending(ctx, "LeaveRequest", leave_request_id)
    _manager_check(ctx, ctx.require("Employee", request["employee_id"]), approver_id)
    return ctx.update(
        "LeaveRequest",
        leave_request_id,
        {"status": "rejected", "approver_id": approver_id, "note": text("reason", reason)},
    )


@tool(entities=["Employee", "LeaveRequest"], **_WRITE)
def cancel_leave(
    ctx: ToolContext, leave_request_id: str = Field(description="The LeaveRequest to withdraw.")
) -> dict[str, Any]:
    """Withdraw a pending request, or an approved one that has not started yet (its days go back
    to the balance). Returns the LeaveRequest."""
    request = ctx.require("LeaveRequest", leave_request_id)
    if request["status"] not in ("pending", "approved"):
        raise ToolError.conflict(f"LeaveRequest {leave_request_id} is {request['status']}")
    if request["status"] == "approved":
        if parse_day(request["start_date"]) <= today(ctx):
            raise ToolError.precondition(
                f"LeaveRequest {leave_request_id} has already started on {request['start_date']}"
            )
        if request["type"] in _BALANCED:
            employee = ctx.require("Employee", request["employee_id"])
            balance = round(employee["leave_balance"] + request["days"], 2)
            ctx.update("Employee", employee["id"], {"leave_balance": balance})
    return ctx.update("LeaveRequest", leave_request_id, {"status": "cancelled"})


@tool(entities=["Employee", "Group", "GroupMembership", "AccessRequest"], **_WRITE)
def create_access_request(
    ctx: ToolContext,
    employee_id: str = Field(description="The Employee who needs access."),
    group_id: str = Field(description="The IAM Group they need to join."),
    justification: str = Field(description="Why the access is needed, for the approver."),
) -> dict[str, Any]:
    """Ask for an employee to be added to an IAM group; their manager decides. Fails when they
    are already a member or a request for that group is pending. Returns the AccessRequest."""
    employee = ctx.require("Employee", employee_id)
    ctx.require("Group", group_id)
    if employee["status"] == "terminated":
        raise ToolError.precondition(f"Employee {employee_id} is terminated")
    user = user_of_employee(ctx, employee_id)
    if user is not None and membership(ctx, user["id"], group_id) is not None:
        raise ToolError.conflict(f"Employee {employee_id} is already in Group {group_id}")
    for other in ctx.rows("AccessRequest"):
        if (
            other["employee_id"] == employee_id
            and other["group_id"] == group_id
            and other["status"] == "pending"
        ):
            raise ToolError.conflict(f"AccessRequest {other['id']} for that group is pending")
    return ctx.insert(
        "AccessRequest",
        {
            "employee_id": employee_id,
            "group_id": group_id,
            "justification": text("justification", justification),
            "created_at": now_iso(ctx),
        },
    )


@tool(entities=["Employee", "User", "AccessRequest", "GroupMembership"], **_WRITE)
def approve_access_request(
    ctx: ToolContext,
    access_request_id: str = Field(description="The pending AccessRequest."),
    approver_id: str = Field(description="The approving Employee: the requester's manager."),
) -> dict[str, Any]:
    """Approve a pending access request as the employee's manager. The employee's directory
    user is added to the group at once. Returns the AccessRequest and the new
    GroupMembership."""
    request = _pending(ctx, "AccessRequest", access_request_id)
    employee = ctx.require("Employee", request["employee_id"])
    _manager_check(ctx, employee, approver_id)
    user = user_of_employee(ctx, employee["id"])
    if user is None or user["status"] == "disabled":
        raise ToolError.precondition(f"Employee {employee['id']} has no active directory user")
    approver_user = user_of_employee(ctx, approver_id)
    granted = grant(
        ctx,
        user["id"],
        request["group_id"],
        approver_user["id"] if approver_user else approver_id,
        access_request_id,
    )
    updated = ctx.update(
        "AccessRequest",
        access_request_id,
        {"status": "approved", "approver_id": approver_id, "decided_at": now_iso(ctx)},
    )
    return {"access_request": updated, "membership": granted}


@tool(entities=["Employee", "AccessRequest"], **_WRITE)
def reject_access_request(
    ctx: ToolContext,
    access_request_id: str = Field(description="The pending AccessRequest."),
    approver_id: str = Field(description="The deciding Employee: the requester's manager."),
) -> dict[str, Any]:
    """Decline a pending access request as the employee's manager. Returns the request."""
    request = _pending(ctx, "AccessRequest", access_request_id)
    _manager_check(ctx, ctx.require("Employee", request["employee_id"]), approver_id)
    return ctx.update(
        "AccessRequest",
        access_request_id,
        {"status": "rejected", "approver_id": approver_id, "decided_at": now_iso(ctx)},
    )


@tool(entities=["Employee", "User", "Asset"], **_WRITE)
def terminate_employee(
    ctx: ToolContext,
    actor_id: str = Field(description="The User making the change (needs employees.terminate)."),
    employee_id: str = Field(description="The departing Employee."),
) -> dict[str, Any]:
    """Record an employee's departure. Offboarding must be complete first: their directory
    account disabled and every company asset returned. Returns the updated Employee."""
    require_permission(ctx, actor_id, "employees.terminate")
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.conflict(f"Employee {employee_id} is already terminated")
    user = user_of_employee(ctx, employee_id)
    if user is not None and user["status"] != "disabled":
        raise ToolError.precondition(
            f"directory user {user['id']} of {employee_id} is still {user['status']}"
        )
    held = [a["id"] for a in ctx.rows("Asset") if a["assigned_to"] == employee_id]
    if held:
        raise ToolError.precondition(f"{employee_id} still holds assets {held}")
    return ctx.update("Employee", employee_id, {"status": "terminated"})


TOOLS = [
    *reads(Employee, ["get", "list", "search"], "hr", HR),
    update_employee_profile,
    get_leave_balance,
    *reads(LeaveRequest, ["get", "list"], "hr", HR),
    request_leave,
    approve_leave,
    reject_leave,
    cancel_leave,
    *reads(AccessRequest, ["get", "list"], "hr", HR),
    create_access_request,
    approve_access_request,
    reject_access_request,
    terminate_employee,
]
