"""CRM: who the customers are and what they are owed."""

from __future__ import annotations

from sqlmodel import Field

from simforge.world import entity

from ..base import Base


@entity(id_prefix="C-", id_width=4, searchable=("name", "email", "phone"), system="crm")
class Customer(Base, table=True):
    """A customer account."""

    id: str = Field(primary_key=True, description="Customer id, e.g. C-0001.")
    name: str
    email: str
    phone: str
    tier: str = Field("standard", description="standard | silver | gold | platinum")
    status: str = Field("active", description="active | suspended | closed")
    address: str = Field("", description="Default shipping address.")
    created_at: str = Field(description="ISO date the account was opened.")
    account_credit: float = Field(0.0, description="Store credit balance, in USD.")
