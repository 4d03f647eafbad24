"""IT service desk, communications and knowledge base: who may do what, and what is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


@pytest.fixture
def office(desk: Desk) -> Desk:
    desk.employee("E-9100", department="it", roles=("employee", "cab-member"))
    desk.employee("E-9101", department="engineering", roles=("employee", "cab-member"))
    desk.employee("E-9102", department="it", status="on_leave")
    desk.employee("E-9103", department="sales")
    return desk


def test_incidents_go_to_active_it_staff_and_resolve_with_a_note(office: Desk) -> None:
    inc = office.call(
        "create_incident", title="VPN down", service="vpn", reporter_id="E-9103", priority="P2"
    )
    assert office.error("resolve_incident", incident_id=inc["id"], resolution="x").status == 412
    assert (
        office.error("assign_incident", incident_id=inc["id"], assignee_id="E-9102").status == 412
    )
    assert (
        office.error("assign_incident", incident_id=inc["id"], assignee_id="E-9103").status == 412
    )
    out = office.call("assign_incident", incident_id=inc["id"], assignee_id="E-9100", priority="P1")
    assert (out["status"], out["priority"]) == ("in_progress", "P1")
    done = office.call("resolve_incident", incident_id=inc["id"], resolution="restarted")
    assert done["status"] == "resolved" and done["notes"][-1]["text"] == "Resolved: restarted"
    assert (
        office.error(
            "add_incident_note", incident_id=inc["id"], author_id="E-9100", note="x"
        ).status
        == 409
    )


def test_changes_are_approved_by_another_cab_member_with_a_rollback_plan(office: Desk) -> None:
    args = {
        "title": "DB upgrade",
        "service": "orders-db",
        "requester_id": "E-9101",
        "window_start": "2026-01-15T09:00:00Z",
        "window_end": "2026-01-15T23:00:00Z",
    }
    risky = office.call("create_change_request", risk="high", **args)
    assert (
        office.error(
            "approve_change_request", change_request_id=risky["id"], actor_id="U-9100"
        ).status
        == 412
    )
    plain = office.call("create_change_request", rollback_plan="revert", **args)
    assert (
        office.error(
            "approve_change_request", change_request_id=plain["id"], actor_id="U-9101"
        ).status
        == 403
    )
    assert (
        office.error(
            "approve_change_request", change_request_id=plain["id"], actor_id="U-9103"
        ).status
        == 403
    )
    assert office.error("implement_change", change_request_id=plain["id"]).status == 412
    office.call("approve_change_request", change_request_id=plain["id"], actor_id="U-9100")
    assert office.call("implement_change", change_request_id=plain["id"])["status"] == "implemented"


def test_assets_move_through_stock(office: Desk) -> None:
    office.add(
        "Asset",
        id="AST-09001",
        type="laptop",
        model="X1",
        serial="S1",
        status="in_stock",
        purchased_at="2024-01-01",
        cost=1500.0,
    )
    office.call("assign_asset", asset_id="AST-09001", employee_id="E-9103")
    assert office.error("assign_asset", asset_id="AST-09001", employee_id="E-9100").status == 409
    assert office.error("retire_asset", asset_id="AST-09001").status == 412
    assert (
        office.call("return_asset", asset_id="AST-09001", condition="damaged")["status"]
        == "in_repair"
    )
    assert office.call("retire_asset", asset_id="AST-09001")["status"] == "retired"


def test_internal_email_only_reaches_staff_and_external_email_is_outbound(office: Desk) -> None:
    err = office.error(
        "send_internal_email", sender_id="E-9100", to=["someone@gmail.com"], subject="s", body="b"
    )
    assert err.status == 422 and "outside" in err.message
    err = office.error(
        "send_internal_email", sender_id="E-9100", to=["ghost@acme.example"], subject="s", body="b"
    )
    assert err.status == 404
    ok = office.call(
        "send_internal_email",
        sender_id="E-9100",
        to=["staff9103@acme.example"],
        subject="s",
        body="b",
    )
    assert ok["direction"] == "internal"
    assert (
        office.error(
            "send_external_email",
            sender_id="E-9100",
            to=["staff9103@acme.example"],
            subject="s",
            body="b",
        ).status
        == 422
    )
    out = office.call(
        "send_external_email",
        sender_id="E-9100",
        to=["ada.quill@example.org"],
        subject="s",
        body="b",
    )
    assert out["direction"] == "outbound"


def test_calendar_refuses_double_booking_and_only_the_organizer_cancels(office: Desk) -> None:
    meeting = {
        "organizer_id": "E-9100",
        "title": "sync",
        "start": "2026-01-20T15:00:00Z",
        "end": "2026-01-20T15:30:00Z",
        "attendees": ["staff9103@acme.example"],
    }
    event = office.call("create_calendar_event", location="Room A", **meeting)
    assert (
        office.error("create_calendar_event", **{**meeting, "organizer_id": "E-9101"}).status == 409
    )
    assert (
        office.error(
            "create_calendar_event",
            **{**meeting, "organizer_id": "E-9101", "attendees": []},
            location="Room A",
        ).status
        == 409
    )
    assert (
        office.error(
            "create_calendar_event",
            **{**meeting, "start": "2026-01-01T10:00:00Z", "end": "2026-01-01T11:00:00Z"},
        ).status
        == 422
    )
    busy = office.call("get_free_busy", employee_ids=["E-9103"], date="2026-01-20")
    assert busy["busy"]["E-9103"][0]["event_id"] == event["id"]
    assert (
        office.error("cancel_calendar_event", event_id=event["id"], actor_id="E-9103").status == 403
    )
    office.call("cancel_calendar_event", event_id=event["id"], actor_id="E-9100")


def test_public_and_internal_channels_have_their_own_tools(office: Desk) -> None:
    assert (
        office.error("post_chat_message", channel_id="CH-008", author_id="E-9100", text="x").status
        == 422
    )
    assert (
        office.error(
            "post_public_message", channel_id="CH-003", author_id="E-9100", text="x"
        ).status
        == 422
    )
    assert (
        office.call("post_public_message", channel_id="CH-008", author_id="E-9100", text="ok")[
            "channel_id"
        ]
        == "CH-008"
    )


def test_articles_need_a_second_person_to_publish(office: Desk) -> None:
    draft = office.call(
        "create_article", author_id="E-9100", title="VPN", body="Steps", category="it"
    )
    assert (
        office.error("publish_article", article_id=draft["id"], reviewer_id="E-9100").status == 403
    )
    assert (
        office.call("publish_article", article_id=draft["id"], reviewer_id="E-9101")["status"]
        == "published"
    )
    edited = office.call("update_article", article_id=draft["id"], body="New steps")
    assert (edited["status"], edited["reviewer_id"]) == ("draft", None)
    office.call("archive_article", article_id=draft["id"])
    assert office.error("update_article", article_id=draft["id"], body="x").status == 412


def test_policies_are_acknowledged_once_per_version(office: Desk) -> None:
    hits = office.call("search_policy_documents", query="expense")
    assert hits["items"][0]["id"] == "POL-004" and "75.00" in hits["items"][0]["body"]
    office.call("acknowledge_policy", employee_id="E-9103", policy_id="POL-004")
    assert (
        office.error("acknowledge_policy", employee_id="E-9103", policy_id="POL-004").status == 409
    )
