"""Synthesis from generic traces: records keyed by a bare ``id``, no snapshot, each tool seen
once or twice. Entities are named from arguments, tool names and nesting keys; write effects are
learned from one observation of the returned record; read-only tasks expect the facts of their
answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import yaml

from simforge.audit.fidelity import replay_gold
from simforge.synth.entities.bare_ids import discover, prefix_of, singular_noun
from simforge.synth.entities.catalog import EntityCatalog
from simforge.synth.learn.timing import error_model
from simforge.synth.pack.files import read_json
from simforge.synth.pipeline import synthesize
from simforge.synth.tasks.answer_facts import required_outputs
from simforge.trace import iter_episodes
from simforge.trace.episode import Episode, Message

from .conftest import episode

TK101 = {"id": "TK-101", "status": "open", "priority": "low", "customer_id": "CU-101"}
TK102 = {"id": "TK-102", "status": "open", "priority": "low", "customer_id": "CU-102"}
TK103 = {"id": "TK-103", "status": "open", "priority": "normal", "customer_id": "CU-102"}
CU101 = {"id": "CU-101", "name": "Ada Byron", "balance": 1249.5}


def _ep(n: int, calls: list[Any], answer: str, success: bool = True) -> Episode:
    ep = episode(n, calls, success)
    ep.messages[-1] = Message(role="assistant", content=answer, timestamp=ep.messages[-1].timestamp)
    return ep


def helpdesk() -> list[Episode]:
    closed = {**TK101, "status": "closed", "resolution": "fixed the printer"}
    survey = {"id": "SV-501", "ticket_id": "TK-101", "status": "sent"}
    return [
        _ep(
            1,
            [
                ("get_ticket", {"ticket_id": "TK-101"}, TK101, None),
                (
                    "close_ticket",
                    {"ticket_id": "TK-101", "resolution": "fixed the printer"},
                    {"ticket": closed, "survey": survey},
                    None,
                ),
            ],
            "Closed TK-101; survey SV-501 is on its way.",
        ),
        _ep(
            2,
            [
                ("list_tickets", {"customer_id": "CU-102"}, {"items": [TK102, TK103]}, None),
                ("escalate_ticket", {"ticket_id": "TK-102"}, {**TK102, "priority": "high"}, None),
            ],
            "TK-102 is now high priority.",
        ),
        _ep(
            3,
            [("get_customer", {"customer_id": "CU-101"}, CU101, None)],
            "Ada's balance is 1,249.50 on account CU-101; that is all for today.",
        ),
        _ep(
            4,
            [
                (
                    "open_ticket",
                    {"customer_id": "CU-101", "subject": "VPN down"},
                    {"id": "TK-900", "status": "open", "priority": "low", "customer_id": "CU-101"},
                    None,
                )
            ],
            "Opened TK-900.",
        ),
        _ep(
            5,
            [("escalate_ticket", {"ticket_id": "TK-103"}, {**TK103, "priority": "high"}, None)],
            "Escalated TK-103.",
            success=False,
        ),
    ]


def test_entities_are_named_from_arguments_tools_and_nesting_keys() -> None:
    catalog = EntityCatalog()
    names = discover(helpdesk(), catalog)
    assert sorted(names.values()) == ["Customer", "Survey", "Ticket"]
    assert catalog.entities["Ticket"].pk == "id"
    assert catalog.kind_of({"id": "TK-555", "status": "open"}) is catalog.entities["Ticket"]
    assert prefix_of("AST-09401") == "AST-" and prefix_of("3f2a-uuid") is None
    assert [singular_noun(w) for w in ("warehouses", "addresses", "statuses", "policies")] == [
        "warehouse",
        "address",
        "status",
        "policy",
    ]


def test_pack_seeds_every_observed_record_and_learns_writes_from_one_call(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    synthesize([], out, episodes=helpdesk())
    world = read_json(out / "world.json.gz")
    assert {r["id"] for r in world["Ticket"]} == {"TK-101", "TK-102", "TK-103"}  # listed too
    assert "Survey" not in world or not world["Survey"]  # made by a write: not in the seed
    tools = {t["spec"]["name"]: t["handler"] for t in read_json(out / "tools.json")}
    close = tools["close_ticket"]
    assert (close["kind"], close["entity"], close["key"]) == ("update", "Ticket", "ticket_id")
    assert close["effects"] == {
        "status": {"c": "closed"},
        "resolution": {"p": ["args", "resolution"]},
    }
    assert close["returns"] == "replay"  # the row is nested in a larger answer
    survey = close["creates"][0]
    assert survey["entity"] == "Survey"
    assert survey["fields"]["ticket_id"] == {"p": ["args", "ticket_id"]}
    assert tools["escalate_ticket"]["effects"] == {"priority": {"c": "high"}}
    opened = tools["open_ticket"]
    assert (opened["kind"], opened["entity"]) == ("create", "Ticket")
    assert opened["fields"]["customer_id"] == {"p": ["args", "customer_id"]}


def test_gold_tasks_are_checkable_and_failed_sources_are_not_gold(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    synthesize([], out, episodes=helpdesk())
    tasks = yaml.safe_load((out / "scenario.yaml").read_text())["tasks"]
    close, escalate, read, opened = tasks
    # the failed episode is marked, and kept out of the training tasks
    (failed,) = yaml.safe_load((out / "scenario-nongold.yaml").read_text())["tasks"]
    assert close["expected"]["state"] == {
        "Ticket": {"TK-101": {"status": "closed", "resolution": "fixed the printer"}}
    }
    assert close["expected"]["created"][0]["entity"] == "Survey"
    assert escalate["expected"]["state"] == {"Ticket": {"TK-102": {"priority": "high"}}}
    assert read["expected"] == {"outputs": ["1,249.50", "CU-101"]}
    assert opened["expected"]["created"][0]["match"]["customer_id"] == "CU-101"
    assert failed["metadata"]["gold"] is False and failed["expected"] == {}
    gold = replay_gold(out)
    assert gold["passed"] == gold["tasks"] == 4, gold
    kept = tmp_path / "kept"
    synthesize([], kept, episodes=helpdesk(), keep_nongold=True)
    assert len(yaml.safe_load((kept / "scenario.yaml").read_text())["tasks"]) == 5
    assert not (kept / "scenario-nongold.yaml").exists()


def test_required_outputs_are_distinctive_facts_backed_by_results() -> None:
    ep = _ep(
        7,
        [("get_invoice", {"invoice_id": "INV-0042"}, {"id": "INV-0042", "amount": 318.0}, None)],
        "Invoice INV-0042 is for 318.00, due in 5 days; reference ZX-99 is unrelated.",
    )
    # INV-0042 was said by the user, 318.00 comes from the result, 5 is a small count and
    # ZX-99 is backed by nothing
    ep.messages[0] = Message(role="user", content="What do I owe on INV-0042?", timestamp=0.0)
    assert required_outputs(ep) == ["318.00"]
    only_said = _ep(8, [("get_invoice", {"invoice_id": "INV-0042"}, {"id": "INV-0042"}, None)], "")
    only_said.messages[-1] = Message(role="assistant", content="INV-0042 is paid.")
    only_said.messages[0] = Message(role="user", content="Is INV-0042 paid?")
    # the user's own id proves nothing, even when nothing else is left
    assert required_outputs(only_said) == []


def test_an_error_seen_once_is_not_a_tool_that_always_fails() -> None:
    assert error_model({"service temporarily unavailable": 1}, 1).rate == 1 / 11
    assert error_model({"Order not found": 3}, 3).rate == 0.0


def _otlp(event: dict[str, Any] | None, status: int) -> dict[str, Any]:
    def attr(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, float):
            return {"key": key, "value": {"doubleValue": value}}
        return {"key": key, "value": {"stringValue": value}}

    root: dict[str, Any] = {
        "traceId": "a" * 32,
        "spanId": "b" * 16,
        "name": "invoke_agent helper",
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "3000000000",
        "attributes": [attr("gen_ai.operation.name", "invoke_agent")],
        "status": {"code": status},
    }
    if event is not None:
        root["events"] = [
            {
                "timeUnixNano": "3000000000",
                "name": "gen_ai.evaluation.result",
                "attributes": [attr(k, v) for k, v in event.items()],
            }
        ]
    tool = {
        "traceId": "a" * 32,
        "spanId": "c" * 16,
        "parentSpanId": "b" * 16,
        "name": "execute_tool get_ticket",
        "startTimeUnixNano": "1500000000",
        "endTimeUnixNano": "1600000000",
        "attributes": [
            attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", "get_ticket"),
            attr("gen_ai.tool.call.arguments", json.dumps({"ticket_id": "TK-101"})),
            attr("gen_ai.tool.call.result", json.dumps(TK101)),
        ],
        "status": {"code": 1},
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [root, tool]}]}]}


def test_otlp_reads_the_evaluation_event_as_the_outcome(tmp_path: Path) -> None:
    cases = [
        ({"gen_ai.evaluation.score.value": 0.5, "gen_ai.evaluation.score.label": "fail"}, 1),
        ({"gen_ai.evaluation.score.value": 1.0, "gen_ai.evaluation.score.label": "pass"}, 1),
        (None, 2),
    ]
    outcomes = []
    for i, (event, status) in enumerate(cases):
        path = tmp_path / f"t{i}.json"
        path.write_bytes(orjson.dumps(_otlp(event, status)))
        (ep,) = iter_episodes([path])
        outcomes.append((ep.outcome.reward, ep.outcome.success))
    assert outcomes == [(0.5, False), (1.0, True), (None, False)]
