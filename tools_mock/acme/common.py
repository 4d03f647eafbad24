"""What every Acme system shares: the world's calendar, money, latency profiles, ids and the
small helpers every system's tools use (generated reads, required text).

The simulated clock (``ctx.now``) counts seconds from the start of an episode; the world itself
sits at a fixed date, ``WORLD_START``, so that date rules (the refund window) are deterministic
and seed data can be written relative to that day.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from simforge.tools import LogNormal, ToolContext, ToolError, crud_tools
from simforge.world import EntitySchema

if TYPE_CHECKING:  # imported where seed rows are generated: a warm cache never needs it
    from faker import Faker

WORLD_START = "2026-01-15T09:00:00Z"
_START = datetime.fromisoformat(WORLD_START.replace("Z", "+00:00"))

FIXTURE_BLOCK = range(9000, 10000)
"""Id numbers the seed never hands out (``C-9001``, ``O-9001``...): scenario tasks pin their own
entities there, so a task's customer has no seeded orders or tickets at any world size."""


def now_at(ctx: ToolContext) -> datetime:
    """The simulated wall-clock moment of a call."""
    return _START + timedelta(seconds=ctx.now)


def today(ctx: ToolContext) -> date:
    """The simulated calendar day of a call (UTC)."""
    return now_at(ctx).date()


_START_SECOND = _START.hour * 3600 + _START.minute * 60 + _START.second
assert _START.microsecond == 0


@functools.lru_cache(maxsize=64)
def _day(offset: int) -> tuple[str, str]:
    """``(isoformat, strftime prefix)`` of the day ``offset`` days after the world's first: the
    date changes only with simulated days, so write tools do not format it on every call."""
    day = _START.date() + timedelta(days=offset)
    return day.isoformat(), day.strftime("%Y-%m-%d")


def _clock(now: float) -> tuple[int, int]:
    """``(day offset, second of that day)`` of the moment :func:`now_at` gives, to the whole
    second as ``strftime`` truncates it. ``timedelta(seconds=now)`` rounds the fraction to the
    microsecond, half to even: a fraction of 999999.5 us or more is the next second."""
    if now >= 0:
        whole = int(now)
        if (now - whole) * 1e6 >= 999999.5:
            whole += 1
    else:
        delta = timedelta(seconds=now)
        whole = delta.days * 86400 + delta.seconds
    return divmod(whole + _START_SECOND, 86400)


def today_iso(ctx: ToolContext) -> str:
    """``today(ctx).isoformat()``, without building a datetime (the day's text is cached)."""
    return _day(_clock(ctx.now)[0])[0]


def now_iso(ctx: ToolContext) -> str:
    """``now_at(ctx)`` as ``YYYY-MM-DDTHH:MM:SSZ`` (the day's part cached)."""
    offset, second = _clock(ctx.now)
    hours, rest = divmod(second, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{_day(offset)[1]}T{_TWO[hours]}:{_TWO[minutes]}:{_TWO[seconds]}Z"


_TWO = [f"{n:02d}" for n in range(60)]


def world_day(offset_days: int) -> str:
    """The ISO date ``offset_days`` from the world's first day (negative: in the past)."""
    return (_START.date() + timedelta(days=offset_days)).isoformat()


def parse_day(text: str) -> date:
    return date.fromisoformat(text[:10])


def money(value: float) -> float:
    """Amounts are kept in currency units rounded to cents.

    ``round(x, 2)``, which goes through a decimal string, except for an amount that is already
    a whole number of cents (most are): ``x`` is then the float nearest ``k / 100`` for an
    integer ``k``, which is exactly what ``round`` answers, and a multiplication, a division
    and a comparison show it."""
    value = float(value) + 0.0
    cents = value * 100.0
    if cents.is_integer() and cents / 100.0 == value:
        return value
    return round(value, 2)


def seq_ids(prefix: str, count: int, *, width: int = 4, start: int = 0) -> Iterator[str]:
    """``count`` ids in the entity's own format, skipping :data:`FIXTURE_BLOCK`."""
    n = start
    made = 0
    while made < count:
        n += 1
        if n in FIXTURE_BLOCK:
            continue
        made += 1
        yield f"{prefix}{n:0{width}d}"


class Profile(NamedTuple):
    """How one backend system behaves under load: read and write latency, concurrency."""

    read: LogNormal
    write: LogNormal
    capacity: int

    def crud(self) -> dict[str, Any]:
        return {"read_latency": self.read, "write_latency": self.write, "capacity": self.capacity}


# Medians as a service owner would quote them; caps keep one draw from stalling an episode.
CRM = Profile(
    read=LogNormal(median=0.12, sigma=0.4, cap=2.0),
    write=LogNormal(median=0.35, sigma=0.5, cap=4.0),
    capacity=8,
)
ORDERS = Profile(
    read=LogNormal(median=0.08, sigma=0.35, cap=1.5),
    write=LogNormal(median=0.45, sigma=0.5, cap=5.0),
    capacity=16,
)
BILLING = Profile(  # the payment gateway sits behind writes: slow and narrow
    read=LogNormal(median=0.25, sigma=0.5, cap=4.0),
    write=LogNormal(median=1.2, sigma=0.6, cap=9.0),
    capacity=4,
)
SUPPORT = Profile(
    read=LogNormal(median=0.15, sigma=0.4, cap=2.5),
    write=LogNormal(median=0.3, sigma=0.45, cap=3.0),
    capacity=6,
)


INVENTORY = Profile(
    read=LogNormal(median=0.1, sigma=0.35, cap=1.5),
    write=LogNormal(median=0.4, sigma=0.45, cap=4.0),
    capacity=10,
)
SHIPPING = Profile(  # the carriers' APIs sit behind tracking and labels
    read=LogNormal(median=0.4, sigma=0.6, cap=6.0),
    write=LogNormal(median=0.9, sigma=0.55, cap=8.0),
    capacity=6,
)
ITSM = Profile(
    read=LogNormal(median=0.2, sigma=0.45, cap=3.0),
    write=LogNormal(median=0.5, sigma=0.5, cap=5.0),
    capacity=8,
)
HR = Profile(
    read=LogNormal(median=0.18, sigma=0.4, cap=2.5),
    write=LogNormal(median=0.6, sigma=0.5, cap=5.0),
    capacity=4,
)
IAM = Profile(  # the directory answers fast; group changes fan out to every connected app
    read=LogNormal(median=0.06, sigma=0.3, cap=1.0),
    write=LogNormal(median=0.8, sigma=0.6, cap=8.0),
    capacity=8,
)
COMMS = Profile(
    read=LogNormal(median=0.15, sigma=0.4, cap=2.0),
    write=LogNormal(median=0.35, sigma=0.5, cap=4.0),
    capacity=12,
)
KB = Profile(
    read=LogNormal(median=0.22, sigma=0.45, cap=3.0),
    write=LogNormal(median=0.4, sigma=0.45, cap=4.0),
    capacity=6,
)
FINANCE = Profile(  # the ERP: slow, narrow, batch-minded
    read=LogNormal(median=0.35, sigma=0.5, cap=5.0),
    write=LogNormal(median=1.0, sigma=0.6, cap=9.0),
    capacity=4,
)

COMPANY_DOMAIN = "acme.example"
"""Mail domain of Acme's own staff: any other address is external."""


def reads(model: type, ops: list[str], system: str, profile: Profile) -> list[Any]:
    """The generated tools of one entity (reads, mostly), with the system's latency profile."""
    return crud_tools(EntitySchema.of(model), ops=ops, system=system, **profile.crud())


def text(argument: str, value: str) -> str:
    """A required free-text argument, stripped (422 when empty)."""
    value = value.strip()
    if not value:
        raise ToolError.invalid(argument, f"{argument} must not be empty")
    return value


def is_internal(address: str) -> bool:
    return address.strip().lower().endswith("@" + COMPANY_DOMAIN)


def table_rng(seed: int, table: str) -> random.Random:
    """One stream per table, so a table's rows depend on the seed and never on how many rows
    another table drew."""
    return random.Random(f"acme:{table}:{seed}")


_local = threading.local()


def table_faker(seed: int, table: str) -> Faker:
    """The thread's one ``en_US`` Faker, reseeded for ``table``: building a Faker loads every
    provider (about 20 ms), and reseeding restarts its stream exactly as a fresh one would.
    A thread generates its tables one after another, never interleaved."""
    fake = getattr(_local, "faker", None)
    if fake is None:
        from faker import Faker

        fake = _local.faker = Faker("en_US")
    fake.seed_instance(f"acme:{table}:{seed}")
    return fake
