"""Seed the catalog and the orders placed against it over the last six months."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..common import money, parse_day, seq_ids, table_rng, world_day

ORDERS_PER_SCALE = 25
PRODUCTS_BASE, PRODUCTS_PER_SCALE = 10, 5

# category: (nouns, price range)
_CATALOG = {
    "kitchen": (
        ("Espresso Machine", "Burr Grinder", "Stand Mixer", "Kettle", "Chef Knife"),
        (19, 899),
    ),
    "audio": (("Headphones", "Soundbar", "Bookshelf Speaker", "Turntable", "Earbuds"), (29, 699)),
    "office": (
        ("Desk Lamp", "Monitor Arm", "Ergonomic Chair", "Standing Desk", "Webcam"),
        (24, 1199),
    ),
    "video": (("4K Projector", "Streaming Stick", "Media Server", "Action Camera"), (39, 1499)),
    "outdoor": (
        ("Camping Stove", "Trail Backpack", "Hammock", "Headlamp", "Water Filter"),
        (15, 349),
    ),
}
_ADJECTIVES = ("Compact", "Pro", "Classic", "Ultra", "Eco", "Smart", "Travel", "Studio", "Max")


def products(seed: int, scale: int) -> list[dict[str, Any]]:
    rng = table_rng(seed, "Product")
    categories = sorted(_CATALOG)
    rows = []
    count = PRODUCTS_BASE + PRODUCTS_PER_SCALE * scale
    for n, id in enumerate(seq_ids("P-", count), start=1):
        category = categories[n % len(categories)]
        nouns, (low, high) = _CATALOG[category]
        price = money(int(low * (high / low) ** rng.random()) + rng.choice((0.0, 0.49, 0.99)))
        rows.append(
            {
                "id": id,
                "sku": f"{category[:3].upper()}-{n:05d}",
                "name": f"{rng.choice(_ADJECTIVES)} {rng.choice(nouns)}",
                "category": category,
                "price": price,
                "stock": rng.choice((0, 3, 8, 15, 40, 120)) + rng.randint(0, 9),
            }
        )
    return rows


def _status(rng: Any, age: int) -> str:
    if age <= 2:
        return rng.choice(("pending", "processing"))
    if age <= 6:
        return rng.choice(("processing", "shipped", "shipped"))
    roll = rng.random()
    if roll < 0.06:
        return "cancelled"
    if roll < 0.11:
        return "refunded"
    return "delivered"


def orders(
    seed: int, scale: int, customers: list[dict[str, Any]], catalog: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rng = table_rng(seed, "Order")
    rows = []
    for id in seq_ids("O-", ORDERS_PER_SCALE * scale, start=1000):
        customer = rng.choice(customers)
        age = rng.randint(0, 180)
        status = _status(rng, age)
        if status == "cancelled":
            age = rng.randint(7, 180)
        items = []
        for product in rng.sample(catalog, rng.choice((1, 1, 1, 2, 2, 3))):
            quantity = rng.choice((1, 1, 1, 1, 2, 3))
            items.append(
                {"product_id": product["id"], "quantity": quantity, "unit_price": product["price"]}
            )
        placed = world_day(-age)
        delivered = None
        if status in ("delivered", "refunded"):
            days = min(rng.randint(2, 6), age - 1)
            delivered = (parse_day(placed) + timedelta(days=days)).isoformat()
        paid = status != "pending" or rng.random() < 0.3
        if status == "cancelled":
            paid = rng.random() < 0.5
        rows.append(
            {
                "id": id,
                "customer_id": customer["id"],
                "status": status,
                "items": items,
                "total": money(sum(i["unit_price"] * i["quantity"] for i in items)),
                "paid": paid,
                "placed_at": placed,
                "delivered_at": delivered,
                "shipping_address": customer["address"],
            }
        )
    return rows
