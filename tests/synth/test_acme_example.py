"""The pack synthesized from the shipped example traces (``examples/traces/acme-otlp.json``,
no snapshot, most tools seen once or twice) is scorable: the source episode's own actions reach
reward 1 on at least 90% of gold tasks, and the no-op scores 0 on all of them; gold runs with
nothing that proves the work are left out and counted."""

from __future__ import annotations

from pathlib import Path

from simforge.env.core import SimforgeEnv
from simforge.policies.scripted import NOOP_ANSWER, oracle_actions
from simforge.scenario.registry import ScenarioRegistry
from simforge.synth.pipeline import synthesize

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces" / "acme-otlp.json"


def test_acme_example_pack_oracle_solves_gold_tasks_and_noop_fails(tmp_path: Path) -> None:
    report = synthesize([TRACES], tmp_path / "pack")
    # the 31 runs graded 1.0, less 3 without tool calls, less 5 that changed nothing and whose
    # answers state only what the agent was given (or nothing a tool result backs)
    assert report.gold_tasks == 23 and len(report.unproven) == 5
    loaded = ScenarioRegistry.load_path(tmp_path / "pack" / "scenario.yaml")
    env = SimforgeEnv(loaded)
    solved, noop_zero, gold = [], 0, 0
    for task in loaded.scenario.tasks:
        if not task.metadata.get("gold"):
            continue
        gold += 1
        env.reset(seed=0, options={"task": task.id})
        for action in oracle_actions(task):
            if env.session is not None and env.session.done:
                break
            env.step(action)
        if env.score().reward == 1.0:
            solved.append(task.id)
        env.reset(seed=0, options={"task": task.id})
        env.step({"final_answer": NOOP_ANSWER})
        noop = env.score()
        # 0, or ungraded where the task has nothing to check; never a pass
        noop_zero += noop.reward == 0.0 or (noop.invalid_reason or "").startswith("ungraded")
    assert gold == report.gold_tasks
    assert len(solved) >= 0.9 * gold, f"{len(solved)}/{gold}"
    assert noop_zero == gold
