"""CRM: who the customers are and what they are owed."""

from __future__ import annotations

from typing import Literal, get_args

from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base


@entity(id_prefix="C-", id_width=4, searchable=("name", "email", "phone"), system="crm")
class Customer(Base, table=True):
    """A customer account."""

    id: str = Field(primary_key=True, description="Customer id, e.g. C-0001.")
    name: str
    email: str
    phone: str
    tier: Tier = Field("standard", sa_type=AutoString)
    status: Literal["active", "suspended", "closed"] = Field("active", sa_type=AutoString)
    address: str = Field("", description="Default shipping address.")
    created_at: str = Field(description="ISO date the account was opened.")
    account_credit: float = Field(0.0, description="Store credit balance, in USD.")


Tier = Literal["standard", "silver", "gold", "platinum"]
ContactRole = Literal["billing", "shipping", "purchasing", "other"]
OpportunityStage = Literal[
    "prospecting",
    "qualification",
    "proposal",
    "negotiation",
    "closed_won",
    "closed_lost",
]
OPPORTUNITY_STAGES: tuple[str, ...] = get_args(OpportunityStage)


@entity(id_prefix="CT-", id_width=4, searchable=("name", "email"), system="crm")
class Contact(Base, table=True):
    """A person to reach about an account (billing, shipping, purchasing...)."""

    id: str = Field(primary_key=True, description="Contact id, e.g. CT-0001.")
    customer_id: str
    name: str
    email: str
    phone: str = ""
    role: ContactRole = Field("other", sa_type=AutoString)
    is_primary: bool = False


@entity(id_prefix="OPP-", id_width=4, searchable=("name",), system="crm")
class Opportunity(Base, table=True):
    """A sales deal with an account, owned by a sales employee."""

    id: str = Field(primary_key=True, description="Opportunity id, e.g. OPP-0001.")
    customer_id: str
    name: str
    stage: OpportunityStage = Field("prospecting", sa_type=AutoString)
    amount: float = Field(description="Deal value before discount, in USD.")
    discount_pct: float = 0.0
    discount_approved_by: str | None = Field(None, description="User who approved the discount.")
    owner_id: str = Field(description="The sales Employee who owns the deal.")
    close_date: str
    created_at: str
