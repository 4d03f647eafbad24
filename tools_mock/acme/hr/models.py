"""HR: employees, their managers and leave, and requests for access to company systems."""

from __future__ import annotations

from sqlmodel import Field

from simforge.world import entity

from ..base import Base

DEPARTMENTS = (
    "executive",
    "engineering",
    "it",
    "sales",
    "support",
    "finance",
    "hr",
    "operations",
)
LEAVE_TYPES = ("vacation", "sick", "personal")


@entity(id_prefix="E-", id_width=4, searchable=("name", "email", "title"), system="hr")
class Employee(Base, table=True):
    """A member of staff. ``manager_id`` is the Employee who approves their leave and access."""

    id: str = Field(primary_key=True, description="Employee id, e.g. E-0001.")
    name: str
    email: str = Field(description="Work email (first.last@acme.example).")
    department: str = Field(description=" | ".join(DEPARTMENTS))
    title: str
    manager_id: str | None = Field(None, description="The Employee this person reports to.")
    status: str = Field("active", description="active | on_leave | terminated")
    location: str = ""
    employment_type: str = Field("full_time", description="full_time | contractor")
    hire_date: str
    leave_balance: float = Field(0.0, description="Vacation and personal days left this year.")


@entity(id_prefix="LV-", id_width=4, system="hr")
class LeaveRequest(Base, table=True):
    """Time off asked for by an employee, decided by their manager."""

    id: str = Field(primary_key=True)
    employee_id: str
    type: str = Field("vacation", description=" | ".join(LEAVE_TYPES))
    start_date: str
    end_date: str
    days: float = Field(description="Working days requested (weekdays between the dates).")
    status: str = Field("pending", description="pending | approved | rejected | cancelled")
    approver_id: str | None = None
    note: str = ""
    created_at: str


@entity(id_prefix="AR-", id_width=4, system="hr")
class AccessRequest(Base, table=True):
    """A request that an employee be added to an IAM group, approved by their manager."""

    id: str = Field(primary_key=True)
    employee_id: str
    group_id: str
    justification: str
    status: str = Field("pending", description="pending | approved | rejected")
    approver_id: str | None = None
    decided_at: str | None = None
    created_at: str
