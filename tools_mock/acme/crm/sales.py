"""CRM sales tools: opportunities move forward one stage at a time, and discounts above the
sales team's own limit need someone with the discounts.approve permission."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import CRM, money, now_iso, reads, text, today_iso
from ..iam.tools import require_permission
from .models import OPPORTUNITY_STAGES, Opportunity, OpportunityStage

SELF_SERVICE_DISCOUNT = 15.0
MAX_DISCOUNT = 40.0
_OPEN = OPPORTUNITY_STAGES[:4]
_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "crm",
    "latency": CRM.write,
    "capacity": CRM.capacity,
}


@tool(entities=["Opportunity", "Customer", "Employee"], **_WRITE)
def create_opportunity(
    ctx: ToolContext,
    customer_id: str = Field(description="The account the deal is with."),
    name: str = Field(description="Short name of the deal."),
    amount: float = Field(description="Deal value before discount, in USD."),
    owner_id: str = Field(description="The sales Employee who owns it."),
    close_date: str = Field(description="Expected close, YYYY-MM-DD."),
) -> dict[str, Any]:
    """Open a deal in the prospecting stage. Returns the Opportunity."""
    customer = ctx.require("Customer", customer_id)
    if customer["status"] != "active":
        raise ToolError.precondition(f"Customer {customer_id} is {customer['status']}")
    owner = ctx.require("Employee", owner_id)
    if owner["department"] != "sales" or owner["status"] != "active":
        raise ToolError.precondition(f"Employee {owner_id} is not active sales staff")
    if money(amount) <= 0:
        raise ToolError.invalid("amount", "amount must be greater than 0")
    return ctx.insert(
        "Opportunity",
        {
            "customer_id": customer_id,
            "name": text("name", name),
            "amount": money(amount),
            "owner_id": owner_id,
            "close_date": close_date,
            "created_at": now_iso(ctx),
        },
    )


def _open(ctx: ToolContext, opportunity_id: str) -> dict[str, Any]:
    deal = ctx.require("Opportunity", opportunity_id)
    if deal["stage"] not in _OPEN:
        raise ToolError.conflict(f"Opportunity {opportunity_id} is {deal['stage']}")
    return deal


@tool(entities=["Opportunity", "User"], **_WRITE)
def set_opportunity_discount(
    ctx: ToolContext,
    opportunity_id: str = Field(description="An open Opportunity."),
    discount_pct: float = Field(ge=0, description="Discount in percent, 0 to 40."),
    actor_id: str = Field(description="The User setting it; above 15% needs discounts.approve."),
) -> dict[str, Any]:
    """Set the discount of an open deal. Up to 15% any active user may set; above that, up to
    40%, only a user with the discounts.approve permission, who is recorded as approver.
    Returns the Opportunity."""
    _open(ctx, opportunity_id)
    if discount_pct > MAX_DISCOUNT:
        raise ToolError.invalid(
            "discount_pct", f"discounts above {MAX_DISCOUNT:g}% are not allowed"
        )
    approved_by = None
    if discount_pct > SELF_SERVICE_DISCOUNT:
        require_permission(ctx, actor_id, "discounts.approve")
        approved_by = actor_id
    else:
        user = ctx.get("User", actor_id)
        if user is None or user["status"] != "active":
            raise ToolError.forbidden(f"unknown or inactive actor {actor_id!r}")
    return ctx.update(
        "Opportunity",
        opportunity_id,
        {"discount_pct": round(discount_pct, 2), "discount_approved_by": approved_by},
    )


@tool(entities=["Opportunity"], **_WRITE)
def update_opportunity_stage(
    ctx: ToolContext,
    opportunity_id: str = Field(description="An open Opportunity."),
    stage: OpportunityStage = Field(description="The next stage, or closed_lost."),
) -> dict[str, Any]:
    """Move a deal to the next stage (prospecting, qualification, proposal, negotiation,
    closed_won), one step at a time; closed_lost is possible from any open stage. Closing won
    from negotiation needs any discount above 15% to carry an approval. Returns the
    Opportunity."""
    deal = _open(ctx, opportunity_id)
    if stage not in OPPORTUNITY_STAGES:
        raise ToolError.invalid(
            "stage", f"stage {stage!r} is not one of {list(OPPORTUNITY_STAGES)}"
        )
    if stage != "closed_lost":
        current = OPPORTUNITY_STAGES.index(deal["stage"])
        if OPPORTUNITY_STAGES.index(stage) != current + 1:
            raise ToolError.precondition(
                f"Opportunity {opportunity_id} is in {deal['stage']}; the next stage is "
                f"{OPPORTUNITY_STAGES[current + 1]}"
            )
    if (
        stage == "closed_won"
        and deal["discount_pct"] > SELF_SERVICE_DISCOUNT
        and deal["discount_approved_by"] is None
    ):
        raise ToolError.precondition(f"the {deal['discount_pct']:g}% discount is not approved")
    changes: dict[str, Any] = {"stage": stage}
    if stage in ("closed_won", "closed_lost"):
        changes["close_date"] = today_iso(ctx)
    return ctx.update("Opportunity", opportunity_id, changes)


SALES_TOOLS = [
    *reads(Opportunity, ["get", "list"], "crm", CRM),
    create_opportunity,
    set_opportunity_discount,
    update_opportunity_stage,
]
