"""The audit rejects each kind of broken environment, naming the check and the reason, and
keeps the shipped scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simforge.audit import AuditConfig, audit_task
from simforge.cli import app
from simforge.scenario.registry import ScenarioRegistry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIG = AuditConfig(seeds=2, fault_seeds=6)

GOOD = f"""
id: broken/close-v1
pack: {FIXTURES / "packs" / "broken"}
think_time: {{kind: constant, seconds: 1.0}}
budgets: {{max_steps: 8, max_sim_seconds: 600}}
tasks:
  - id: close
    instruction: Close ticket K-0002 and say which one you closed.
    expected:
      state: {{Ticket: {{K-0002: {{status: closed}}}}}}
      outputs: ["K-0002"]
    oracle:
      - calls: [{{tool: close_ticket, args: {{ticket_id: K-0002}}}}]
      - answer: Closed K-0002.
"""


def audit_of(tmp_path: Path, text: str, check: str) -> list[str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    loaded = ScenarioRegistry.load_path(path)
    result = audit_task(loaded, loaded.scenario.tasks[0].id, CONFIG, [check])
    (only,) = result.results
    assert only.check == check
    return only.reasons


def test_a_sound_task_passes_every_check(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(GOOD)
    loaded = ScenarioRegistry.load_path(path)
    result = audit_task(loaded, "close", CONFIG)
    assert result.kept, [(r.check, r.reasons) for r in result.results if not r.passed]


def test_an_unsolvable_task_is_rejected(tmp_path):
    broken = GOOD.replace("{ticket_id: K-0002}}]", "{ticket_id: K-0003}}]")
    reasons = audit_of(tmp_path, broken, "solvable")
    assert reasons and "oracle scored 0.0" in reasons[0] and "state_matches" in reasons[0]


def test_a_task_the_noop_passes_is_rejected(tmp_path):
    trivial = GOOD.replace("status: closed", "status: open").replace(
        'outputs: ["K-0002"]', "outputs: []"
    )
    reasons = audit_of(tmp_path, trivial, "floor_gap")
    assert reasons == ["noop scores 1.00 on average; the gap to 1.0 is under 0.5"]


def test_a_nondeterministic_handler_is_rejected(tmp_path):
    flaky = GOOD.replace(
        "      - calls: [{tool: close_ticket",
        "      - calls: [{tool: ticket_age, args: {ticket_id: K-0002}}]\n      - calls: [{tool: close_ticket",
    )
    reasons = audit_of(tmp_path, flaky, "determinism")
    assert any("two different trajectories" in r for r in reasons)


def test_a_tool_error_that_leaks_the_expected_answer_is_rejected(tmp_path):
    leaky = GOOD.replace('outputs: ["K-0002"]', 'outputs: ["K-0002", "RC-40417"]').replace(
        "      - answer: Closed K-0002.",
        "      - calls: [{tool: lookup_code, args: {ticket_id: K-0002}}]\n      - answer: Closed K-0002, code RC-40417.",
    )
    reasons = audit_of(tmp_path, leaky, "leak_free")
    assert any("'RC-40417'" in r and "lookup_code" in r for r in reasons)


def test_a_fault_that_never_fires_is_rejected(tmp_path):
    never = (
        GOOD
        + """faults:
  profiles: [none, late-chaos]
  custom:
    - name: late-chaos
      rules:
        - id: after-the-end
          fault: {kind: error_status, status: 503}
          when: {start: 100000}
          probability: 0.5
"""
    )
    reasons = audit_of(tmp_path, never, "fault_sanity")
    assert reasons == [
        "late-chaos: rule 'after-the-end' never fires: its window never opens during the episodes"
    ]


def test_a_profile_declared_solvable_that_is_not_is_rejected(tmp_path):
    hard = (
        GOOD
        + """faults:
  profiles: [none, lost-writes]
  custom:
    - name: lost-writes
      rules:
        - id: noop-writes
          fault: {kind: silent_noop}
          probability: 1.0
"""
    )
    reasons = audit_of(tmp_path, hard, "fault_sanity")
    assert reasons and "a retrying oracle does not solve the task under 'lost-writes'" in reasons[0]


def test_a_reward_out_of_range_is_rejected(tmp_path):
    skewed = (
        GOOD
        + "rubric: {correctness: weighted_mean, weights: {state_matches: 2.0, required_outputs: -1.0}}\n"
    )
    reasons = audit_of(tmp_path, skewed, "reward_well_formed")
    assert any("outside [0, 1]" in r for r in reasons)


def test_the_gymnasium_adapter_check_runs(tmp_path):
    assert audit_of(tmp_path, GOOD, "gymnasium") == []


@pytest.mark.slow
def test_every_shipped_scenario_passes_the_audit():
    result = CliRunner().invoke(
        app, ["audit", "all", "--json", "--seeds", "2", "--fault-seeds", "6", "--fail-on-reject"]
    )
    data = json.loads(result.stdout)
    assert result.exit_code == 0, data["rejections"]
    assert data["tasks"] >= 9 and data["rejected"] == 0


def test_cli_json_shape_and_exit_code(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(GOOD.replace("{ticket_id: K-0002}}]", "{ticket_id: K-0003}}]"))
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["audit", str(path), "--json", "--seeds", "1", "--check", "solvable", "--fail-on-reject"],
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert set(data) == {"tasks", "kept", "rejected", "by_check", "rejections"}
    assert data["by_check"] == {"solvable": {"passed": 0, "failed": 1}}
    assert data["rejections"][0]["task"] == "broken/close-v1#close"
    html = tmp_path / "audit.html"
    runner.invoke(
        app, ["audit", str(path), "--seeds", "1", "--check", "solvable", "--html", str(html)]
    )
    assert "reject" in html.read_text() and "<script" not in html.read_text()
