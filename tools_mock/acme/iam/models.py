"""Identity and access: directory users, the roles that grant permissions, groups and who is in
them."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base


@entity(id_prefix="U-", id_width=4, searchable=("username", "email"), system="iam")
class User(Base, table=True):
    """A directory account; every employee has one (same number: E-0042 has U-0042)."""

    id: str = Field(primary_key=True, description="User id, e.g. U-0001.")
    username: str
    email: str
    employee_id: str
    status: Literal["active", "locked", "disabled"] = Field("active", sa_type=AutoString)
    roles: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    mfa_enabled: bool = True
    last_login_at: str | None = None


@entity(id_prefix="", system="iam")
class Role(Base, table=True):
    """A named set of permissions; the id is the role's name (e.g. helpdesk)."""

    id: str = Field(primary_key=True, description="The role's name.")
    description: str
    permissions: list[str] = Field(default_factory=list, sa_column=Column(JSON))


@entity(id_prefix="G-", id_width=3, searchable=("name", "application"), system="iam")
class Group(Base, table=True):
    """An access group in a connected application. Privileged groups need an approved
    AccessRequest before anyone is added."""

    id: str = Field(primary_key=True, description="Group id (G- and three digits).")
    name: str
    application: str
    description: str = ""
    privileged: bool = False
    owner_id: str = Field(description="The Employee who owns the group.")


@entity(id_prefix="GM-", id_width=6, system="iam")
class GroupMembership(Base, table=True):
    """One user in one group, and the request that granted it."""

    id: str = Field(primary_key=True)
    user_id: str
    group_id: str
    granted_at: str
    granted_by: str = Field(description="The User who made the change, or 'provisioning'.")
    access_request_id: str | None = None
