"""Inventory: warehouses, stock per product and warehouse, reservations held for orders, and
transfers between warehouses.

A product's catalog ``stock`` is what can still be sold: the sum over warehouses of
``on_hand - reserved``. Reserving moves units from sellable to reserved; shipping takes them off
the shelf; a cancellation releases them.
"""

from __future__ import annotations

from typing import Literal

from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base


@entity(id_prefix="WH-", id_width=2, system="inventory")
class Warehouse(Base, table=True):
    """A fulfilment centre."""

    id: str = Field(primary_key=True, description="Warehouse id (WH- and two digits).")
    name: str
    city: str
    status: Literal["active", "maintenance"] = Field("active", sa_type=AutoString)


@entity(id_prefix="SL-", id_width=6, system="inventory")
class StockLevel(Base, table=True):
    """Units of one product in one warehouse."""

    id: str = Field(primary_key=True)
    product_id: str
    warehouse_id: str
    on_hand: int = Field(0, description="Units on the shelf.")
    reserved: int = Field(0, description="Units held for unshipped orders.")
    reorder_point: int = 5


@entity(id_prefix="RES-", id_width=6, system="inventory")
class Reservation(Base, table=True):
    """Units held for one order line until it ships or is cancelled."""

    id: str = Field(primary_key=True)
    order_id: str
    product_id: str
    warehouse_id: str
    quantity: int
    status: Literal["active", "fulfilled", "released"] = Field("active", sa_type=AutoString)
    created_at: str


@entity(id_prefix="TR-", id_width=4, system="inventory")
class StockTransfer(Base, table=True):
    """Units moved from one warehouse to another."""

    id: str = Field(primary_key=True)
    product_id: str
    from_warehouse_id: str
    to_warehouse_id: str
    quantity: int
    reason: str = ""
    created_at: str


@entity(id_prefix="ADJ-", id_width=5, system="inventory")
class StockAdjustment(Base, table=True):
    """A correction of on-hand units after a count, damage or loss."""

    id: str = Field(primary_key=True)
    product_id: str
    warehouse_id: str
    delta: int
    reason: str
    actor_id: str
    created_at: str
