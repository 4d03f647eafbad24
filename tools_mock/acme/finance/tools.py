"""Finance tools: purchase requests (approval thresholds, budget checks), purchase orders that
commit budget, and expense reports approved by the employee's manager."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import Field

from simforge.tools import ToolContext, ToolError, tool

from ..common import FINANCE, money, now_iso, reads, text
from ..iam.tools import require_permission
from .models import (
    Budget,
    ExpenseCategory,
    ExpenseReport,
    PurchaseOrder,
    PurchaseRequest,
    Vendor,
)

_WRITE: dict[str, Any] = {
    "kind": "write",
    "system": "finance",
    "latency": FINANCE.write,
    "capacity": FINANCE.capacity,
}
LARGE_PURCHASE = 10_000.00
RECEIPT_ABOVE = 75.00
EXPENSE_CATEGORIES: tuple[str, ...] = get_args(ExpenseCategory)
FISCAL_YEAR = 2026


def budget_of(ctx: ToolContext, department: str) -> dict[str, Any]:
    for budget in ctx.rows("Budget"):
        if budget["department"] == department and budget["fiscal_year"] == FISCAL_YEAR:
            return budget
    raise ToolError.not_found("Budget", f"{department} {FISCAL_YEAR}")


def remaining(budget: dict[str, Any]) -> float:
    return money(budget["amount"] - budget["committed"] - budget["spent"])


def _active_vendor(ctx: ToolContext, vendor_id: str) -> dict[str, Any]:
    vendor = ctx.require("Vendor", vendor_id)
    if vendor["status"] != "active":
        raise ToolError.precondition(f"Vendor {vendor_id} is {vendor['status']}")
    return vendor


@tool(entities=["PurchaseRequest", "Vendor", "Employee"], **_WRITE)
def create_purchase_request(
    ctx: ToolContext,
    requester_id: str = Field(description="The Employee asking to buy."),
    vendor_id: str = Field(description="An active Vendor."),
    description: str = Field(description="What is bought and why."),
    amount: float = Field(description="Total, in USD."),
) -> dict[str, Any]:
    """Ask to buy from a vendor against the requester's department budget. Returns the
    PurchaseRequest (pending)."""
    requester = ctx.require("Employee", requester_id)
    _active_vendor(ctx, vendor_id)
    amount = money(amount)
    if amount <= 0:
        raise ToolError.invalid("amount", "amount must be greater than 0")
    return ctx.insert(
        "PurchaseRequest",
        {
            "requester_id": requester_id,
            "department": requester["department"],
            "vendor_id": vendor_id,
            "description": text("description", description),
            "amount": amount,
            "created_at": now_iso(ctx),
        },
    )


def _decide(ctx: ToolContext, request_id: str, actor_id: str) -> dict[str, Any]:
    request = ctx.require("PurchaseRequest", request_id)
    actor = require_permission(ctx, actor_id, "purchases.approve")
    if actor["employee_id"] == request["requester_id"]:
        raise ToolError.forbidden("nobody may decide on their own purchase request")
    if request["status"] != "pending":
        raise ToolError.conflict(f"PurchaseRequest {request_id} is {request['status']}")
    return request


@tool(entities=["PurchaseRequest", "Budget", "User"], **_WRITE)
def approve_purchase_request(
    ctx: ToolContext,
    purchase_request_id: str = Field(description="The pending PurchaseRequest."),
    actor_id: str = Field(description="The approving User (purchases.approve)."),
) -> dict[str, Any]:
    """Approve a pending purchase request. Amounts above 10,000.00 need purchases.approve_large;
    the department's remaining budget must cover the amount; nobody approves their own request.
    Returns the PurchaseRequest and the budget left."""
    request = _decide(ctx, purchase_request_id, actor_id)
    if request["amount"] > LARGE_PURCHASE:
        require_permission(ctx, actor_id, "purchases.approve_large")
    budget = budget_of(ctx, request["department"])
    left = remaining(budget)
    if request["amount"] > left + 0.005:
        raise ToolError.precondition(
            f"the {request['department']} budget has {left:.2f} left, not {request['amount']:.2f}"
        )
    approver = ctx.require("User", actor_id)["employee_id"]
    updated = ctx.update(
        "PurchaseRequest", purchase_request_id, {"status": "approved", "approver_id": approver}
    )
    return {"purchase_request": updated, "budget_remaining": left}


@tool(entities=["PurchaseRequest", "User"], **_WRITE)
def reject_purchase_request(
    ctx: ToolContext,
    purchase_request_id: str = Field(description="The pending PurchaseRequest."),
    actor_id: str = Field(description="The deciding User (purchases.approve)."),
    reason: str = Field(description="Why it is declined."),
) -> dict[str, Any]:
    """Decline a pending purchase request. Returns the PurchaseRequest."""
    _decide(ctx, purchase_request_id, actor_id)
    approver = ctx.require("User", actor_id)["employee_id"]
    return ctx.update(
        "PurchaseRequest",
        purchase_request_id,
        {"status": "rejected", "approver_id": approver, "decision_note": text("reason", reason)},
    )


@tool(entities=["PurchaseRequest", "PurchaseOrder", "Budget", "Vendor"], **_WRITE)
def issue_purchase_order(
    ctx: ToolContext,
    purchase_request_id: str = Field(description="An approved PurchaseRequest."),
) -> dict[str, Any]:
    """Send a purchase order to the vendor for an approved request; its amount is committed
    against the department budget. Returns the PurchaseOrder and the budget."""
    request = ctx.require("PurchaseRequest", purchase_request_id)
    if request["status"] == "ordered":
        raise ToolError.conflict(f"PurchaseRequest {purchase_request_id} is already ordered")
    if request["status"] != "approved":
        raise ToolError.precondition(
            f"PurchaseRequest {purchase_request_id} is {request['status']}"
        )
    _active_vendor(ctx, request["vendor_id"])
    budget = budget_of(ctx, request["department"])
    if request["amount"] > remaining(budget) + 0.005:
        raise ToolError.precondition(
            f"the {request['department']} budget has {remaining(budget):.2f} left"
        )
    committed = money(budget["committed"] + request["amount"])
    updated_budget = ctx.update("Budget", budget["id"], {"committed": committed})
    ctx.update("PurchaseRequest", purchase_request_id, {"status": "ordered"})
    order = ctx.insert(
        "PurchaseOrder",
        {
            "purchase_request_id": purchase_request_id,
            "vendor_id": request["vendor_id"],
            "department": request["department"],
            "amount": request["amount"],
            "issued_at": now_iso(ctx),
        },
    )
    return {"purchase_order": order, "budget": updated_budget}


@tool(entities=["ExpenseReport", "Employee"], **_WRITE)
def submit_expense_report(
    ctx: ToolContext,
    employee_id: str = Field(description="The Employee who paid."),
    amount: float = Field(description="Amount to reimburse, in USD."),
    category: ExpenseCategory = Field(description="What kind of spending it is."),
    description: str = Field(description="What was bought, for which business purpose."),
    receipt_attached: bool = Field(False, description="Whether a receipt is attached."),
) -> dict[str, Any]:
    """File an expense report for the employee's manager to approve. Returns it."""
    ctx.require("Employee", employee_id)
    amount = money(amount)
    if amount <= 0:
        raise ToolError.invalid("amount", "amount must be greater than 0")
    if category not in EXPENSE_CATEGORIES:
        raise ToolError.invalid("category", f"category is one of {list(EXPENSE_CATEGORIES)}")
    return ctx.insert(
        "ExpenseReport",
        {
            "employee_id": employee_id,
            "amount": amount,
            "category": category,
            "description": text("description", description),
            "receipt_attached": receipt_attached,
            "submitted_at": now_iso(ctx),
        },
    )


def _expense_decision(ctx: ToolContext, expense_id: str, approver_id: str) -> dict[str, Any]:
    report = ctx.require("ExpenseReport", expense_id)
    employee = ctx.require("Employee", report["employee_id"])
    ctx.require("Employee", approver_id)
    if approver_id == employee["id"] or employee["manager_id"] != approver_id:
        raise ToolError.forbidden(
            f"only the manager of {employee['id']} ({employee['manager_id']}) may decide"
        )
    if report["status"] != "submitted":
        raise ToolError.conflict(f"ExpenseReport {expense_id} is {report['status']}")
    return report


@tool(entities=["ExpenseReport", "Employee"], **_WRITE)
def approve_expense_report(
    ctx: ToolContext,
    expense_id: str = Field(description="A submitted ExpenseReport."),
    approver_id: str = Field(description="The employee's manager."),
) -> dict[str, Any]:
    """Approve an expense report as the employee's manager. Expenses above the expense policy's
    receipt threshold need a receipt attached. Returns the ExpenseReport."""
    report = _expense_decision(ctx, expense_id, approver_id)
    if report["amount"] > RECEIPT_ABOVE and not report["receipt_attached"]:
        raise ToolError.precondition(
            f"ExpenseReport {expense_id} is {report['amount']:.2f} without a receipt"
        )
    return ctx.update(
        "ExpenseReport", expense_id, {"status": "approved", "approver_id": approver_id}
    )


@tool(entities=["ExpenseReport", "Employee"], **_WRITE)
def reject_expense_report(
    ctx: ToolContext,
    expense_id: str = Field(description="A submitted ExpenseReport."),
    approver_id: str = Field(description="The employee's manager."),
    reason: str = Field(description="Why it is declined."),
) -> dict[str, Any]:
    """Decline an expense report as the employee's manager. Returns the ExpenseReport."""
    _expense_decision(ctx, expense_id, approver_id)
    return ctx.update(
        "ExpenseReport",
        expense_id,
        {"status": "rejected", "approver_id": approver_id, "decision_note": text("reason", reason)},
    )


TOOLS = [
    *reads(Budget, ["get", "list"], "finance", FINANCE),
    *reads(Vendor, ["get", "list", "search"], "finance", FINANCE),
    *reads(PurchaseRequest, ["get", "list"], "finance", FINANCE),
    create_purchase_request,
    approve_purchase_request,
    reject_purchase_request,
    *reads(PurchaseOrder, ["get", "list"], "finance", FINANCE),
    issue_purchase_order,
    *reads(ExpenseReport, ["get", "list"], "finance", FINANCE),
    submit_expense_report,
    approve_expense_report,
    reject_expense_report,
]
