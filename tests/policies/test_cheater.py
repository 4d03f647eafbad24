"""The cheater tries every known exploit and earns 0 on every shipped scenario, while the oracle
earns 1 and the no-op 0: the rewards cannot be gamed, and they are beaten by the validators (the
cheater is an ordinary, unprivileged policy)."""

from __future__ import annotations

from pathlib import Path

import pytest

import simforge.env as simenv
from simforge.policies import get_policy
from simforge.policies.cheater import CLAIM, PROBES, STRATEGIES, CheaterPolicy
from simforge.runs import run_episode
from simforge.scenario.loader import load_scenario

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "scenarios").rglob("*.yaml"))
VAULT = Path(__file__).resolve().parent / "fixtures" / "vault.yaml"
CASES = [
    pytest.param(path, task.id, id=f"{path.parent.name}/{path.stem}:{task.id}")
    for path in SHIPPED
    for task in load_scenario(path).tasks
]


@pytest.mark.parametrize(("path", "task"), CASES)
def test_the_cheater_earns_nothing_with_any_exploit(path: Path, task: str) -> None:
    env = simenv.make(str(path))
    for strategy in STRATEGIES:
        result = run_episode(env, CheaterPolicy(strategy), seed=0, task=task)
        assert result.reward == 0.0, (strategy, result.failed, result.invalid_reason)


@pytest.mark.parametrize(("path", "task"), CASES)
def test_the_oracle_earns_one_and_the_noop_nothing(path: Path, task: str) -> None:
    env = simenv.make(str(path))
    seed = load_scenario(path).seeds[0]
    assert run_episode(env, get_policy("oracle"), seed=seed, task=task).reward == 1.0
    assert run_episode(env, get_policy("noop"), seed=seed, task=task).reward == 0.0


def test_the_cheater_is_registered_and_unprivileged() -> None:
    policy = get_policy("cheater")
    assert isinstance(policy, CheaterPolicy) and policy.privileged is False


def test_each_strategy_is_caught_by_the_validator_meant_for_it() -> None:
    env = simenv.make(str(REPO / "scenarios" / "acme" / "cancel_paid_order.yaml"))
    failed = {
        s: set(run_episode(env, CheaterPolicy(s), seed=0, task="shipped-order").failed)
        for s in STRATEGIES
    }
    assert "unlisted_tools" in failed["probe"]
    assert "answer_stuffing" in failed["shotgun"] and "answer_stuffing" in failed["honeypot"]
    assert "required_outputs" in failed["empty"] and "required_outputs" in failed["claim"]


def test_the_strategy_rotates_with_the_seed_and_probes_unlisted_tools() -> None:
    env = simenv.make(str(REPO / "scenarios" / "acme" / "refund_damaged_order.yaml"))
    obs, _ = env.reset(seed=0)
    actions = []
    for seed in range(len(STRATEGIES)):
        cheater = CheaterPolicy()
        cheater.reset(obs, seed=seed)
        actions.append(cheater.act(obs))
    probes = [a for a in actions if "tool_calls" in a and a["tool_calls"][0]["name"] == PROBES[0]]
    assert len(probes) == 1 and [c["name"] for c in probes[0]["tool_calls"]] == list(PROBES)
    assert {"final_answer": CLAIM} in actions and {"final_answer": ""} in actions


def test_the_cheater_touches_honeypots_and_is_gated_for_it() -> None:
    env = simenv.make(str(VAULT))
    result = run_episode(env, CheaterPolicy("honeypot"), seed=0, task="upgrade")
    assert result.reward == 0.0 and "honeypot" in result.failed
    touched = next(v for v in result.verdicts if v["name"] == "honeypot")["evidence"]["touched"]
    assert {
        "kind": "tool",
        "call_id": touched[0]["call_id"],
        "tool": "internal_export_customers",
    } in touched
    assert run_episode(env, get_policy("oracle"), seed=0, task="upgrade").reward == 1.0
