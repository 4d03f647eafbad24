"""Knowledge: help-centre and internal articles, and the company's policy documents."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import JSON, Column
from sqlmodel import AutoString, Field

from simforge.world import entity

from ..base import Base

Visibility = Literal["internal", "public"]


@entity(id_prefix="KB-", id_width=4, searchable=("title", "body", "category"), system="kb")
class Article(Base, table=True):
    """A knowledge-base article; public ones appear in the customer help centre."""

    id: str = Field(primary_key=True, description="Article id, e.g. KB-0001.")
    title: str
    body: str
    category: str
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    visibility: Visibility = Field("internal", sa_type=AutoString)
    status: Literal["draft", "published", "archived"] = Field("draft", sa_type=AutoString)
    author_id: str
    reviewer_id: str | None = None
    updated_at: str


@entity(id_prefix="POL-", id_width=3, searchable=("title", "summary", "body"), system="kb")
class PolicyDocument(Base, table=True):
    """A company policy: the rules staff and agents must follow."""

    id: str = Field(primary_key=True, description="Policy id, e.g. POL-001.")
    title: str
    version: str
    status: Literal["active", "superseded"] = Field("active", sa_type=AutoString)
    owner_department: str
    effective_date: str
    summary: str
    body: str


@entity(id_prefix="PA-", id_width=6, system="kb")
class PolicyAcknowledgement(Base, table=True):
    """An employee's confirmation that they read a policy version."""

    id: str = Field(primary_key=True)
    employee_id: str
    policy_id: str
    version: str
    acknowledged_at: str
