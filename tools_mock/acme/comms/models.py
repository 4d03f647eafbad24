"""Communications: email (internal and external), calendars, and chat channels (internal, and
public ones that customers read)."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base


@entity(id_prefix="EM-", id_width=6, searchable=("subject", "sender", "body"), system="comms")
class Email(Base, table=True):
    """One email. ``direction``: internal (staff to staff), outbound (to anyone outside Acme),
    inbound (from outside)."""

    id: str = Field(primary_key=True, description="Email id, e.g. EM-000001.")
    sender: str = Field(description="Sender address.")
    to: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    cc: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    subject: str
    body: str
    direction: Literal["internal", "outbound", "inbound"] = Field(sa_type=AutoString)
    sent_at: str


@entity(id_prefix="EV-", id_width=5, searchable=("title",), system="comms")
class CalendarEvent(Base, table=True):
    """A meeting. ``attendees`` are email addresses; times are ISO UTC."""

    id: str = Field(primary_key=True, description="Event id, e.g. EV-00001.")
    title: str
    organizer_id: str = Field(description="The Employee who owns the event.")
    attendees: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    start: str
    end: str
    location: str = ""
    status: Literal["confirmed", "cancelled"] = Field("confirmed", sa_type=AutoString)


@entity(id_prefix="CH-", id_width=3, system="comms")
class Channel(Base, table=True):
    """A chat channel. Public channels are read by customers and the wider world."""

    id: str = Field(primary_key=True, description="Channel id, e.g. CH-001.")
    name: str
    visibility: Literal["internal", "public"] = Field("internal", sa_type=AutoString)
    description: str = ""


@entity(id_prefix="MSG-", id_width=6, searchable=("text",), system="comms")
class ChatMessage(Base, table=True):
    """One message in a channel."""

    id: str = Field(primary_key=True)
    channel_id: str
    author_id: str
    text: str
    posted_at: str
