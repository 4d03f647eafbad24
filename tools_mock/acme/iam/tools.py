"""IAM tools: directory users, roles, groups and memberships. Every change names the acting
user (``actor_id``), whose roles must grant the permission it needs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import IAM, now_iso, reads, text
from .models import Group, GroupMembership, Role, User

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "iam",
    "latency": IAM.write,
    "capacity": IAM.capacity,
}
ACTOR = Field(description="The User making the change; their roles must allow it.")


def permissions_of(ctx: ToolContext, user: dict[str, Any]) -> set[str]:
    granted: set[str] = set()
    for name in user["roles"]:
        role = ctx.get("Role", name)
        if role is not None:
            granted.update(role["permissions"])
    return granted


def require_permission(ctx: ToolContext, actor_id: str, permission: str) -> dict[str, Any]:
    """The acting user, active and holding ``permission`` through a role (403 otherwise)."""
    actor = ctx.get("User", actor_id)
    if actor is None:
        raise ToolError.forbidden(f"unknown actor {actor_id!r}: changes need a directory user")
    if actor["status"] != "active":
        raise ToolError.forbidden(f"actor {actor_id} is {actor['status']}")
    if permission not in permissions_of(ctx, actor):
        raise ToolError.forbidden(
            f"User {actor_id} (roles {actor['roles']}) lacks the permission {permission!r}"
        )
    return actor


def user_of_employee(ctx: ToolContext, employee_id: str) -> dict[str, Any] | None:
    user = ctx.get("User", "U-" + employee_id.removeprefix("E-"))
    if user is not None and user["employee_id"] == employee_id:
        return user
    found = ctx.find("User", lambda u: u["employee_id"] == employee_id)
    return found[0] if found else None


def membership(ctx: ToolContext, user_id: str, group_id: str) -> dict[str, Any] | None:
    found = ctx.find(
        "GroupMembership", lambda m: m["user_id"] == user_id and m["group_id"] == group_id
    )
    return found[0] if found else None


def grant(
    ctx: ToolContext, user_id: str, group_id: str, by: str, request_id: str | None
) -> dict[str, Any]:
    """Add a membership (the caller has checked who may do it)."""
    if membership(ctx, user_id, group_id) is not None:
        raise ToolError.conflict(f"User {user_id} is already in Group {group_id}")
    return ctx.insert(
        "GroupMembership",
        {
            "user_id": user_id,
            "group_id": group_id,
            "granted_at": now_iso(ctx),
            "granted_by": by,
            "access_request_id": request_id,
        },
    )


def _active_user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    user = ctx.require("User", user_id)
    if user["status"] == "disabled":
        raise ToolError.precondition(f"User {user_id} is disabled")
    return user


@tool(entities=["User", "Group", "GroupMembership", "AccessRequest"], **_WRITE)
def add_user_to_group(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to add."),
    group_id: str = Field(description="The Group to add them to."),
    access_request_id: str | None = Field(
        None, description="The approved AccessRequest behind the grant (privileged groups)."
    ),
) -> dict[str, Any]:
    """Add a user to a group. Any group needs the groups.manage permission; a privileged group
    also needs groups.manage_privileged and an approved AccessRequest for that employee and
    group. Returns the new GroupMembership."""
    user = _active_user(ctx, user_id)
    group = ctx.require("Group", group_id)
    require_permission(ctx, actor_id, "groups.manage")
    if group["privileged"]:
        require_permission(ctx, actor_id, "groups.manage_privileged")
        if access_request_id is None:
            raise ToolError.forbidden(
                f"Group {group_id} is privileged: an approved access_request_id is required"
            )
        request = ctx.require("AccessRequest", access_request_id)
        if request["employee_id"] != user["employee_id"] or request["group_id"] != group_id:
            raise ToolError.forbidden(
                f"AccessRequest {access_request_id} does not cover {user_id} in {group_id}"
            )
        if request["status"] != "approved":
            raise ToolError.forbidden(
                f"AccessRequest {access_request_id} is {request['status']}, not approved"
            )
    elif access_request_id is not None:
        ctx.require("AccessRequest", access_request_id)
    return grant(ctx, user_id, group_id, actor_id, access_request_id)


@tool(entities=["User", "Group", "GroupMembership"], **_WRITE)
def remove_user_from_group(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to remove."),
    group_id: str = Field(description="The Group to remove them from."),
) -> dict[str, Any]:
    """Remove a user from a group (groups.manage; groups.manage_privileged for a privileged
    group). Returns the removed membership."""
    ctx.require("User", user_id)
    group = ctx.require("Group", group_id)
    require_permission(ctx, actor_id, "groups.manage")
    if group["privileged"]:
        require_permission(ctx, actor_id, "groups.manage_privileged")
    found = membership(ctx, user_id, group_id)
    if found is None:
        raise ToolError.not_found("GroupMembership", f"{user_id} in {group_id}")
    ctx.delete("GroupMembership", found["id"])
    return {"removed": found}


@tool(entities=["User"], **_WRITE)
def disable_user(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to disable."),
    reason: str = Field(description="Why the account is disabled; kept in the audit trail."),
) -> dict[str, Any]:
    """Disable a directory account: it can no longer sign in anywhere (users.disable). Group
    memberships are kept until removed. Returns the updated User."""
    require_permission(ctx, actor_id, "users.disable")
    user = ctx.require("User", user_id)
    text("reason", reason)
    if user_id == actor_id:
        raise ToolError.forbidden("an actor cannot disable their own account")
    if user["status"] == "disabled":
        raise ToolError.conflict(f"User {user_id} is already disabled")
    return ctx.update("User", user_id, {"status": "disabled"})


@tool(entities=["User", "Employee"], **_WRITE)
def enable_user(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to enable."),
) -> dict[str, Any]:
    """Re-enable a disabled or locked account (users.enable). The account of a terminated
    employee cannot be enabled. Returns the updated User."""
    require_permission(ctx, actor_id, "users.enable")
    user = ctx.require("User", user_id)
    if user["status"] == "active":
        raise ToolError.conflict(f"User {user_id} is already active")
    employee = ctx.get("Employee", user["employee_id"])
    if employee is not None and employee["status"] == "terminated":
        raise ToolError.precondition(f"Employee {employee['id']} is terminated")
    return ctx.update("User", user_id, {"status": "active"})


@tool(entities=["User"], **_WRITE)
def reset_user_mfa(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User whose MFA enrolment is reset."),
) -> dict[str, Any]:
    """Clear a user's MFA enrolment and unlock the account, so they enrol a new device at the
    next sign-in (users.reset_mfa). Disabled accounts cannot be reset. Returns the User."""
    require_permission(ctx, actor_id, "users.reset_mfa")
    user = _active_user(ctx, user_id)
    changes: dict[str, Any] = {"mfa_enabled": False}
    if user["status"] == "locked":
        changes["status"] = "active"
    return ctx.update("User", user_id, changes)


def _role_change(ctx: ToolContext, actor_id: str, user_id: str, role_id: str) -> dict[str, Any]:
    require_permission(ctx, actor_id, "roles.assign")
    ctx.require("Role", role_id)
    if actor_id == user_id:
        raise ToolError.forbidden("an actor cannot change their own roles")
    return _active_user(ctx, user_id)


@tool(entities=["User", "Role"], **_WRITE)
def assign_role(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to receive the role."),
    role_id: str = Field(description="The Role's name, e.g. helpdesk."),
) -> dict[str, Any]:
    """Give a user a role (roles.assign; never to oneself). Returns the updated User."""
    user = _role_change(ctx, actor_id, user_id, role_id)
    if role_id in user["roles"]:
        raise ToolError.conflict(f"User {user_id} already has the role {role_id!r}")
    return ctx.update("User", user_id, {"roles": [*user["roles"], role_id]})


@tool(entities=["User", "Role"], **_WRITE)
def revoke_role(
    ctx: ToolContext,
    actor_id: str = ACTOR,
    user_id: str = Field(description="The User to lose the role."),
    role_id: str = Field(description="The Role's name."),
) -> dict[str, Any]:
    """Take a role away from a user (roles.assign; never from oneself). Returns the User."""
    user = _role_change(ctx, actor_id, user_id, role_id)
    if role_id not in user["roles"]:
        raise ToolError.not_found("role assignment", f"{role_id} on {user_id}")
    return ctx.update("User", user_id, {"roles": [r for r in user["roles"] if r != role_id]})


TOOLS = [
    *reads(User, ["get", "list", "search"], "iam", IAM),
    *reads(Role, ["list"], "iam", IAM),
    *reads(Group, ["get", "list", "search"], "iam", IAM),
    *reads(GroupMembership, ["list"], "iam", IAM),
    add_user_to_group,
    remove_user_from_group,
    disable_user,
    enable_user,
    reset_user_mfa,
    assign_role,
    revoke_role,
]
