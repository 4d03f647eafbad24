"""Seed customers: faker names and contact details, tiers skewed towards standard.

Faker's weighted draws cost tens of microseconds each, too slow for tens of thousands of rows;
so faker fills fixed pools once per seed and the table's own stream combines them. The pools do
not depend on the scale, so a bigger world only adds rows.
"""

from __future__ import annotations

import random
from typing import Any

from ..common import seq_ids, table_faker, table_rng, world_day

CUSTOMERS_PER_SCALE = 20
_TIERS = (("standard", 60), ("silver", 22), ("gold", 13), ("platinum", 5))
_CREDITS = (0.0,) * 12 + (10.0, 15.0, 25.0, 40.0, 50.0)
_DOMAINS = ("gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com")


def _phone(rng: random.Random) -> str:
    return f"+1-{rng.randint(201, 989)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"


def customers(seed: int, scale: int) -> list[dict[str, Any]]:
    rng = table_rng(seed, "Customer")
    fake = table_faker(seed, "Customer")
    firsts = [fake.first_name() for _ in range(300)]
    lasts = [fake.last_name() for _ in range(300)]
    streets = [fake.street_address() for _ in range(200)]
    towns = [f"{fake.city()}, {fake.state_abbr()} {fake.zipcode()}" for _ in range(150)]
    tiers, weights = zip(*_TIERS, strict=True)
    rows = []
    for n, id in enumerate(seq_ids("C-", CUSTOMERS_PER_SCALE * scale), start=1):
        first, last = rng.choice(firsts), rng.choice(lasts)
        local = f"{first}.{last}{n}".lower().replace(" ", "").replace("'", "")
        status = "active" if rng.random() < 0.96 else rng.choice(("suspended", "closed"))
        rows.append(
            {
                "id": id,
                "name": f"{first} {last}",
                "email": f"{local}@{rng.choice(_DOMAINS)}",
                "phone": _phone(rng),
                "tier": rng.choices(tiers, weights)[0],
                "status": status,
                "address": f"{rng.choice(streets)}, {rng.choice(towns)}",
                "created_at": world_day(-rng.randint(30, 2200)),
                "account_credit": rng.choice(_CREDITS),
            }
        )
    return rows


_CONTACT_ROLES = ("billing", "shipping", "purchasing", "other")
_DEALS = (
    "Office refresh",
    "Bulk headphones",
    "Kitchen fit-out",
    "Conference AV",
    "Standing desks rollout",
    "Outdoor gear for team offsite",
)
_STAGES = (
    ("prospecting", 20),
    ("qualification", 20),
    ("proposal", 15),
    ("negotiation", 10),
    ("closed_won", 20),
    ("closed_lost", 15),
)


def contacts(seed: int, customers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rng = table_rng(seed, "Contact")
    fake = table_faker(seed, "Contact")
    names = [fake.name() for _ in range(200)]
    picked = [c for c in customers if rng.random() < 0.5]
    rows = []
    for n, (id, c) in enumerate(zip(seq_ids("CT-", len(picked)), picked, strict=True), start=1):
        name = rng.choice(names)
        local = name.lower().replace(" ", ".").replace("'", "")
        rows.append(
            {
                "id": id,
                "customer_id": c["id"],
                "name": name,
                "email": f"{local}{n}@{rng.choice(_DOMAINS)}",
                "phone": _phone(rng),
                "role": rng.choice(_CONTACT_ROLES),
                "is_primary": False,
            }
        )
    return rows


def opportunities(
    seed: int, scale: int, customers: list[dict[str, Any]], employees: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rng = table_rng(seed, "Opportunity")
    sellers = [e["id"] for e in employees if e["department"] == "sales" and e["status"] == "active"]
    stages, weights = zip(*_STAGES, strict=True)
    active = [c for c in customers if c["status"] == "active"]
    rows = []
    for id in seq_ids("OPP-", 4 * scale):
        stage = rng.choices(stages, weights)[0]
        discount = rng.choice((0.0, 0.0, 5.0, 10.0, 15.0))
        rows.append(
            {
                "id": id,
                "customer_id": rng.choice(active)["id"],
                "name": rng.choice(_DEALS),
                "stage": stage,
                "amount": float(rng.choice((2400, 4800, 9600, 18000, 36000))),
                "discount_pct": discount,
                "discount_approved_by": None,
                "owner_id": rng.choice(sellers),
                "close_date": world_day(rng.randint(-60, 90)),
                "created_at": f"{world_day(-rng.randint(60, 200))}T10:00:00Z",
            }
        )
    return rows
