"""A synthesized task is not paid for saying back what the agent was given: the facts its answer
must state are ones only the work turns up, never ones in the instruction, the user's words or
brief, the tools or the policy; a task with nothing else to prove the work is left out and
counted, not shipped to pay the audit's parrot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from simforge.env.core import SimforgeEnv
from simforge.policies.adversaries import ADVERSARIES
from simforge.policies.scripted import oracle_actions
from simforge.runs.episode import run_episode
from simforge.scenario.registry import ScenarioRegistry
from simforge.synth.pipeline import synthesize
from simforge.trace.episode import Episode, Message

from .conftest import episode

INVOICE = {"id": "INV-0042", "customer_id": "CU-101", "amount": 1249.5, "status": "open"}
TICKET = {"id": "TK-101", "status": "open", "customer_id": "CU-101"}
POLICY = "Invoices over 5,000.00 need a second approver; reference PLC-7781 in every reply."


def _said(n: int, calls: list[Any], ask: str, answer: str) -> Episode:
    ep = episode(n, calls)
    ep.messages[0] = Message(role="user", content=ask, timestamp=ep.messages[0].timestamp)
    ep.messages[-1] = Message(role="assistant", content=answer, timestamp=ep.messages[-1].timestamp)
    ep.metadata["policy"] = POLICY
    return ep


def episodes() -> list[Episode]:
    read = ("get_invoice", {"invoice_id": "INV-0042"}, INVOICE, None)
    briefed = _said(3, [read], "Hi, a question about my invoice.",
                    "INV-0042 is open; it is for 1,249.50.")
    briefed.task.metadata["user_scenario"] = {
        "instructions": {"known_info": "Your invoice is INV-0042.", "reason_for_call": "."}
    }
    return [
        # the id is the user's own: the amount is what the lookup turned up
        _said(1, [read], "What do I owe on INV-0042?", "INV-0042 is for 1,249.50."),
        # every fact of the answer is the user's: nothing proves the work
        _said(2, [read], "Is INV-0042 still open?", "Yes, INV-0042 is still open."),
        # the id is in the brief the simulated user speaks from
        briefed,
        # the policy's reference is shown to every agent; the ticket's owner is not
        _said(4, [("get_ticket", {"ticket_id": "TK-101"}, {**TICKET, "ref": "PLC-7781"}, None)],
              "Who raised TK-101?", "TK-101 was raised by CU-101 (PLC-7781)."),
    ]


def test_facts_the_agent_is_given_are_not_required_and_an_unproven_task_is_left_out(
    tmp_path: Path,
) -> None:
    report = synthesize([], tmp_path / "pack", episodes=episodes())
    tasks = {
        t["metadata"]["episode_id"]: t
        for t in yaml.safe_load((tmp_path / "pack" / "scenario.yaml").read_text())["tasks"]
    }
    assert tasks["ep-1"]["expected"] == {"outputs": ["1,249.50"]}
    assert tasks["ep-3"]["expected"] == {"outputs": ["1,249.50"]}
    assert tasks["ep-4"]["expected"] == {"outputs": ["CU-101"]}
    assert "ep-2" not in tasks
    (left_out,) = report.unproven
    assert left_out["task"].startswith("ep00001") and left_out["episode"] == "ep-2"
    assert "given to the agent" in left_out["why"] and "INV-0042" in left_out["why"]
    stats = yaml.safe_load((tmp_path / "pack" / "pack.yaml").read_text())["stats"]
    assert stats["unproven"] == report.unproven
    assert report.tasks == len(tasks) == 3


def test_a_parrot_is_not_paid_where_the_oracle_is(tmp_path: Path) -> None:
    """Before: ep-2's task required ``INV-0042``, which the parrot says back (reward 1.0)."""
    synthesize([], tmp_path / "pack", episodes=episodes())
    loaded = ScenarioRegistry.load_path(tmp_path / "pack" / "scenario.yaml")
    env = SimforgeEnv(loaded)
    for task in loaded.scenario.tasks:
        env.reset(seed=0, options={"task": task.id})
        for action in oracle_actions(task):
            env.step(action)
        assert env.score().reward == 1.0, task.id
        for name in ("parrot", "surface-probe", "canned-claim"):
            reward = run_episode(env, ADVERSARIES[name](), seed=0, task=task.id).reward
            assert reward == 0.0, (task.id, name, reward)


def test_a_write_the_seed_already_shows_is_checked_by_the_call(tmp_path: Path) -> None:
    """The only view of TK-101 is the close's own result, so the seed row is already closed
    and the state cannot prove the work; the call with what it names does (not its free text),
    and a task whose answer repeats the instruction is still graded."""
    closed = {**TICKET, "status": "closed", "resolution": "fixed the printer"}
    close = ("close_ticket", {"ticket_id": "TK-101", "resolution": "fixed the printer"}, closed,
             None)
    ep = _said(1, [close], "Please close TK-101, I fixed the printer.", "TK-101 is closed.")
    synthesize([], tmp_path / "pack", episodes=[ep])
    (task,) = yaml.safe_load((tmp_path / "pack" / "scenario.yaml").read_text())["tasks"]
    assert task["validators"] == [
        {"name": "action_sequence",
         "params": {"calls": [{"tool": "close_ticket", "args": {"ticket_id": "TK-101"}}]}}
    ]
    loaded = ScenarioRegistry.load_path(tmp_path / "pack" / "scenario.yaml")
    env = SimforgeEnv(loaded)
    env.reset(seed=0, options={"task": task["id"]})
    for action in oracle_actions(loaded.scenario.tasks[0]):
        env.step(action)
    assert env.score().reward == 1.0
    assert run_episode(env, ADVERSARIES["parrot"](), seed=0, task=task["id"]).reward == 0.0


@pytest.mark.slow
def test_the_audit_keeps_the_example_pack_and_no_adversary_earns_on_it(tmp_path: Path) -> None:
    """The pack synthesized from the shipped example traces, through the audit API: before,
    parrot and surface-probe earned 1.0 on 7 of its 28 tasks (their required facts were in the
    instruction); now every task it ships is kept and every adversary scores 0.0 on each."""
    from simforge.audit.context import AuditConfig
    from simforge.audit.runner import audit

    traces = Path(__file__).resolve().parents[2] / "examples" / "traces" / "acme-otlp.json"
    report = synthesize([traces], tmp_path / "pack")
    assert report.unproven
    assert all(u["why"].startswith("changed nothing observable") for u in report.unproven)
    loaded = ScenarioRegistry.load_path(tmp_path / "pack" / "scenario.yaml")
    audited = audit([loaded], AuditConfig(seeds=1, fault_seeds=2),
                    checks=["solvable", "adversaries"])
    assert len(audited.tasks) == report.tasks
    for task in audited.tasks:
        (adversaries,) = [r for r in task.results if r.check == "adversaries"]
        assert adversaries.passed, (task.task, adversaries.reasons)
        assert set(adversaries.details["rewards"]) == set(ADVERSARIES)
        assert all(r == 0.0 for r in adversaries.details["rewards"].values()), task.task
    assert all(task.kept for task in audited.tasks), [
        (t.task, [r.reasons for r in t.results if not r.passed]) for t in audited.tasks
        if not t.kept
    ]
