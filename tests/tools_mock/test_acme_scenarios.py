"""Every shipped Acme scenario is solvable and not free: its oracle earns reward 1.0 on every
seed, an immediate give-up earns 0.0, and tempting mistakes earn 0.0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import simforge.env as simenv
from simforge.policies import OraclePolicy
from simforge.scenario.loader import load_scenario
from simforge.scenario.model import Task

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios" / "acme").glob("*.yaml"))
CASES = [
    pytest.param(path, task.id, seed, id=f"{path.stem}:{task.id}:{seed}")
    for path in SCENARIOS
    for scenario in [load_scenario(path)]
    for task in scenario.tasks
    for seed in scenario.seeds
]
GIVE_UP = "I could not complete the request."


def _env(path: Path, task: str, seed: int) -> tuple[simenv.SimforgeEnv, Task]:
    env = simenv.make(str(path))
    env.reset(seed=seed, options={"task": task})
    assert env.task is not None
    return env, env.task


def _play(env: simenv.SimforgeEnv, steps: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    for action in steps:
        obs, reward, terminated, truncated, info = env.step(action)
        if "tool_calls" in action:
            assert all(r["ok"] for r in obs["results"]), obs["results"]
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")


def _oracle(task: Task) -> list[dict[str, Any]]:
    """The reference solution's actions, as the oracle policy plays them."""
    policy = OraclePolicy()
    policy.reset({}, task=task)
    return [policy.act({}) for _ in task.oracle]


def test_the_acme_scenarios_are_registered_by_id() -> None:
    ids = {load_scenario(p).id for p in SCENARIOS}
    assert len(ids) >= 4
    assert {
        "acme/refund-damaged-order-v1",
        "acme/cancel-paid-order-v1",
        "acme/escalate-ticket-by-email-v1",
        "acme/large-refund-approval-v1",
    } <= ids
    env = simenv.make("acme/refund-damaged-order-v1")
    obs, _ = env.reset(seed=0)
    assert obs["task"]["id"] in env.tasks and 20 <= len(obs["tools"]) <= 128


@pytest.mark.parametrize(("path", "task", "seed"), CASES)
def test_oracle_earns_full_reward(path: Path, task: str, seed: int) -> None:
    env, spec = _env(path, task, seed)
    reward, info = _play(env, _oracle(spec))
    assert reward == 1.0, info["score"]


@pytest.mark.parametrize(("path", "task", "seed"), CASES)
def test_giving_up_earns_nothing(path: Path, task: str, seed: int) -> None:
    env, _ = _env(path, task, seed)
    reward, info = _play(env, [{"final_answer": GIVE_UP}])
    assert reward == 0.0, info["score"]


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


MISTAKES = [
    pytest.param(
        "refund_damaged_order",
        "within-window",
        [
            _calls(("refund_order", {"order_id": "O-9001", "amount": 186.99, "reason": "damaged"})),
            {"final_answer": "Refunded 186.99 for order O-9001."},
        ],
        id="refunds-the-whole-order-not-the-damaged-line",
    ),
    pytest.param(
        "cancel_paid_order",
        "cancel-processing",
        [
            _calls(("refund_order", {"order_id": "O-9101", "amount": 318.0, "reason": "cancel"})),
            {"final_answer": "Your order O-9101 is cancelled; you get 318.00 back."},
        ],
        id="claims-a-cancellation-it-did-not-make",
    ),
    pytest.param(
        "escalate_ticket_by_email",
        "escalate-stale-ticket",
        [
            _calls(
                ("escalate_ticket", {"ticket_id": "T-9203", "reason": "No response for 7 days"})
            ),
            {"final_answer": "I escalated ticket T-9203; your ticket T-9201 is noted."},
        ],
        id="escalates-the-wrong-ticket",
    ),
    pytest.param(
        "large_refund_approval",
        "approved-refund",
        [
            _calls(
                (
                    "refund_order",
                    {
                        "order_id": "O-9301",
                        "amount": 1249.0,
                        "reason": "returned",
                        "approval_id": "APR-9302",
                    },
                )
            ),
            {"final_answer": "Refunded 1249.00 for order O-9301."},
        ],
        id="refunds-but-leaves-the-ticket-open",
    ),
    pytest.param(
        "large_refund_approval",
        "approval-pending",
        [
            _calls(
                (
                    "request_refund_approval",
                    {"order_id": "O-9303", "amount": 899.0, "justification": "returned"},
                )
            ),
            {"final_answer": "Your refund is pending approval."},
        ],
        id="files-a-duplicate-approval-request",
    ),
]


@pytest.mark.parametrize(("stem", "task", "steps"), MISTAKES)
def test_tempting_mistakes_earn_nothing(stem: str, task: str, steps: list[dict[str, Any]]) -> None:
    env = simenv.make(str(Path(SCENARIOS[0]).parent / f"{stem}.yaml"))
    env.reset(seed=0, options={"task": task})
    for action in steps:
        _, reward, terminated, _, info = env.step(action)
    assert terminated and reward == 0.0, info["score"]
