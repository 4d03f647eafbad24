"""Orders & catalog: products with stock, and the orders that consume it."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

OrderStatus = Literal["pending", "processing", "shipped", "delivered", "cancelled", "refunded"]
ORDER_STATUSES: tuple[str, ...] = get_args(OrderStatus)


@entity(id_prefix="P-", id_width=4, searchable=("sku", "name", "category"), system="orders")
class Product(Base, table=True):
    """A catalog item and its stock on hand."""

    id: str = Field(primary_key=True, description="Product id, e.g. P-0001.")
    sku: str
    name: str
    category: str
    price: float = Field(description="Unit list price, in USD.")
    stock: int = Field(0, description="Units on hand.")


@entity(id_prefix="O-", id_width=4, id_start=1000, system="orders")
class Order(Base, table=True):
    """A customer order. ``items`` are ``{product_id, quantity, unit_price}``."""

    id: str = Field(primary_key=True, description="Order id, e.g. O-1001.")
    customer_id: str
    status: OrderStatus = Field("pending", sa_type=AutoString)
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    total: float = Field(description="Order total, in USD.")
    paid: bool = Field(False, description="Whether payment was captured.")
    placed_at: str = Field(description="ISO date the order was placed.")
    delivered_at: str | None = Field(None, description="ISO date of delivery, if delivered.")
    shipping_address: str = ""
