"""Acme: an online retailer and the enterprise behind it, twelve systems an agent orchestrates:
CRM, orders & catalog, billing & payments, support, inventory & warehouses, shipping & returns,
the IT service desk, HR, identity & access, communications (email, calendar, chat), the
knowledge base and policies, and finance approvals. Each system is a small folder of models,
tools and seed data.

This folder is loaded by path as the package ``simforge_ext.packs.acme`` (it is not importable
by its folder name), so its files import each other relatively.
"""

from __future__ import annotations

from typing import Any

from simforge.tools import Pack

from .billing import payments as billing_payments
from .billing import seed as billing_seed
from .billing import tools as billing_tools
from .billing.models import Approval, CreditNote, Invoice, LedgerEntry, Payment, Refund
from .comms import seed as comms_seed
from .comms import tools as comms_tools
from .comms.models import CalendarEvent, Channel, ChatMessage, Email
from .crm import seed as crm_seed
from .crm import tools as crm_tools
from .crm.models import Contact, Customer, Opportunity
from .finance import seed as finance_seed
from .finance import tools as finance_tools
from .finance.models import Budget, ExpenseReport, PurchaseOrder, PurchaseRequest, Vendor
from .hr import seed as hr_seed
from .hr import tools as hr_tools
from .hr.models import AccessRequest, Employee, LeaveRequest
from .iam import seed as iam_seed
from .iam import tools as iam_tools
from .iam.models import Group, GroupMembership, Role, User
from .inventory import seed as inventory_seed
from .inventory import tools as inventory_tools
from .inventory.models import Reservation, StockAdjustment, StockLevel, StockTransfer, Warehouse
from .itsm import seed as itsm_seed
from .itsm import tools as itsm_tools
from .itsm.models import Asset, ChangeRequest, Incident
from .kb import seed as kb_seed
from .kb import tools as kb_tools
from .kb.models import Article, PolicyAcknowledgement, PolicyDocument
from .orders import seed as orders_seed
from .orders import tools as orders_tools
from .orders.models import Order, Product
from .shipping import seed as shipping_seed
from .shipping import tools as shipping_tools
from .shipping.models import ReturnRequest, Shipment
from .support import seed as support_seed
from .support import tools as support_tools
from .support.models import Ticket

ENTITIES = [
    Customer, Contact, Opportunity,
    Product, Order,
    Invoice, Payment, Refund, CreditNote, Approval, LedgerEntry,
    Ticket,
    Warehouse, StockLevel, Reservation, StockTransfer, StockAdjustment,
    Shipment, ReturnRequest,
    Incident, ChangeRequest, Asset,
    Employee, LeaveRequest, AccessRequest,
    User, Role, Group, GroupMembership,
    Email, CalendarEvent, Channel, ChatMessage,
    Article, PolicyDocument, PolicyAcknowledgement,
    Budget, Vendor, PurchaseRequest, PurchaseOrder, ExpenseReport,
]  # fmt: skip


def seed(seed: int, scale: int) -> dict[str, list[dict[str, Any]]]:
    """The seeded tables for ``seed`` at ``scale`` (1: ~20 customers and ~30 staff; 400: over
    50,000 rows). Every table draws from its own stream, so a seed always gives the same rows."""
    customers = crm_seed.customers(seed, scale)
    products = orders_seed.products(seed, scale)
    orders = orders_seed.orders(seed, scale, customers, products)
    approvals = billing_seed.approvals(seed, orders)
    refunds = billing_seed.refunds(seed, orders, approvals)
    credit_notes = billing_seed.credit_notes(seed, orders)
    invoices = billing_seed.invoices(seed, orders)
    employees = hr_seed.employees(seed, scale)
    users = iam_seed.users(seed, employees)
    groups = iam_seed.groups(employees)
    warehouses = inventory_seed.warehouses()
    reservations = inventory_seed.reservations(orders, warehouses)
    channels = comms_seed.channels()
    policies = kb_seed.policies()
    vendors = finance_seed.vendors(seed, scale)
    requests = finance_seed.purchase_requests(seed, employees, vendors)
    purchase_orders = finance_seed.purchase_orders(requests)
    assets = itsm_seed.assets(seed, employees)
    return {
        "Customer": customers,
        "Contact": crm_seed.contacts(seed, customers),
        "Opportunity": crm_seed.opportunities(seed, scale, customers, employees),
        "Product": products,
        "Order": orders,
        "Invoice": invoices,
        "Payment": billing_seed.payments(seed, invoices),
        "Refund": refunds,
        "CreditNote": credit_notes,
        "Approval": approvals,
        "LedgerEntry": billing_seed.ledger(customers, refunds, credit_notes),
        "Ticket": support_seed.tickets(seed, scale, customers, orders),
        "Warehouse": warehouses,
        "StockLevel": inventory_seed.stock_levels(seed, products, warehouses, reservations),
        "Reservation": reservations,
        "Shipment": shipping_seed.shipments(seed, orders, reservations),
        "ReturnRequest": shipping_seed.returns(seed, orders),
        "Employee": employees,
        "LeaveRequest": hr_seed.leave_requests(seed, employees),
        "AccessRequest": hr_seed.access_requests(seed, employees, groups),
        "User": users,
        "Role": iam_seed.roles(),
        "Group": groups,
        "GroupMembership": iam_seed.memberships(seed, users, employees, groups),
        "Asset": assets,
        "Incident": itsm_seed.incidents(seed, employees, assets),
        "ChangeRequest": itsm_seed.change_requests(seed, employees),
        "Email": comms_seed.emails(seed, employees, customers),
        "CalendarEvent": comms_seed.calendar_events(seed, employees),
        "Channel": channels,
        "ChatMessage": comms_seed.chat_messages(seed, employees, channels),
        "Article": kb_seed.articles(seed, scale, employees),
        "PolicyDocument": policies,
        "PolicyAcknowledgement": kb_seed.acknowledgements(seed, employees, policies),
        "Vendor": vendors,
        "PurchaseRequest": requests,
        "PurchaseOrder": purchase_orders,
        "Budget": finance_seed.budgets(scale, purchase_orders),
        "ExpenseReport": finance_seed.expense_reports(seed, employees),
    }


PACK = Pack(
    name="acme",
    description=(
        "Acme, an online retailer and its enterprise systems: CRM (accounts, contacts, "
        "opportunities), catalog and orders, billing and payments, customer support, inventory "
        "and warehouses, shipping and returns, the IT service desk, HR, identity and access, "
        "email, calendar and chat, the knowledge base and policies, and finance approvals."
    ),
    entities=ENTITIES,
    tools=[
        *crm_tools.TOOLS,
        *orders_tools.TOOLS,
        *billing_tools.TOOLS,
        *billing_payments.PAYMENT_TOOLS,
        *support_tools.TOOLS,
        *inventory_tools.TOOLS,
        *shipping_tools.TOOLS,
        *itsm_tools.TOOLS,
        *hr_tools.TOOLS,
        *iam_tools.TOOLS,
        *comms_tools.TOOLS,
        *kb_tools.TOOLS,
        *finance_tools.TOOLS,
    ],
    seed=seed,
)
