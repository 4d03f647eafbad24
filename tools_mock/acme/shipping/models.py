"""Shipping and returns: parcels sent for orders, with carrier tracking, and return
authorisations (RMAs) for delivered orders."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field

from simforge.world import entity

from ..base import Base

CARRIERS = ("UPS", "FedEx", "USPS", "DHL")
SERVICES = ("ground", "express", "overnight")


@entity(id_prefix="SH-", id_width=5, searchable=("tracking_number",), system="shipping")
class Shipment(Base, table=True):
    """A parcel for an order. ``events`` are carrier scans ``{at, status, location}``."""

    id: str = Field(primary_key=True, description="Shipment id, e.g. SH-00001.")
    order_id: str
    warehouse_id: str
    carrier: str = Field(description=" | ".join(CARRIERS))
    service: str = Field("ground", description=" | ".join(SERVICES))
    tracking_number: str
    status: str = Field(
        "label_created", description="label_created | in_transit | delivered | exception"
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
    status: str = Field("authorized", description="authorized | received | cancelled")
    condition: str | None = Field(None, description="good | damaged, once received.")
    warehouse_id: str | None = None
    created_at: str
    received_at: str | None = None
