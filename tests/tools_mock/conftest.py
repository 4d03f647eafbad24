"""Fixtures for the Acme pack: the loaded pack, and a desk that calls its tools directly on a
tiny world with a clock the test moves."""

from __future__ import annotations

import importlib
import random
from types import ModuleType
from typing import Any

import pytest

from simforge.scenario.plugins import load_pack
from simforge.tools import Pack, ToolContext, ToolError
from simforge.world.store import Row

DAY = 86_400.0


@pytest.fixture(scope="session")
def acme() -> Pack:
    return load_pack("acme")


@pytest.fixture(scope="session")
def common(acme: Pack) -> ModuleType:
    """The pack's ``common`` module, as loaded under its private package name (the folder itself
    is not importable)."""
    package = acme.seed.__module__.rsplit(".", 1)[0]
    return importlib.import_module(f"{package}.common")


class Desk:
    """One Acme world (seed 0, tiny) with fixture rows of the test's own, and direct tool calls."""

    def __init__(self, pack: Pack, common: ModuleType) -> None:
        self.pack = pack
        self.common = common
        self.world = pack.world(seed=0, size="tiny")
        self.now = 0.0
        self.add(
            "Customer",
            id="C-9001",
            name="Ada Quill",
            email="ada.quill@example.org",
            phone="+1-555-0100",
            address="1 Main St, Springfield, IL 62701",
            created_at="2024-01-01",
            account_credit=10.0,
        )
        self.add(
            "Product",
            id="P-9001",
            sku="KIT-1",
            name="Grinder",
            category="kitchen",
            price=100.0,
            stock=10,
        )
        self.add(
            "Product",
            id="P-9002",
            sku="KIT-2",
            name="Beans",
            category="kitchen",
            price=25.0,
            stock=4,
        )

    def day(self, offset: int) -> str:
        """The ISO date ``offset`` days from the world's first day."""
        return self.common.world_day(offset)

    def add(self, entity: str, **fields: Any) -> Row:
        row = self.pack.schemas[entity].validate_row(fields)
        return self.world.insert(entity, row, now=self.now)

    def order(
        self,
        id: str,
        status: str,
        *,
        items: dict[str, int],
        paid: bool = True,
        delivered: int | None = None,
        customer: str = "C-9001",
    ) -> Row:
        """An order of ``items`` ({product id: quantity}) at list prices."""
        lines = [
            {"product_id": p, "quantity": q, "unit_price": self.get("Product", p)["price"]}
            for p, q in items.items()
        ]
        return self.add(
            "Order",
            id=id,
            customer_id=customer,
            status=status,
            items=lines,
            total=round(sum(x["unit_price"] * x["quantity"] for x in lines), 2),
            paid=paid,
            placed_at=self.day(-40 if delivered is None else delivered - 3),
            delivered_at=None if delivered is None else self.day(delivered),
            shipping_address="1 Main St, Springfield, IL 62701",
        )

    def employee(
        self,
        id: str,
        *,
        department: str = "engineering",
        manager: str | None = None,
        roles: tuple[str, ...] = ("employee",),
        status: str = "active",
        leave_balance: float = 10.0,
    ) -> Row:
        """An employee and their directory user (same number: E-9101 has U-9101)."""
        number = id.removeprefix("E-")
        email = f"staff{number}@acme.example"
        self.add(
            "User",
            id=f"U-{number}",
            username=f"staff{number}",
            email=email,
            employee_id=id,
            roles=list(roles),
            status="disabled" if status == "terminated" else "active",
        )
        return self.add(
            "Employee",
            id=id,
            name=f"Staff {number}",
            email=email,
            department=department,
            title="Engineer",
            manager_id=manager,
            status=status,
            hire_date="2020-01-01",
            leave_balance=leave_balance,
        )

    def call(self, tool: str, **args: Any) -> Any:
        self.now += 1.0
        ctx = ToolContext(self.world, self.now, random.Random(0), tool=tool)
        return self.pack.catalog[tool].invoke(ctx, args)

    def error(self, tool: str, **args: Any) -> ToolError:
        with pytest.raises(ToolError) as caught:
            self.call(tool, **args)
        return caught.value

    def get(self, entity: str, id: str) -> Row:
        return self.world.require(entity, id)

    def created(self, entity: str) -> list[Row]:
        """Rows of ``entity`` that tool calls created (fixtures added at t=0 are not counted)."""
        return [
            c.after
            for c in self.world.diff(since=0.0)
            if c.entity == entity and c.op == "created" and c.after is not None
        ]

    def changes(self) -> int:
        return len(self.world.diff(since=0.0))


@pytest.fixture
def desk(acme: Pack, common: ModuleType) -> Desk:
    return Desk(acme, common)
