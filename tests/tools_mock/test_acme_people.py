"""HR and IAM together: leave within the balance, manager approvals, access requests that grant
memberships, privileged groups, role-based permissions and the order offboarding demands."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


@pytest.fixture
def team(desk: Desk) -> Desk:
    desk.employee("E-9100", department="engineering")
    desk.employee("E-9101", manager="E-9100", leave_balance=5)
    desk.employee("E-9102", manager="E-9100")
    desk.employee("E-9103", department="it", roles=("employee", "helpdesk"))
    desk.employee("E-9104", department="it", roles=("employee", "iam-admin"))
    desk.employee("E-9105", department="hr", roles=("employee", "hr-partner"))
    return desk


def test_leave_over_the_available_balance_is_a_precondition_failure(team: Desk) -> None:
    first = team.call(
        "request_leave", employee_id="E-9101", start_date="2026-02-02", end_date="2026-02-04"
    )
    assert first["days"] == 3 and first["status"] == "pending"
    balance = team.call("get_leave_balance", employee_id="E-9101")
    assert (balance["pending_days"], balance["available_days"]) == (3, 2)
    err = team.error(
        "request_leave", employee_id="E-9101", start_date="2026-02-09", end_date="2026-02-11"
    )
    assert err.status == 412
    sick = team.call(
        "request_leave",
        employee_id="E-9101",
        start_date="2026-02-09",
        end_date="2026-02-11",
        type="sick",
    )
    assert sick["days"] == 3
    overlap = team.error(
        "request_leave",
        employee_id="E-9101",
        start_date="2026-02-04",
        end_date="2026-02-05",
        type="sick",
    )
    assert overlap.status == 409


def test_only_the_manager_approves_and_approval_draws_the_balance(team: Desk) -> None:
    req = team.call(
        "request_leave", employee_id="E-9101", start_date="2026-02-02", end_date="2026-02-03"
    )
    assert (
        team.error("approve_leave", leave_request_id=req["id"], approver_id="E-9102").status == 403
    )
    assert (
        team.error("approve_leave", leave_request_id=req["id"], approver_id="E-9101").status == 403
    )
    out = team.call("approve_leave", leave_request_id=req["id"], approver_id="E-9100")
    assert out["leave_balance"] == 3 and team.get("Employee", "E-9101")["leave_balance"] == 3
    assert (
        team.error("approve_leave", leave_request_id=req["id"], approver_id="E-9100").status == 409
    )
    team.call("cancel_leave", leave_request_id=req["id"])
    assert team.get("Employee", "E-9101")["leave_balance"] == 5


def test_approving_an_access_request_adds_the_iam_membership(team: Desk) -> None:
    req = team.call(
        "create_access_request", employee_id="E-9101", group_id="G-008", justification="on-call"
    )
    assert (
        team.error(
            "create_access_request", employee_id="E-9101", group_id="G-008", justification="again"
        ).status
        == 409
    )
    assert (
        team.error(
            "approve_access_request", access_request_id=req["id"], approver_id="E-9102"
        ).status
        == 403
    )
    out = team.call("approve_access_request", access_request_id=req["id"], approver_id="E-9100")
    member = out["membership"]
    assert (member["user_id"], member["group_id"], member["access_request_id"]) == (
        "U-9101",
        "G-008",
        req["id"],
    )
    assert (
        team.error(
            "create_access_request", employee_id="E-9101", group_id="G-008", justification="x"
        ).status
        == 409
    )


def test_privileged_groups_need_an_admin_and_an_approved_request(team: Desk) -> None:
    team.call("add_user_to_group", actor_id="U-9103", user_id="U-9102", group_id="G-002")
    assert (
        team.error(
            "add_user_to_group", actor_id="U-9103", user_id="U-9102", group_id="G-002"
        ).status
        == 409
    )
    assert (
        team.error(
            "add_user_to_group", actor_id="U-9103", user_id="U-9102", group_id="G-009"
        ).status
        == 403
    )
    assert (
        team.error(
            "add_user_to_group", actor_id="U-9104", user_id="U-9102", group_id="G-009"
        ).status
        == 403
    )
    assert (
        team.error(
            "add_user_to_group", actor_id="U-9101", user_id="U-9102", group_id="G-002"
        ).status
        == 403
    )
    req = team.call(
        "create_access_request", employee_id="E-9102", group_id="G-009", justification="ops"
    )
    assert (
        team.error(
            "add_user_to_group",
            actor_id="U-9104",
            user_id="U-9102",
            group_id="G-009",
            access_request_id=req["id"],
        ).status
        == 403
    )
    team.call("approve_access_request", access_request_id=req["id"], approver_id="E-9100")
    # the approval already granted it: adding again is a conflict
    assert (
        team.error(
            "add_user_to_group",
            actor_id="U-9104",
            user_id="U-9102",
            group_id="G-009",
            access_request_id=req["id"],
        ).status
        == 409
    )


def test_roles_are_assigned_by_admins_and_never_to_oneself(team: Desk) -> None:
    assert (
        team.error("assign_role", actor_id="U-9103", user_id="U-9101", role_id="helpdesk").status
        == 403
    )
    assert (
        team.error("assign_role", actor_id="U-9104", user_id="U-9104", role_id="helpdesk").status
        == 403
    )
    assert (
        team.error("assign_role", actor_id="U-9104", user_id="U-9101", role_id="wizard").status
        == 404
    )
    user = team.call("assign_role", actor_id="U-9104", user_id="U-9101", role_id="helpdesk")
    assert user["roles"] == ["employee", "helpdesk"]
    team.call("revoke_role", actor_id="U-9104", user_id="U-9101", role_id="helpdesk")
    assert team.get("User", "U-9101")["roles"] == ["employee"]


def test_offboarding_is_recorded_only_after_access_and_assets_are_gone(team: Desk) -> None:
    team.add(
        "Asset",
        id="AST-09001",
        type="laptop",
        model="X1",
        serial="S1",
        status="assigned",
        assigned_to="E-9101",
        purchased_at="2024-01-01",
        cost=1500.0,
    )
    err = team.error("terminate_employee", actor_id="U-9105", employee_id="E-9101")
    assert err.status == 412 and "U-9101" in err.message
    assert team.error("terminate_employee", actor_id="U-9104", employee_id="E-9101").status == 403
    team.call("disable_user", actor_id="U-9104", user_id="U-9101", reason="leaving")
    err = team.error("terminate_employee", actor_id="U-9105", employee_id="E-9101")
    assert err.status == 412 and "AST-09001" in err.message
    team.call("return_asset", asset_id="AST-09001")
    assert (
        team.call("terminate_employee", actor_id="U-9105", employee_id="E-9101")["status"]
        == "terminated"
    )
    assert team.error("enable_user", actor_id="U-9104", user_id="U-9101").status == 412


def test_mfa_reset_needs_the_helpdesk_and_unlocks(team: Desk) -> None:
    team.world.update("User", "U-9101", {"status": "locked"}, now=team.now)
    assert team.error("reset_user_mfa", actor_id="U-9102", user_id="U-9101").status == 403
    user = team.call("reset_user_mfa", actor_id="U-9103", user_id="U-9101")
    assert (user["status"], user["mfa_enabled"]) == ("active", False)
