"""Knowledge tools: search and maintain articles (a second person reviews before anything is
published), read policies, and record that staff acknowledged them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import KB, now_iso, reads, text
from .models import Article, PolicyAcknowledgement, PolicyDocument, Visibility

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "kb",
    "latency": KB.write,
    "capacity": KB.capacity,
}


def _staff(ctx: ToolContext, employee_id: str) -> dict[str, Any]:
    employee = ctx.require("Employee", employee_id)
    if employee["status"] == "terminated":
        raise ToolError.forbidden(f"Employee {employee_id} is terminated")
    return employee


@tool(entities=["Article", "Employee"], **_WRITE)
def create_article(
    ctx: ToolContext,
    author_id: str = Field(description="The Employee writing it."),
    title: str = Field(description="The article's title."),
    body: str = Field(description="The article's text."),
    category: str = Field(description="Help-centre category, e.g. returns, billing, it."),
    visibility: Visibility = "internal",
    tags: list[str] = Field(default_factory=list),
) -> dict[str, Any]:
    """Write a new article as a draft. Returns the Article."""
    _staff(ctx, author_id)
    if visibility not in ("internal", "public"):
        raise ToolError.invalid("visibility", "visibility is internal or public")
    return ctx.insert(
        "Article",
        {
            "title": text("title", title),
            "body": text("body", body),
            "category": text("category", category),
            "tags": tags,
            "visibility": visibility,
            "author_id": author_id,
            "updated_at": now_iso(ctx),
        },
    )


@tool(entities=["Article"], **_WRITE)
def update_article(
    ctx: ToolContext,
    article_id: str = Field(description="A draft or published Article."),
    title: str | None = None,
    body: str | None = None,
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Edit an article; a published article goes back to draft for review. Archived ones
    cannot change. Returns the Article."""
    article = ctx.require("Article", article_id)
    if article["status"] == "archived":
        raise ToolError.precondition(f"Article {article_id} is archived")
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = text("title", title)
    if body is not None:
        changes["body"] = text("body", body)
    if tags is not None:
        changes["tags"] = tags
    if not changes:
        raise ToolError.invalid("article_id", "give at least one of title, body, tags")
    changes.update({"status": "draft", "reviewer_id": None, "updated_at": now_iso(ctx)})
    return ctx.update("Article", article_id, changes)


@tool(entities=["Article", "Employee"], **_WRITE)
def publish_article(
    ctx: ToolContext,
    article_id: str = Field(description="A draft Article."),
    reviewer_id: str = Field(description="The Employee who reviewed it; not its author."),
) -> dict[str, Any]:
    """Publish a reviewed draft (to the help centre when public). The reviewer must be someone
    other than the author. Returns the Article."""
    article = ctx.require("Article", article_id)
    _staff(ctx, reviewer_id)
    if article["status"] != "draft":
        raise ToolError.conflict(f"Article {article_id} is {article['status']}")
    if reviewer_id == article["author_id"]:
        raise ToolError.forbidden("an author cannot review their own article")
    return ctx.update(
        "Article",
        article_id,
        {"status": "published", "reviewer_id": reviewer_id, "updated_at": now_iso(ctx)},
    )


@tool(entities=["Article"], **_WRITE)
def archive_article(
    ctx: ToolContext, article_id: str = Field(description="The Article to withdraw.")
) -> dict[str, Any]:
    """Withdraw an article from use. Returns it."""
    article = ctx.require("Article", article_id)
    if article["status"] == "archived":
        raise ToolError.conflict(f"Article {article_id} is already archived")
    return ctx.update("Article", article_id, {"status": "archived", "updated_at": now_iso(ctx)})


@tool(entities=["PolicyDocument", "PolicyAcknowledgement", "Employee"], **_WRITE)
def acknowledge_policy(
    ctx: ToolContext,
    employee_id: str = Field(description="The Employee confirming."),
    policy_id: str = Field(description="The active PolicyDocument read."),
) -> dict[str, Any]:
    """Record that an employee read the current version of an active policy. Returns the
    PolicyAcknowledgement."""
    _staff(ctx, employee_id)
    policy = ctx.require("PolicyDocument", policy_id)
    if policy["status"] != "active":
        raise ToolError.precondition(f"PolicyDocument {policy_id} is {policy['status']}")
    for ack in ctx.rows("PolicyAcknowledgement"):
        if (ack["employee_id"], ack["policy_id"], ack["version"]) == (
            employee_id,
            policy_id,
            policy["version"],
        ):
            raise ToolError.conflict(f"already acknowledged as {ack['id']}")
    return ctx.insert(
        "PolicyAcknowledgement",
        {
            "employee_id": employee_id,
            "policy_id": policy_id,
            "version": policy["version"],
            "acknowledged_at": now_iso(ctx),
        },
    )


TOOLS = [
    *reads(Article, ["get", "list", "search"], "kb", KB),
    create_article,
    update_article,
    publish_article,
    archive_article,
    *reads(PolicyDocument, ["get", "list", "search"], "kb", KB),
    acknowledge_policy,
    *reads(PolicyAcknowledgement, ["list"], "kb", KB),
]
