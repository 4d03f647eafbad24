"""Finance: department budgets, vendors, purchase requests and orders, and expense reports."""

from __future__ import annotations

from typing import Literal

from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

ExpenseCategory = Literal["travel", "meals", "software", "equipment", "other"]


@entity(id_prefix="BUD-", id_width=3, system="finance")
class Budget(Base, table=True):
    """A department's budget for the fiscal year: remaining = amount - committed - spent."""

    id: str = Field(primary_key=True, description="Budget id, e.g. BUD-001.")
    department: str
    fiscal_year: int
    amount: float
    committed: float = Field(0.0, description="Held by issued purchase orders.")
    spent: float = 0.0


@entity(id_prefix="V-", id_width=4, searchable=("name", "category"), system="finance")
class Vendor(Base, table=True):
    """A supplier Acme buys from."""

    id: str = Field(primary_key=True, description="Vendor id, e.g. V-0001.")
    name: str
    category: str
    status: Literal["active", "blocked"] = Field("active", sa_type=AutoString)
    payment_terms: str = "net30"
    country: str = "US"


@entity(id_prefix="PR-", id_width=4, system="finance")
class PurchaseRequest(Base, table=True):
    """A request to buy from a vendor against the requester's department budget."""

    id: str = Field(primary_key=True, description="Purchase request id, e.g. PR-0001.")
    requester_id: str
    department: str
    vendor_id: str
    description: str
    amount: float
    status: Literal["pending", "approved", "rejected", "ordered"] = Field(
        "pending", sa_type=AutoString
    )
    approver_id: str | None = None
    decision_note: str = ""
    created_at: str


@entity(id_prefix="PO-", id_width=4, system="finance")
class PurchaseOrder(Base, table=True):
    """A commitment to a vendor, issued from an approved purchase request."""

    id: str = Field(primary_key=True)
    purchase_request_id: str
    vendor_id: str
    department: str
    amount: float
    status: Literal["issued", "received", "closed"] = Field("issued", sa_type=AutoString)
    issued_at: str


@entity(id_prefix="EXP-", id_width=4, system="finance")
class ExpenseReport(Base, table=True):
    """Money an employee spent for the company and wants back."""

    id: str = Field(primary_key=True, description="Expense report id, e.g. EXP-0001.")
    employee_id: str
    amount: float
    category: ExpenseCategory = Field(sa_type=AutoString)
    description: str
    receipt_attached: bool = False
    status: Literal["submitted", "approved", "rejected", "paid"] = Field(
        "submitted", sa_type=AutoString
    )
    approver_id: str | None = None
    decision_note: str = ""
    submitted_at: str
