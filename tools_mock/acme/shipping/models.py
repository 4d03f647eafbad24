"""Shipping and returns: parcels sent for orders, with carrier tracking, and return
authorisations (RMAs) for delivered orders."""

from __future__ import annotations

from typing import Any, Literal, get_args

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

Carrier = Literal["UPS", "FedEx", "USPS", "DHL"]
CARRIERS: tuple[str, ...] = get_args(Carrier)
ReturnCondition = Literal["good", "damaged"]
ShippingService = Literal["ground", "express", "overnight"]
SERVICES: tuple[str, ...] = get_args(ShippingService)


@entity(id_prefix="SH-", id_width=5, searchable=("tracking_number",), system="shipping")
class Shipment(Base, table=True):
    """A parcel for an order. ``events`` are carrier scans ``{at, status, location}``."""

    id: str = Field(primary_key=True, description="Shipment id, e.g. SH-00001.")
    order_id: str
    warehouse_id: str
    carrier: Carrier = Field(sa_type=AutoString)
    service: ShippingService = Field("ground", sa_type=AutoString)
    tracking_number: str
    status: Literal["label_created", "in_transit", "delivered", "exception"] = Field(
        "label_created", sa_type=AutoString
    )
    events: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    shipped_at: str
    delivered_at: str | None = None


@entity(id_prefix="RMA-", id_width=4, system="shipping")
class ReturnRequest(Base, table=True):
    """A return authorisation. ``items`` are ``{product_id, quantity}``."""

    id: str = Field(primary_key=True, description="Return id, e.g. RMA-0001.")
    order_id: str
    customer_id: str
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    reason: str
    status: Literal["authorized", "received", "cancelled"] = Field("authorized", sa_type=AutoString)
    condition: ReturnCondition | None = Field(
        None, sa_type=AutoString, description="Once received."
    )
    warehouse_id: str | None = None
    created_at: str
    received_at: str | None = None
