"""Communication tools: email to staff and to the outside world, calendars, and chat. Tools
whose names say external or public send data outside the company."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import COMMS, is_internal, now_at, now_iso, reads, text
from .models import CalendarEvent, Channel, ChatMessage, Email

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "comms",
    "latency": COMMS.write,
    "capacity": COMMS.capacity,
}


def _sender(ctx: ToolContext, employee_id: str) -> dict[str, Any]:
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.forbidden(f"Employee {employee_id} is terminated and cannot send")
    return employee


def _addresses(argument: str, values: list[str]) -> list[str]:
    out = []
    for value in values:
        address = value.strip().lower()
        if "@" not in address or "." not in address.split("@")[-1]:
            raise ToolError.invalid(argument, f"{value!r} is not an email address")
        out.append(address)
    return out


def _staff_by_email(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    return {e["email"]: e for e in ctx.rows("Employee")}


def _send(
    ctx: ToolContext,
    sender: dict[str, Any],
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    direction: str,
) -> dict[str, Any]:
    return ctx.insert(
        "Email",
        {
            "sender": sender["email"],
            "to": to,
            "cc": cc,
            "subject": text("subject", subject),
            "body": text("body", body),
            "direction": direction,
            "sent_at": now_iso(ctx),
        },
    )


@tool(entities=["Email", "Employee"], **_WRITE)
def send_internal_email(
    ctx: ToolContext,
    sender_id: str = Field(description="The Employee sending."),
    to: list[str] = Field(description="Staff addresses (@acme.example)."),
    subject: str = Field(description="Subject line."),
    body: str = Field(description="Plain-text body."),
    cc: list[str] = Field(default_factory=list, description="More staff addresses."),
) -> dict[str, Any]:
    """Email colleagues. Every recipient must be a current member of staff; mail for anyone
    outside the company goes through send_external_email. Returns the Email."""
    sender = _sender(ctx, sender_id)
    to, cc = _addresses("to", to), _addresses("cc", cc)
    if not to:
        raise ToolError.invalid("to", "name at least one recipient")
    staff = _staff_by_email(ctx)
    for address in [*to, *cc]:
        if not is_internal(address):
            raise ToolError.invalid("to", f"{address} is outside the company")
        if address not in staff or staff[address]["status"] == "terminated":
            raise ToolError.not_found("Employee with email", address)
    return _send(ctx, sender, to, cc, subject, body, "internal")


@tool(entities=["Email", "Employee"], **_WRITE)
def send_external_email(
    ctx: ToolContext,
    sender_id: str = Field(description="The Employee sending."),
    to: list[str] = Field(description="Recipient addresses; at least one outside Acme."),
    subject: str = Field(description="Subject line."),
    body: str = Field(description="Plain-text body."),
) -> dict[str, Any]:
    """Email people outside the company (customers, vendors, partners). The message leaves
    Acme and cannot be recalled. Returns the Email."""
    sender = _sender(ctx, sender_id)
    to = _addresses("to", to)
    if not any(not is_internal(a) for a in to):
        raise ToolError.invalid("to", "no external recipient: use send_internal_email")
    return _send(ctx, sender, to, [], subject, body, "outbound")


def _busy(
    ctx: ToolContext, who: str, email: str, start: str, end: str, skip: str | None = None
) -> dict[str, Any] | None:
    for event in ctx.rows("CalendarEvent"):
        if event["status"] != "confirmed" or event["id"] == skip:
            continue
        if event["organizer_id"] != who and email not in event["attendees"]:
            continue
        if event["start"] < end and event["end"] > start:
            return event
    return None


@tool(
    kind="read",
    system="comms",
    entities=["CalendarEvent", "Employee"],
    latency=COMMS.read,
    capacity=COMMS.capacity,
)
def get_free_busy(
    ctx: ToolContext,
    employee_ids: list[str] = Field(description="Employees whose calendars to read."),
    date: str = Field(description="The day, YYYY-MM-DD."),
) -> dict[str, Any]:
    """Busy intervals of each employee on one day (confirmed events they organise or attend)."""
    out = {}
    for employee_id in employee_ids:
        employee = ctx.require("Employee", employee_id)
        busy = [
            {"start": e["start"], "end": e["end"], "event_id": e["id"]}
            for e in ctx.rows("CalendarEvent")
            if e["status"] == "confirmed"
            and e["start"][:10] == date
            and (e["organizer_id"] == employee_id or employee["email"] in e["attendees"])
        ]
        out[employee_id] = sorted(busy, key=lambda b: b["start"])
    return {"date": date, "busy": out}


@tool(entities=["CalendarEvent", "Employee"], **_WRITE)
def create_calendar_event(
    ctx: ToolContext,
    organizer_id: str = Field(description="The Employee organising."),
    title: str = Field(description="What the meeting is about."),
    start: str = Field(description="Start, ISO UTC, e.g. 2026-01-20T15:00:00Z."),
    end: str = Field(description="End, ISO UTC."),
    attendees: list[str] = Field(default_factory=list, description="Invitee addresses."),
    location: str = Field("", description="Room or video link."),
) -> dict[str, Any]:
    """Schedule a meeting in the future. Fails with a conflict when the organizer or a staff
    attendee is already busy then, or the room is booked. Returns the CalendarEvent."""
    organizer = _sender(ctx, organizer_id)
    if not (len(start) == len(end) == 20 and start.endswith("Z") and end.endswith("Z")):
        raise ToolError.invalid("start", "start and end must look like 2026-01-20T15:00:00Z")
    if end <= start:
        raise ToolError.invalid("end", "the meeting must end after it starts")
    if start < now_at(ctx).strftime("%Y-%m-%dT%H:%M:%SZ"):
        raise ToolError.invalid("start", f"{start} is in the past")
    attendees = _addresses("attendees", attendees)
    staff = _staff_by_email(ctx)
    clash = _busy(ctx, organizer_id, organizer["email"], start, end)
    if clash is not None:
        raise ToolError.conflict(f"{organizer_id} is busy: {clash['id']} {clash['start']}")
    for address in attendees:
        if address in staff:
            clash = _busy(ctx, staff[address]["id"], address, start, end)
            if clash is not None:
                raise ToolError.conflict(f"{address} is busy: {clash['id']} {clash['start']}")
    if location.strip():
        for event in ctx.rows("CalendarEvent"):
            if (
                event["status"] == "confirmed"
                and event["location"] == location.strip()
                and event["start"] < end
                and event["end"] > start
            ):
                raise ToolError.conflict(f"{location} is booked by {event['id']}")
    return ctx.insert(
        "CalendarEvent",
        {
            "title": text("title", title),
            "organizer_id": organizer_id,
            "attendees": attendees,
            "start": start,
            "end": end,
            "location": location.strip(),
        },
    )


@tool(entities=["CalendarEvent"], **_WRITE)
def cancel_calendar_event(
    ctx: ToolContext,
    event_id: str = Field(description="The confirmed CalendarEvent."),
    actor_id: str = Field(description="The Employee cancelling; only the organizer may."),
) -> dict[str, Any]:
    """Cancel a meeting (organizer only). Returns the CalendarEvent."""
    event = ctx.require("CalendarEvent", event_id)
    if event["organizer_id"] != actor_id:
        raise ToolError.forbidden(f"only the organizer {event['organizer_id']} may cancel")
    if event["status"] == "cancelled":
        raise ToolError.conflict(f"CalendarEvent {event_id} is already cancelled")
    return ctx.update("CalendarEvent", event_id, {"status": "cancelled"})


def _post(
    ctx: ToolContext, channel_id: str, author_id: str, body: str, visibility: str
) -> dict[str, Any]:
    channel = ctx.require("Channel", channel_id)
    _sender(ctx, author_id)
    if channel["visibility"] != visibility:
        other = "post_public_message" if visibility == "internal" else "post_chat_message"
        raise ToolError.invalid(
            "channel_id", f"{channel['name']} is {channel['visibility']}: use {other}"
        )
    return ctx.insert(
        "ChatMessage",
        {
            "channel_id": channel_id,
            "author_id": author_id,
            "text": text("text", body),
            "posted_at": now_iso(ctx),
        },
    )


@tool(entities=["ChatMessage", "Channel"], **_WRITE)
def post_chat_message(
    ctx: ToolContext,
    channel_id: str = Field(description="An internal Channel."),
    author_id: str = Field(description="The Employee posting."),
    text: str = Field(description="The message."),
) -> dict[str, Any]:
    """Post to an internal staff channel. Returns the ChatMessage."""
    return _post(ctx, channel_id, author_id, text, "internal")


@tool(entities=["ChatMessage", "Channel"], **_WRITE)
def post_public_message(
    ctx: ToolContext,
    channel_id: str = Field(description="A public Channel (status page, community)."),
    author_id: str = Field(description="The Employee posting."),
    text: str = Field(description="The message; anyone can read it."),
) -> dict[str, Any]:
    """Post to a public channel that customers and the world read. Returns the ChatMessage."""
    return _post(ctx, channel_id, author_id, text, "public")


TOOLS = [
    *reads(Email, ["get", "list", "search"], "comms", COMMS),
    send_internal_email,
    send_external_email,
    *reads(CalendarEvent, ["get", "list"], "comms", COMMS),
    get_free_busy,
    create_calendar_event,
    cancel_calendar_event,
    *reads(Channel, ["list"], "comms", COMMS),
    *reads(ChatMessage, ["list"], "comms", COMMS),
    post_chat_message,
    post_public_message,
]
