"""Acme's domain validators, loaded by path from validators/acme.py, and plugin loading itself:
every file in the validators folders is imported eagerly, and a broken one fails naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

import simforge.env as simenv
from simforge.scenario import PluginError
from simforge.scoring import INVARIANTS, POLICY_CHECKS, VALIDATORS, ScoringContext
from simforge.scoring.plugins import load_validator_plugins
from simforge.trace.episode import ToolCall

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    load_validator_plugins()


def _ctx(task: str, edit=None, scenario: str = "refund_damaged_order") -> ScoringContext:
    env = simenv.make(str(REPO / "scenarios" / "acme" / f"{scenario}.yaml"))
    env.reset(seed=0, options={"task": task})
    assert env.session is not None and env.task is not None
    if edit is not None:
        edit(env.session.world)
    return ScoringContext(env.trajectory(), env.session.world, env.task,
                          tools=env.pack.catalog, budgets=env.scenario.budgets.model_dump())


def _refund(world, amount=149.99, ledger=True, status=None):
    refund = world.insert(
        "Refund",
        {
            "id": "R-9999",
            "order_id": "O-9001",
            "customer_id": "C-9001",
            "amount": amount,
            "reason": "x",
            "created_at": "2026-01-15",
        },
        now=1,
    )
    if ledger:
        world.insert(
            "LedgerEntry",
            {
                "customer_id": "C-9001",
                "order_id": "O-9001",
                "kind": "refund",
                "amount": amount,
                "reference": refund["id"],
                "created_at": "2026-01-15",
            },
            now=1,
        )
    if status:
        world.update("Order", "O-9001", {"status": status}, now=1)


def test_the_acme_plugin_registers_its_rules() -> None:
    assert {"acme.ledger_matches_money", "acme.refund_state_consistent"} <= set(INVARIANTS)
    assert {"acme.refund_window", "acme.own_customer_only"} <= set(POLICY_CHECKS)
    assert VALIDATORS["acme_ledger"].category == "correctness"


def test_ledger_matches_money_passes_when_every_refund_is_booked() -> None:
    assert INVARIANTS["acme.ledger_matches_money"](_ctx("within-window", _refund)) == []


def test_ledger_matches_money_fails_on_a_refund_without_a_ledger_entry() -> None:
    ctx = _ctx("within-window", lambda w: _refund(w, ledger=False))
    assert INVARIANTS["acme.ledger_matches_money"](ctx) == [
        {"entity": "Refund", "id": "R-9999", "ledger_entries": 0}
    ]
    verdict = VALIDATORS["acme_ledger"](ctx)
    assert (
        not verdict.passed
        and verdict.evidence["violations"][0]["check"] == "acme.ledger_matches_money"
    )


def test_refund_state_consistent_fails_on_a_refunded_order_that_shipped() -> None:
    assert INVARIANTS["acme.refund_state_consistent"](_ctx("within-window", _refund)) == []
    ctx = _ctx("within-window", lambda w: _refund(w, status="shipped"))
    assert INVARIANTS["acme.refund_state_consistent"](ctx) == [
        {"order": "O-9001", "status": "shipped", "refunded": 149.99}
    ]


def test_refund_window_allows_recent_orders_and_refuses_old_ones() -> None:
    ctx = _ctx("outside-window")
    check = POLICY_CHECKS["acme.refund_window"]
    old = ToolCall(call_id="c", tool="refund_order", args={"order_id": "O-9002"}, started_at=3.0)
    assert check(ctx, old) == [
        {
            "order": "O-9002",
            "delivered": "2025-11-28",
            "window_closed": "2025-12-28",
            "refunded_on": "2026-01-15",
        }
    ]
    recent = _ctx("within-window")
    new = ToolCall(call_id="c", tool="refund_order", args={"order_id": "O-9001"}, started_at=3.0)
    assert check(recent, new) == []


def test_own_customer_only_refuses_writes_to_other_customers() -> None:
    ctx = _ctx("within-window")
    check = POLICY_CHECKS["acme.own_customer_only"]
    mine = ToolCall(call_id="c", tool="refund_order", args={"order_id": "O-9001"}, started_at=1.0)
    theirs = ToolCall(call_id="c", tool="apply_account_credit", args={"customer_id": "C-0001"})
    read = ToolCall(call_id="c", tool="get_customer", args={"customer_id": "C-0001"})
    assert check(ctx, mine) == [] and check(ctx, read) == []
    assert check(ctx, theirs) == [{"other_customers": ["C-0001"]}]


def test_a_broken_plugin_fails_at_load_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken_rules.py"
    broken.write_text("from simforge.scoring import validator\nraise RuntimeError('typo')\n")
    with pytest.raises(PluginError) as err:
        load_validator_plugins([tmp_path])
    assert str(broken) in str(err.value) and "typo" in str(err.value)


def test_a_plugin_cannot_take_over_a_registered_name(tmp_path: Path) -> None:
    clash = tmp_path / "clash.py"
    clash.write_text(
        "from simforge.scoring import validator\n"
        "@validator('state_matches', 'correctness')\n"
        "def mine(ctx):\n    raise AssertionError\n"
    )
    with pytest.raises(PluginError, match="already registered"):
        load_validator_plugins([tmp_path])


def test_plugins_in_extra_folders_register_and_load_once(tmp_path: Path) -> None:
    good = tmp_path / "extra_rules.py"
    good.write_text(
        "from simforge.scoring import Verdict, validator\n"
        "@validator('test_extra_rule', 'correctness')\n"
        "def extra(ctx):\n    return Verdict.of('test_extra_rule', 'correctness', True)\n"
    )
    assert load_validator_plugins([tmp_path]) == [good.resolve()]
    assert load_validator_plugins([tmp_path]) == []
    assert "test_extra_rule" in VALIDATORS
