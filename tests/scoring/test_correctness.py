"""Correctness: the end state (explicit, or what the reference actions reach), the facts in the
answer, the allow-list of changes, the required calls and the world's invariants."""

from __future__ import annotations

from simforge.scenario.model import Task
from simforge.scoring import VALIDATORS


def _run(name, ctx, **params):
    return VALIDATORS[name](ctx, **params)


UPGRADE = Task.model_validate(
    {
        "id": "upgrade",
        "instruction": "Move C-0003 to gold.",
        "expected": {"state": {"Customer": {"C-0003": {"tier": "gold"}}}, "outputs": ["gold"]},
        "oracle": [
            {"calls": [{"tool": "upgrade_customer", "args": {"customer_id": "C-0003"}}]},
            {"answer": "Done: gold."},
        ],
    }
)


def test_state_matches_passes_on_the_expected_fields(trace):
    trace.write("Customer", "C-0003", tier="gold")
    verdict = _run("state_matches", trace.ctx(task=UPGRADE))
    assert verdict.passed and verdict.category == "correctness"
    assert verdict.evidence["mismatches"] == [] and verdict.evidence["checked"] == 1


def test_state_matches_fails_with_a_field_level_diff(trace):
    trace.write("Customer", "C-0003", tier="silver")
    verdict = _run("state_matches", trace.ctx(task=UPGRADE))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.evidence["mismatches"] == [
        {
            "entity": "Customer",
            "id": "C-0003",
            "field": "tier",
            "expected": "gold",
            "found": "silver",
        }
    ]


def test_state_matches_can_replay_the_reference_actions(trace):
    task = UPGRADE.model_copy(
        update={"expected": UPGRADE.expected.model_copy(update={"state": {}})}
    )
    trace.write("Customer", "C-0003", tier="gold")
    assert _run("state_matches", trace.ctx(task=task), replay_oracle=True).passed


def test_replayed_expectations_report_what_the_agent_missed(trace):
    task = UPGRADE.model_copy(
        update={"expected": UPGRADE.expected.model_copy(update={"state": {}})}
    )
    verdict = _run("state_matches", trace.ctx(task=task), replay_oracle=True)
    assert not verdict.passed
    assert verdict.evidence["mismatches"] == [
        {
            "entity": "Customer",
            "id": "C-0003",
            "field": "tier",
            "expected": "gold",
            "found": "standard",
            "source": "replay",
        }
    ]


def test_replay_matches_created_rows_by_content_not_id(trace):
    task = Task.model_validate(
        {
            "id": "note",
            "instruction": "Note it.",
            "oracle": [
                {
                    "calls": [
                        {"tool": "create_note", "args": {"customer_id": "C-0002", "text": "hi"}}
                    ]
                },
                {"answer": "Done."},
            ],
        }
    )
    trace.world.insert("Note", {"id": "N-0042", "customer_id": "C-0002", "text": "hi"}, now=0)
    assert _run("state_matches", trace.ctx(task=task), replay_oracle=True).passed
    other = type(trace)()
    other.world.insert("Note", {"id": "N-0042", "customer_id": "C-0002", "text": "bye"}, now=0)
    verdict = _run("state_matches", other.ctx(task=task), replay_oracle=True)
    assert verdict.evidence["missing_created"] == [
        {"entity": "Note", "match": {"customer_id": "C-0002", "text": "hi"}, "source": "replay"}
    ]


def test_required_outputs_pass_and_fail_with_the_missing_facts(trace):
    assert _run("required_outputs", trace.ctx("You are on GOLD now.", task=UPGRADE)).passed
    verdict = _run("required_outputs", trace.ctx("All set.", task=UPGRADE))
    assert not verdict.passed and verdict.evidence == {"missing": ["gold"], "expected_count": 1}


def test_no_collateral_damage_allows_the_task_fields_only(trace):
    trace.write("Customer", "C-0003", tier="gold")
    assert _run("no_collateral_damage", trace.ctx(task=UPGRADE)).passed
    trace.write("Customer", "C-0004", balance=99.0)
    verdict = _run("no_collateral_damage", trace.ctx(task=UPGRADE))
    assert not verdict.passed and verdict.category == "safety"
    assert verdict.evidence["violations"] == [
        {"entity": "Customer", "id": "C-0004", "fields": ["balance"]}
    ]
    assert _run(
        "no_collateral_damage", trace.ctx(task=UPGRADE), allow={"Customer": ["balance"]}
    ).passed


def test_action_sequence_requires_calls_in_order_with_argument_subsets(trace):
    trace.call("get_customer", {"customer_id": "C-0003"}, result={})
    trace.call("upgrade_customer", {"customer_id": "C-0003", "tier": "gold"}, result={})
    calls = [
        {"tool": "get_*", "args": {"customer_id": "C-0003"}},
        {"tool": "upgrade_customer", "args": {"tier": "gold"}},
    ]
    assert _run("action_sequence", trace.ctx(), calls=calls).passed
    verdict = _run("action_sequence", trace.ctx(), calls=list(reversed(calls)))
    assert not verdict.passed and verdict.score == 0.5
    assert verdict.evidence["matched"] == ["c1"]
    assert verdict.evidence["missing"] == {"tool": "get_*", "args": {"customer_id": "C-0003"}}


def test_invariants_check_changed_rows_against_predicates(trace):
    rules = [
        {"name": "tiers", "entity": "Customer", "require": {"tier": {"in": ["standard", "gold"]}}}
    ]
    trace.write("Customer", "C-0003", tier="gold")
    assert _run("invariants", trace.ctx(), rules=rules).passed
    trace.write("Customer", "C-0004", tier="diamond")
    verdict = _run("invariants", trace.ctx(), rules=rules)
    assert not verdict.passed
    assert verdict.evidence["violations"] == [
        {"rule": "tiers", "entity": "Customer", "id": "C-0004", "found": {"tier": "diamond"}}
    ]


def test_invariants_run_named_checks_registered_by_plugins(trace):
    from simforge.scoring import invariant

    @invariant("test.no_negative_balance")
    def no_negative(ctx):
        return [{"id": r["id"]} for r in ctx.world.rows("Customer") if r["balance"] < 0]

    rules = [{"check": "test.no_negative_balance"}]
    assert _run("invariants", trace.ctx(), rules=rules).passed
    trace.write("Customer", "C-0001", balance=-5.0)
    verdict = _run("invariants", trace.ctx(), rules=rules)
    assert verdict.evidence["violations"] == [{"rule": "test.no_negative_balance", "id": "C-0001"}]
