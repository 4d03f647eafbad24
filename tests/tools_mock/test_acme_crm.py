"""CRM rules: finding customers, opening accounts, keeping contact details valid and unique."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Desk


def test_search_finds_a_customer_by_email_case_insensitively(desk: Desk) -> None:
    page = desk.call("search_customers", query="ADA.QUILL@example.org")
    assert [c["id"] for c in page["items"]] == ["C-9001"]


def test_get_unknown_customer_is_404_naming_the_id(desk: Desk) -> None:
    err = desk.error("get_customer", customer_id="C-0000")
    assert err.status == 404 and "Customer" in err.message and "C-0000" in err.message


def test_create_customer_assigns_the_next_id_and_today(desk: Desk) -> None:
    row = desk.call("create_customer", name="Bo Lane", email="Bo.Lane@Example.org", tier="gold")
    assert row["id"].startswith("C-") and row["email"] == "bo.lane@example.org"
    assert row["created_at"] == desk.day(0) and row["account_credit"] == 0.0
    assert desk.get("Customer", row["id"])["tier"] == "gold"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"name": "X", "email": "not-an-email"}, 422),
        ({"name": "X", "email": "x@example.org", "tier": "diamond"}, 422),
        ({"name": " ", "email": "x@example.org"}, 422),
        ({"name": "X", "email": "ada.quill@example.org"}, 409),
    ],
    ids=["bad-email", "bad-tier", "no-name", "email-taken"],
)
def test_create_customer_validates(desk: Desk, args: dict[str, str], code: int) -> None:
    assert desk.error("create_customer", **args).status == code
    assert desk.changes() == 0


def test_unknown_arguments_are_rejected_by_the_schema(desk: Desk) -> None:
    err = desk.error("create_customer", name="X", email="x@example.org", vip=True)
    assert err.status == 422 and "vip" in err.message


def test_update_contact_changes_only_given_fields(desk: Desk) -> None:
    row = desk.call("update_customer_contact", customer_id="C-9001", phone="+1-555-0199")
    assert row["phone"] == "+1-555-0199" and row["email"] == "ada.quill@example.org"


def test_update_contact_refuses_an_email_of_another_customer(desk: Desk) -> None:
    other = desk.call("create_customer", name="Bo Lane", email="bo@example.org")
    err = desk.error(
        "update_customer_contact", customer_id=other["id"], email="ada.quill@example.org"
    )
    assert err.status == 409 and "C-9001" in err.message


def test_update_contact_needs_a_change_and_an_open_account(desk: Desk) -> None:
    assert desk.error("update_customer_contact", customer_id="C-9001").status == 422
    desk.world.update("Customer", "C-9001", {"status": "closed"}, now=0.0)
    assert desk.error("update_customer_contact", customer_id="C-9001", phone="1").status == 412
