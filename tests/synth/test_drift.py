"""Schema drift between trace generations: renamed fields, null versus absent, fields one
generation never had."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.synth.learn.schema_drift import learn_drift, learn_wording

from ..conftest import shared_data_dir


def _user(n: int, *, old: bool) -> dict:
    address = {"city": "Austin", ("province" if old else "state"): ["TX", "CA", "NY"][n % 3]}
    record = {"name": f"u{n}", "address": address, "status": None if n % 2 else "gold"}
    if old:
        record.pop("status") if record["status"] is None else None
    else:
        record["user_id"] = f"user_{n}"
    return record


def test_renames_null_versus_absent_and_fields_the_other_generation_never_had():
    ours = {"get_user": [_user(n, old=False) for n in range(8)]}
    theirs = {"get_user": [_user(n, old=True) for n in range(8, 14)]}
    drift = learn_drift(ours, theirs)
    assert drift.tools["get_user"] == {
        "": {"absent": ["user_id"], "absent_if_null": ["status"]},
        "address": {"renames": {"state": "province"}},
    }
    answer = {**_user(3, old=False)}
    assert drift.adapt("get_user", answer) == _user(3, old=True)
    # traces of the pack's own generation learn nothing
    assert not learn_drift(ours, {"get_user": [_user(n, old=False) for n in range(20, 26)]})


def test_error_wording_is_learned_word_by_word_apart_from_values_and_shared_between_tools():
    ours = ["Error: Payment amount does not add up, total price is 375, but paid 299"]
    theirs = [
        f"Error: payment amount does not add up, total price is {t}, but paid {p}"
        for t, p in ((375, 299), (1203, 833), (305, 255))
    ] + ["Error: not enough seats on flight HAT290"]
    words = learn_wording(ours, theirs)
    assert words == {"Payment": "payment"}
    drift = learn_drift({}, {})
    drift.words = words
    # the substitution applies to a refusal with values no trace showed, of any tool
    assert drift.adapt_error(
        "Error: Payment amount does not add up, total price is 7, but paid 3"
    ) == ("Error: payment amount does not add up, total price is 7, but paid 3")
    assert drift.adapt_error("Error: Payment method not found") == "Error: payment method not found"
    # too few distinct texts, texts that differ in values only, or in wording beyond one word
    # in four, learn nothing
    assert not learn_wording(ours, theirs[:2])
    assert not learn_wording(ours, [t.replace("payment", "Payment") for t in theirs])
    assert not learn_wording(
        ours, [t.replace("does not add up", "is wrong, sorry") for t in theirs]
    )
    # two messages of one generation that differ in a word are not a rename
    same = [f"Error: order #W{n} cannot be returned" for n in range(4)]
    assert not learn_wording(
        [*same, "Error: order #W9 cannot be exchanged"],
        [f"Error: order #W{n} cannot be exchanged" for n in range(4, 8)] + same,
    )
    # a word the other generation keeps in some aligned text is not renamed
    assert not learn_wording(
        [*ours, "Error: Payment method gift_card_1 not found"],
        [*theirs, "Error: Payment method gift_card_2 not found"],
    )


def test_a_write_seen_too_rarely_takes_what_the_reads_of_its_entity_showed():
    ours = {
        "get_user": [_user(n, old=False) for n in range(8)],
        "set_name": [_user(n, old=False) for n in range(8)],
    }
    theirs = {"get_user": [_user(n, old=True) for n in range(8)], "set_name": [_user(9, old=True)]}
    drift = learn_drift(ours, theirs, {"get_user": "User", "set_name": "User"})
    assert drift.tools["set_name"][""]["absent"] == ["user_id"]


@pytest.mark.slow
def test_a_tau2_airline_pack_answers_the_older_tau_bench_trajectories(tmp_path):
    """The tau-bench gpt-4o trajectories were recorded against an older schema (``province``
    for ``state``, absent for null); a pack learned from the tau2 traces and the current
    snapshot answers them once the drift is learned (figures in FIDELITY.md)."""
    from simforge.audit.fidelity import fidelity
    from simforge.synth.pipeline import synthesize

    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    traces = shared / "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
    older = shared / "tau-bench/historical_trajectories/gpt-4o-airline.json"
    out = Path(tmp_path) / "pack"
    synthesize([traces], out, data=[shared / "tau-bench/envs/airline/data"])
    plain = fidelity(out, [older], drift=False)
    shapes = fidelity(out, [older], behaviour=False)
    result = fidelity(out, [older])
    # shapes and wording alone (every older episode taught them; no answers)
    assert shapes["reads"]["rate"] >= 0.84 and shapes["writes"]["rate"] >= 0.62
    assert "drift_behaviour" not in shapes
    assert result["drift"]["get_user_details"]["address"] == {"renames": {"state": "province"}}
    assert plain["reads"]["rate"] < 0.2
    by_tool = result["by_tool"]
    assert by_tool["get_user_details"]["reads"]["rate"] == 1.0
    # one reservation the tau2 traces show changed since the older trajectories: 376 of 377
    assert by_tool["get_reservation_details"]["reads"]["rate"] >= 0.99
    # the targets (reads >= 0.90, writes >= 0.70), each half of the older tasks measured
    # with the behaviour the other half taught: `think` answers "" (92 calls; the tau2 traces
    # neither call nor declare it), and the older update_reservation_flights keeps the cabin
    for learned in result["drift_behaviour"].values():
        assert learned["constant"] == {"think": ""}
        assert learned["kept"] == {"update_reservation_flights": {"Reservation": ["cabin"]}}
    assert by_tool["think"]["reads"]["rate"] == 1.0
    assert result["reads"]["rate"] >= 0.94 and result["writes"]["rate"] >= 0.84
    # the older refusals write "payment amount" where tau2 writes "Payment amount": learned
    # from the wording of both generations, the payment refusals the pack makes match
    assert result["drift_words"] == {"Payment": "payment"}
    assert plain["errors"]["exact"] == 0
    assert by_tool["book_reservation"]["errors"]["exact"] >= 12


def _older(row: dict) -> dict:
    """A row as an older generation showed it: ``customer_id`` for ``user_id``."""
    out = {k: v for k, v in row.items() if k != "user_id"}
    return {**out, "customer_id": row["user_id"]}


def test_behaviour_of_another_generation_is_learned_from_the_other_half_of_its_tasks(shop_pack):
    """An older generation's ``cancel_order`` refunded but left ``status`` as it was, and its
    agents called ``think`` (answered ``""``), a tool the pack has none of. Each half of the
    older tasks is measured with what the other half taught: the kept field (restored in the
    world too, so the read after the cancel agrees) and the missing tool's constant answer."""
    from simforge.audit.fidelity import FOLDS, _fold, fidelity
    from simforge.synth.learn.schema_drift import BehaviourVotes

    from .conftest import _cancelled, _order, episode

    older = []
    for n in range(1, 21, 2):
        oid, reason = f"#W{n}", "no longer needed"
        kept = {**_cancelled(oid, reason), "status": "pending"}
        ep = episode(
            100 + n,
            [
                ("think", {"thought": f"cancel {oid}"}, "", None),
                ("get_order", {"order_id": oid}, _older(_order(oid)), None),
                ("cancel_order", {"order_id": oid, "reason": reason}, _older(kept), None),
                ("get_order", {"order_id": oid}, _older(kept), None),
            ],
        )
        ep.task.id = f"old-{n}"
        older.append(ep)
    assert {_fold(e) for e in older} == set(range(FOLDS))
    plain = fidelity(shop_pack, episodes=older, drift=False)
    result = fidelity(shop_pack, episodes=older)
    assert result["drift"]["get_order"][""] == {"renames": {"user_id": "customer_id"}}
    for learned in result["drift_behaviour"].values():
        assert learned == {
            "kept": {"cancel_order": {"Order": ["status"]}},
            "constant": {"think": ""},
        }
    assert plain["reads"]["exact"] == 0 and plain["writes"]["exact"] == 0
    assert result["reads"]["rate"] == 1.0 and result["writes"]["rate"] == 1.0

    # evidence: a field some answer shows changed is not kept; a tool that once refused, or
    # answers otherwise, has no constant answer; too few calls teach nothing
    votes = BehaviourVotes()
    for _ in range(3):
        votes.write("w", "E", {"a": (1, 2), "b": (1, 2)}, {"a": 2, "b": 2}, {"a": 1, "b": 1})
        votes.unknown("t", "", None)
        votes.unknown("u", "x", None)
    votes.write("w", "E", {"b": (1, 2)}, {"b": 2}, {"b": 2})
    votes.unknown("u", "y", None)
    assert votes.learn().kept == {"w": {"E": ["a"]}}
    assert votes.learn().constant == {"t": ""}
    votes.unknown("t", None, "Error: unknown tool")
    assert not votes.learn().constant
    assert not BehaviourVotes().learn()
