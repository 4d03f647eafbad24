"""Support rules: escalation raises priority once and moves the ticket to tier-2; notes and
resolutions are appended, never rewritten."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Desk


def _ticket(desk: Desk, id: str = "T-9001", **fields: Any) -> None:
    row = {
        "customer_id": "C-9001",
        "subject": "Grinder is noisy",
        "created_at": "2026-01-10",
        "notes": [{"at": "2026-01-10T08:00:00Z", "author": "customer", "text": "It squeaks."}],
    }
    desk.add("Ticket", id=id, **{**row, **fields})


def test_escalate_raises_priority_moves_queue_and_adds_a_note(desk: Desk) -> None:
    _ticket(desk)
    out = desk.call("escalate_ticket", ticket_id="T-9001", reason="waiting a week")
    row = desk.get("Ticket", "T-9001")
    assert out == row
    assert (row["priority"], row["queue"], row["status"]) == ("high", "tier-2", "open")
    assert len(row["notes"]) == 2 and row["notes"][0]["text"] == "It squeaks."
    assert "waiting a week" in row["notes"][-1]["text"]


@pytest.mark.parametrize(
    ("before", "after"), [("low", "normal"), ("high", "urgent"), ("urgent", "urgent")]
)
def test_escalation_raises_priority_one_level(desk: Desk, before: str, after: str) -> None:
    _ticket(desk, priority=before)
    assert desk.call("escalate_ticket", ticket_id="T-9001", reason="x")["priority"] == after


def test_a_ticket_is_escalated_once(desk: Desk) -> None:
    _ticket(desk)
    desk.call("escalate_ticket", ticket_id="T-9001", reason="x")
    err = desk.error("escalate_ticket", ticket_id="T-9001", reason="again")
    assert err.status == 409 and "T-9001" in err.message


@pytest.mark.parametrize("status", ["resolved", "closed"])
def test_finished_tickets_cannot_be_escalated_or_annotated(desk: Desk, status: str) -> None:
    _ticket(desk, status=status)
    assert desk.error("escalate_ticket", ticket_id="T-9001", reason="x").status == 409
    assert desk.error("add_ticket_note", ticket_id="T-9001", text="x").status == 409
    assert desk.changes() == 0


def test_escalate_unknown_ticket_is_404(desk: Desk) -> None:
    err = desk.error("escalate_ticket", ticket_id="T-0000", reason="x")
    assert err.status == 404 and "T-0000" in err.message


def test_resolve_sets_status_and_records_the_resolution(desk: Desk) -> None:
    _ticket(desk)
    row = desk.call("resolve_ticket", ticket_id="T-9001", resolution="replaced the grinder")
    assert row["status"] == "resolved" and "replaced the grinder" in row["notes"][-1]["text"]


def test_create_ticket_opens_in_tier_1_with_the_description_as_first_note(desk: Desk) -> None:
    row = desk.call(
        "create_ticket", customer_id="C-9001", subject="Login", description="Locked out"
    )
    assert (row["status"], row["queue"], row["priority"]) == ("open", "tier-1", "normal")
    assert row["notes"][0]["text"] == "Locked out" and row["created_at"] == desk.day(0)


def test_create_ticket_checks_customer_and_order(desk: Desk) -> None:
    assert (
        desk.error("create_ticket", customer_id="C-0000", subject="s", description="d").status
        == 404
    )
    desk.order("O-9001", "shipped", items={"P-9001": 1}, customer="C-0001")
    err = desk.error(
        "create_ticket", customer_id="C-9001", subject="s", description="d", order_id="O-9001"
    )
    assert err.status == 422


def test_list_tickets_by_customer_and_status(desk: Desk) -> None:
    _ticket(desk, "T-9001")
    _ticket(desk, "T-9002", status="resolved")
    page = desk.call("list_tickets", customer_id="C-9001", status="open")
    assert [t["id"] for t in page["items"]] == ["T-9001"]
