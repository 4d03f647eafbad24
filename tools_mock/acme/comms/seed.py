"""Seed mailboxes, calendars and chat: a few emails per employee (some with customers), the
coming weeks' meetings, and recent chat in the company's channels."""

from __future__ import annotations

from typing import Any

from ..common import seq_ids, table_rng, world_day

Rows = list[dict[str, Any]]
CHANNELS = (
    ("general", "internal", "Company-wide announcements and chatter."),
    ("it-help", "internal", "Ask the service desk."),
    ("incidents", "internal", "Live incident coordination."),
    ("sales", "internal", "Deals and pipeline."),
    ("support-team", "internal", "Customer support staff."),
    ("warehouse-ops", "internal", "Fulfilment and stock."),
    ("finance", "internal", "Finance team."),
    ("status-page", "public", "Public service status for customers."),
    ("customer-community", "public", "Public customer community forum."),
)
_SUBJECTS = (
    "Weekly sync notes",
    "Q1 planning",
    "Re: invoice question",
    "Customer escalation",
    "Shipment delay",
    "Budget review",
    "Onboarding checklist",
    "Re: order status",
)
_LINES = (
    "Sharing the notes from today; please review before Friday.",
    "Can you take a look at this when you have a minute?",
    "Following up on our call, attached are the details.",
    "Thanks, that resolves it on our side.",
)
_MEETINGS = (
    "1:1",
    "Team standup",
    "Pipeline review",
    "Incident review",
    "Budget check-in",
    "Vendor call",
    "Interview loop",
    "Planning session",
)
_ROOMS = ("Room Cascade", "Room Hood", "Room Rainier", "Zoom")


def channels() -> Rows:
    return [
        {"id": id, "name": name, "visibility": vis, "description": about}
        for id, (name, vis, about) in zip(
            seq_ids("CH-", len(CHANNELS), width=3), CHANNELS, strict=True
        )
    ]


def emails(seed: int, employees: Rows, customers: Rows) -> Rows:
    rng = table_rng(seed, "Email")
    staff = [e for e in employees if e["status"] != "terminated"]
    planned = []
    for e in staff:
        for _ in range(rng.choice((1, 2, 3, 4))):
            roll = rng.random()
            if roll < 0.6:
                direction, sender, to = "internal", e["email"], [rng.choice(staff)["email"]]
            elif roll < 0.8:
                direction, sender, to = "outbound", e["email"], [rng.choice(customers)["email"]]
            else:
                direction, sender, to = "inbound", rng.choice(customers)["email"], [e["email"]]
            planned.append((direction, sender, to))
    return [
        {
            "id": id,
            "sender": sender,
            "to": to,
            "cc": [],
            "subject": rng.choice(_SUBJECTS),
            "body": rng.choice(_LINES),
            "direction": direction,
            "sent_at": f"{world_day(-rng.randint(0, 45))}T{rng.randint(8, 17):02d}:20:00Z",
        }
        for id, (direction, sender, to) in zip(
            seq_ids("EM-", len(planned), width=6), planned, strict=True
        )
    ]


def calendar_events(seed: int, employees: Rows) -> Rows:
    rng = table_rng(seed, "CalendarEvent")
    staff = [e for e in employees if e["status"] == "active"]
    planned = []
    for e in staff:
        for _ in range(rng.choice((0, 1, 2))):
            day = world_day(rng.randint(0, 14))
            hour = rng.randint(14, 22)
            others = rng.sample(staff, min(len(staff), rng.randint(1, 3)))
            planned.append((e, day, hour, [o["email"] for o in others if o["id"] != e["id"]]))
    return [
        {
            "id": id,
            "title": rng.choice(_MEETINGS),
            "organizer_id": e["id"],
            "attendees": attendees,
            "start": f"{day}T{hour:02d}:00:00Z",
            "end": f"{day}T{hour:02d}:30:00Z",
            "location": rng.choice(_ROOMS) if rng.random() < 0.3 else "",
            "status": "confirmed",
        }
        for id, (e, day, hour, attendees) in zip(
            seq_ids("EV-", len(planned), width=5), planned, strict=True
        )
    ]


def chat_messages(seed: int, employees: Rows, channels: Rows) -> Rows:
    rng = table_rng(seed, "ChatMessage")
    staff = [e for e in employees if e["status"] == "active"]
    internal = [c["id"] for c in channels if c["visibility"] == "internal"]
    count = len(employees) * 2
    return [
        {
            "id": id,
            "channel_id": rng.choice(internal),
            "author_id": rng.choice(staff)["id"],
            "text": rng.choice(_LINES),
            "posted_at": f"{world_day(-rng.randint(0, 20))}T{rng.randint(8, 17):02d}:00:00Z",
        }
        for id in seq_ids("MSG-", count, width=6)
    ]
