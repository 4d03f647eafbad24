"""Acme: a slice of an online retailer with four systems (CRM, orders & catalog, billing,
support), each a small folder of models, tools and seed data.

This folder is loaded by path as the package ``simforge_ext.packs.acme`` (it is not importable
by its folder name), so its files import each other relatively.
"""

from __future__ import annotations

from typing import Any

from simforge.tools import Pack

from .billing import seed as billing_seed
from .billing import tools as billing_tools
from .billing.models import Approval, CreditNote, Invoice, LedgerEntry, Refund
from .crm import seed as crm_seed
from .crm import tools as crm_tools
from .crm.models import Customer
from .orders import seed as orders_seed
from .orders import tools as orders_tools
from .orders.models import Order, Product
from .support import seed as support_seed
from .support import tools as support_tools
from .support.models import Ticket

ENTITIES = [Customer, Product, Order, Invoice, Refund, CreditNote, Approval, LedgerEntry, Ticket]


def seed(seed: int, scale: int) -> dict[str, list[dict[str, Any]]]:
    """The seeded tables for ``seed`` at ``scale`` (1: ~20 customers; 400: tens of thousands of
    rows). Every table draws from its own stream, so a seed always gives the same rows."""
    customers = crm_seed.customers(seed, scale)
    products = orders_seed.products(seed, scale)
    orders = orders_seed.orders(seed, scale, customers, products)
    approvals = billing_seed.approvals(seed, orders)
    refunds = billing_seed.refunds(seed, orders, approvals)
    credit_notes = billing_seed.credit_notes(seed, orders)
    return {
        "Customer": customers,
        "Product": products,
        "Order": orders,
        "Invoice": billing_seed.invoices(seed, orders),
        "Refund": refunds,
        "CreditNote": credit_notes,
        "Approval": approvals,
        "LedgerEntry": billing_seed.ledger(customers, refunds, credit_notes),
        "Ticket": support_seed.tickets(seed, scale, customers, orders),
    }


PACK = Pack(
    name="acme",
    description=(
        "Acme, an online retailer: customer accounts (CRM), catalog and orders, billing "
        "(invoices, refunds, credit notes, approvals, ledger) and customer support tickets."
    ),
    entities=ENTITIES,
    tools=[*crm_tools.TOOLS, *orders_tools.TOOLS, *billing_tools.TOOLS, *support_tools.TOOLS],
    seed=seed,
)
