"""HR: employees, their managers and leave, and requests for access to company systems."""

from __future__ import annotations

from typing import Literal, get_args

from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

Department = Literal[
    "executive",
    "engineering",
    "it",
    "sales",
    "support",
    "finance",
    "hr",
    "operations",
]
DEPARTMENTS: tuple[str, ...] = get_args(Department)
LeaveType = Literal["vacation", "sick", "personal"]
LEAVE_TYPES: tuple[str, ...] = get_args(LeaveType)


@entity(id_prefix="E-", id_width=4, searchable=("name", "email", "title"), system="hr")
class Employee(Base, table=True):
    """A member of staff. ``manager_id`` is the Employee who approves their leave and access."""

    id: str = Field(primary_key=True, description="Employee id, e.g. E-0001.")
    name: str
    email: str = Field(description="Work email (first.last@acme.example).")
    department: Department = Field(sa_type=AutoString)
    title: str
    manager_id: str | None = Field(None, description="The Employee this person reports to.")
    status: Literal["active", "on_leave", "terminated"] = Field("active", sa_type=AutoString)
    location: str = ""
    employment_type: Literal["full_time", "contractor"] = Field("full_time", sa_type=AutoString)
    hire_date: str
    leave_balance: float = Field(0.0, description="Vacation and personal days left this year.")


@entity(id_prefix="LV-", id_width=4, system="hr")
class LeaveRequest(Base, table=True):
    """Time off asked for by an employee, decided by their manager."""

    id: str = Field(primary_key=True)
    employee_id: str
    type: LeaveType = Field("vacation", sa_type=AutoString)
    start_date: str
    end_date: str
    days: float = Field(description="Working days requested (weekdays between the dates).")
    status: Literal["pending", "approved", "rejected", "cancelled"] = Field(
        "pending", sa_type=AutoString
    )
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
    status: Literal["pending", "approved", "rejected"] = Field("pending", sa_type=AutoString)
    approver_id: str | None = None
    decided_at: str | None = None
    created_at: str
