"""Billing: invoices, refunds, credit notes, approvals and the customer ledger."""

from __future__ import annotations

from typing import Literal

from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

PaymentMethod = Literal["card", "bank_transfer", "store_credit"]


@entity(id_prefix="INV-", id_width=5, system="billing")
class Invoice(Base, table=True):
    """The invoice of an order."""

    id: str = Field(primary_key=True)
    order_id: str
    customer_id: str
    amount: float
    status: Literal["open", "paid", "void"] = Field("open", sa_type=AutoString)
    issued_at: str


@entity(id_prefix="R-", id_width=4, system="billing")
class Refund(Base, table=True):
    """Money returned to the original payment method for an order."""

    id: str = Field(primary_key=True)
    order_id: str
    customer_id: str
    amount: float
    reason: str = ""
    approval_id: str | None = None
    status: Literal["issued", "settled"] = Field("issued", sa_type=AutoString)
    created_at: str


@entity(id_prefix="CN-", id_width=4, system="billing")
class CreditNote(Base, table=True):
    """A credit against an order's invoice (for example after a cancellation)."""

    id: str = Field(primary_key=True)
    order_id: str
    customer_id: str
    amount: float
    reason: str = ""
    created_at: str


@entity(id_prefix="APR-", id_width=4, system="billing")
class Approval(Base, table=True):
    """A finance decision on a refund above the self-service limit."""

    id: str = Field(primary_key=True)
    kind: str = Field("refund", description="What was approved (refund).")
    order_id: str
    amount_limit: float = Field(description="The largest amount the approval covers.")
    status: Literal["pending", "approved", "rejected"] = Field("pending", sa_type=AutoString)
    requested_by: str = ""
    decided_by: str | None = None
    created_at: str


@entity(id_prefix="LE-", id_width=6, plural="ledger_entries", system="billing")
class LedgerEntry(Base, table=True):
    """One movement of money owed to or by a customer."""

    id: str = Field(primary_key=True)
    customer_id: str
    order_id: str | None = None
    kind: Literal["refund", "credit_note", "account_credit"] = Field(sa_type=AutoString)
    amount: float
    reference: str = Field("", description="The refund, credit note or note behind the entry.")
    created_at: str


@entity(id_prefix="PAY-", id_width=5, system="billing")
class Payment(Base, table=True):
    """Money captured against an invoice."""

    id: str = Field(primary_key=True)
    invoice_id: str
    order_id: str
    customer_id: str
    amount: float
    method: PaymentMethod = Field("card", sa_type=AutoString)
    created_at: str
