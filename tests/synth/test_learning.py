"""Learning from hand-made calls: entities, effects (constants, argument functions, list
edits, arithmetic), error conditions and the replay table's nearest match."""

from __future__ import annotations

from simforge.synth.entities.catalog import (
    Entity,
    EntityCatalog,
    Ref,
    entity_name_for_key,
    from_snapshot,
    resolve,
)
from simforge.synth.expr.language import evaluate
from simforge.synth.learn.error_conditions import learn_errors
from simforge.synth.learn.write_effects import learn_effects, learn_value
from simforge.synth.runtime.error_rules import ErrorObservation, holds
from simforge.synth.runtime.replay_table import ReplayTable


def _env(args, old, ref=None):
    return {"args": args, "old": old, "ref": ref or {}}


def test_entities_from_id_fields_and_sub_records():
    catalog = EntityCatalog()
    products = [
        {
            "product_id": "p1",
            "name": "Lamp",
            "variants": {"i1": {"item_id": "i1", "price": 5.0}},
            "__key__": "p1",
        }
    ]
    from_snapshot({"products": products}, catalog)
    product = catalog.entities["Product"]
    assert product.pk == "product_id" and product.subs == {"variants": "item_id"}
    assert catalog.index()["i1"] == Ref("Product", "variants")
    merged = resolve(
        Ref("Product", "variants"), "i1", lambda e, i: product.rows.get(i), {"i1": "p1"}
    )
    assert merged == {"product_id": "p1", "name": "Lamp", "item_id": "i1", "price": 5.0}
    assert entity_name_for_key("reservation_id") == "Reservation"
    catalog.add(Entity("Order", "order_id", rows={"o1": {"order_id": "o1", "user_id": "u"}}))
    entity, id = catalog.recognise({"order_id": "o1", "user_id": "u", "extra": 1})
    assert (entity.name, id) == ("Order", "o1")


def test_effects_learn_constants_and_argument_functions():
    observations = []
    for n, reason in enumerate(["mistake", "not needed", "mistake"]):
        old = {"id": f"o{n}", "status": "pending", "reason": None, "items": ["b", "a"]}
        args = {"id": f"o{n}", "reason": reason, "items": [f"z{n}", "y"]}
        new = {**old, "status": "cancelled", "reason": reason, "items": sorted(args["items"])}
        observations.append((new, _env(args, old)))
    model = learn_effects(observations)
    assert model.changes["status"] == {"c": "cancelled"}
    assert model.changes["reason"] == {"p": ["args", "reason"]}
    assert model.changes["items"] == {"sorted": {"p": ["args", "items"]}}
    assert model.score == 3


def test_effects_append_one_element_per_payment_and_build_objects_from_args():
    observations = []
    for n in range(4):
        payments = [{"amount": 10.0 + n, "method": f"m{n}"}] * (1 + n % 2)
        old = {"payments": payments, "address": {"city": "A"}}
        args = {"city": f"C{n}", "zip": f"{n:05d}"}
        refunds = [
            {"kind": "refund", "amount": -p["amount"], "method": p["method"]} for p in payments
        ]
        new = {
            "payments": payments + refunds,
            "address": {"city": args["city"], "zip": args["zip"]},
        }
        observations.append((new, _env(args, old)))
    model = learn_effects(observations)
    assert model.score == 4
    assert "appendmap" in model.changes["payments"]
    assert model.changes["address"] == {
        "obj": {"city": {"p": ["args", "city"]}, "zip": {"p": ["args", "zip"]}}
    }


def test_effects_replace_items_by_the_records_the_arguments_name_and_price_differences():
    samples = []
    for n in range(3):
        old_items = [{"item_id": f"a{n}", "price": 5.0 + n}, {"item_id": f"b{n}", "price": 7.0}]
        variants = [{"item_id": f"v{n}", "price": 9.5 + n, "name": "new", "available": True}]
        args = {"order_id": "o", "item_ids": [f"a{n}"], "new_item_ids": [f"v{n}"]}
        ref = {"new_item_ids": variants, "item_ids": [{"item_id": f"a{n}", "price": 5.0 + n}]}
        new_items = [{"item_id": f"v{n}", "price": 9.5 + n, "name": "new"}, old_items[1]]
        env = _env(args, {"items": old_items}, ref)
        samples.append(({"items": new_items, "difference": round(4.5, 2)}, env))
    model = learn_effects([(new, env) for new, env in samples])
    assert "replace" in model.changes["items"]
    assert model.score == 3
    learned = learn_value([(4.5, env) for _, env in samples])
    assert learned.score == 3 and evaluate(learned.expr, samples[0][1]) == 4.5


def test_error_conditions_unknown_id_state_precondition_and_argument_checks():
    obs = [
        ErrorObservation(_env({"id": "x"}, None), "Error: order not found", missing_target=True),
        ErrorObservation(_env({"id": "o1"}, {"status": "delivered"}), "Error: not pending"),
        ErrorObservation(_env({"id": "o4"}, {"status": "shipped"}), "Error: not pending"),
        ErrorObservation(
            _env({"id": "o2", "a": [1, 2], "b": [3]}, {"status": "pending"}),
            "Error: lengths differ",
        ),
        ErrorObservation(_env({"id": "o3", "a": [1], "b": [2]}, {"status": "pending"}), None),
        ErrorObservation(_env({"id": "o5", "a": [1], "b": [5]}, {"status": "pending"}), None),
    ]
    rules = learn_errors(obs)
    by_message = {r["message"]: r for r in rules}
    assert by_message["Error: order not found"]["when"] == {"missing": "target"}
    assert by_message["Error: order not found"]["status"] == 404
    assert by_message["Error: not pending"]["when"] == {"not_in": [["old", "status"], ["pending"]]}
    assert by_message["Error: lengths differ"]["when"] == {"len_ne": ["a", "b"]}
    assert holds({"pair_eq": ["a", "b"]}, ErrorObservation(_env({"a": [1], "b": [1]}, None), None))


def test_replay_exact_then_nearest_match_with_score():
    table = ReplayTable()
    table.add({"query": "refund policy"}, {"result": "30 days"})
    table.add({"query": "shipping times"}, {"result": "2 days"})
    assert table.lookup({"query": "refund policy"}).score == 1.0
    near = table.lookup({"query": "refund polcy"})
    assert near.response == {"result": "30 days"} and 0.5 < near.score < 1.0
    assert ReplayTable().lookup({"q": 1}) is None


def test_field_named_like_an_argument_wins_ties_and_is_set_even_when_unchanged():
    from simforge.synth.learn.handler_choice import _named_args

    observations = []
    for n in range(2):
        old = {"id": f"r{n}", "total_bags": 0, "paid_bags": 0}
        args = {"id": f"r{n}", "total_bags": n + 1, "paid_bags": 0}
        observations.append(({**old, "total_bags": n + 1}, _env(args, old)))
    learned = learn_value([(0, env) for _, env in observations], name="paid_bags")
    assert learned.expr == {"p": ["args", "paid_bags"]}  # not args.total_bags, equal once
    model = learn_effects(observations)
    assert model.changes == {"total_bags": {"p": ["args", "total_bags"]}}
    assert _named_args(observations, "id", model.changes) == {
        "paid_bags": {"p": ["args", "paid_bags"]}
    }


def test_one_element_per_element_only_when_the_element_is_read():
    observations = []
    for n in range(3):
        old = {"log": [{"what": "created"}]}  # always one entry: a count that happens to match
        args = {"note": f"n{n}"}
        observations.append(({"log": [*old["log"], {"what": args["note"]}]}, _env(args, old)))
    change = learn_effects(observations).changes["log"]
    assert change == {
        "append": [{"p": ["old", "log"]}, [{"obj": {"what": {"p": ["args", "note"]}}}]]
    }


def test_a_field_explained_on_most_calls_is_visible_to_later_fields():
    """One call that breaks a field (a fare kept at its old price) must not hide it from a
    field computed from it (the charge): the charge is learned as new fares less old fares,
    not as the constant of one call (airline ``update_reservation_flights`` with all episodes
    learned the payment as -2580)."""
    from simforge.synth.learn.write_effects import learn_fields

    observations = []
    for n in range(6):
        old_fares = [{"f": "F1", "price": 90.0 + n}, {"f": "F2", "price": 150.0 + 3 * n}]
        args = {"flights": [{"f": "F1", "price": 100.0 + 10 * n}, {"f": "F2", "price": 207.0}]}
        fares = [{"f": e["f"], "price": e["price"]} for e in args["flights"]]
        if n == 3:  # the exception: one flight keeps its old fare
            fares[0] = dict(old_fares[0])
        old = {"fares": old_fares, "paid": 0.0}
        charge = sum(f["price"] for f in fares) - sum(f["price"] for f in old_fares)
        new = {**old, "fares": fares, "paid": charge}
        observations.append((new, {"args": args, "old": old, "ref": {}}))
    changes = learn_fields(observations, ["fares", "paid"], base=lambda k: {"p": ["old", k]})
    assert list(changes) == ["fares", "paid"]
    assert "c" not in changes["paid"], changes["paid"]
    assert "new" in repr(changes["paid"])
    from simforge.synth.runtime.effects import apply_effects

    for new, env in observations:
        if new["fares"] == apply_effects(changes, env)["fares"]:
            assert apply_effects(changes, env)["paid"] == new["paid"]


def test_a_precondition_every_success_shares_refuses_with_a_sibling_tools_words(tmp_path):
    """No call of ``cancel_order`` ever failed, but every successful one found its order
    pending, where most orders are not: the pack refuses a cancel of a delivered order, in the
    words of the sibling write that training did see refusing (its verb replaced by this
    one's, spelled as the traces spell it), and both condition and text are in tools.json."""
    import json

    from simforge.synth.pack.loader import load_synth_pack
    from simforge.synth.pipeline import synthesize

    from .conftest import ORDERS, _cancelled, _order, episode

    eps = []
    for n in (1, 3, 5, 7, 9, 11):  # pending orders, cancelled without a hitch
        oid = f"#W{n}"
        eps.append(
            episode(
                n,
                [
                    ("get_order", {"order_id": oid}, _order(oid), None),
                    ("cancel_order", {"order_id": oid, "reason": "x"}, _cancelled(oid, "x"), None),
                ],
            )
        )
    for n in (13, 15, 17):  # pending orders get a new reason; delivered ones are refused
        oid = f"#W{n}"
        changed = {**_order(oid), "reason": "gift"}
        eps.append(
            episode(n, [("modify_order", {"order_id": oid, "reason": "gift"}, changed, None)])
        )
    for n in (2, 4, 6):
        oid = f"#W{n}"
        text = "Error: Non-pending order cannot be modified"
        eps.append(episode(n, [("modify_order", {"order_id": oid, "reason": "gift"}, text, text)]))
    data = tmp_path / "data"
    data.mkdir()
    orders = {
        **ORDERS,
        **{
            f"#W{n}": {**ORDERS["#W2"], "order_id": f"#W{n}", "status": "delivered"}
            for n in range(21, 41)
        },
    }
    (data / "orders.json").write_text(json.dumps(orders))
    synthesize([], tmp_path / "pack", data=[data], episodes=eps)
    tools = {
        t["spec"]["name"]: t["handler"]
        for t in json.loads((tmp_path / "pack/tools.json").read_text())
    }
    rule = next(r for r in tools["cancel_order"]["errors"] if r.get("source") == "successes")
    assert rule["when"] == {"not_in": [["old", "status"], ["pending"]]}
    assert rule["message"] == "Error: Non-pending order cannot be cancelled"
    pack = load_synth_pack(tmp_path / "pack")
    import random

    from simforge.tools.context import ToolContext
    from simforge.tools.errors import ToolError
    from simforge.world.store import World

    world = World(pack.schemas, pack.base())
    ctx = ToolContext(world, 0.0, random.Random(0), tool="cancel_order", call_id="c")
    try:
        pack.catalog["cancel_order"].invoke(ctx, {"order_id": "#W22", "reason": "x"})
    except ToolError as exc:
        assert exc.message == "Error: Non-pending order cannot be cancelled"
    else:
        raise AssertionError("a delivered order was cancelled")
    done = pack.catalog["cancel_order"].invoke(ctx, {"order_id": "#W19", "reason": "x"})
    assert done["status"] == "cancelled"


def test_a_balance_at_least_the_amount_charged_is_a_precondition():
    """Every successful charge to a card with a balance was at most its balance: a charge
    above it is refused; a card without a balance, and a refund, are not held to it."""
    from simforge.synth.learn.preconditions import Distributions, learn_preconditions
    from simforge.synth.runtime.error_rules import ErrorObservation, holds

    desc = {
        "kind": "update",
        "entity": "Booking",
        "key": "booking_id",
        "refs": {"payment_id": {"entity": "User", "sub": "cards"}},
        "effects": {"payments": {"append": [{"p": ["old", "payments"]}, []]}},
    }
    envs = []
    for n, (balance, charge) in enumerate([(100, 40), (55, 55), (None, 900), (20, -300)]):
        card = {"id": f"card_{n}", "source": "gift" if balance is not None else "credit"}
        if balance is not None:
            card["amount"] = balance
        old = {"booking_id": f"b{n}", "payments": []}
        new = {**old, "payments": [{"payment_id": card["id"], "amount": charge}]}
        envs.append(
            {"args": {"booking_id": f"b{n}"}, "old": old, "new": new, "ref": {"payment_id": card}}
        )
    rules = learn_preconditions(desc, envs, envs, Distributions({}))
    (rule,) = [r for r in rules if "lt" in r["when"]]
    assert rule["when"] == {
        "lt": [{"p": ["ref", "payment_id", "amount"]}, {"p": ["new", "payments", -1, "amount"]}]
    }

    def refused(balance, charge):
        card = {"id": "c", "amount": balance} if balance is not None else {"id": "c"}
        env = {"ref": {"payment_id": card}, "new": {"payments": [{"amount": charge}]}}
        return holds(rule["when"], ErrorObservation(env, None))

    assert refused(30, 31) and not refused(31, 31) and not refused(None, 5000)
    assert not refused(10, -50)


def test_the_payment_method_on_record_is_a_precondition():
    """Every success paid with a method the order's own user holds: a method of nobody, or of
    someone else, is refused."""
    from simforge.synth.learn.preconditions import Distributions, learn_preconditions

    desc = {
        "kind": "update",
        "entity": "Order",
        "key": "order_id",
        "refs": {"payment_method_id": {"entity": "User", "sub": "payment_methods"}},
        "effects": {},
    }
    envs = [
        {
            "args": {"order_id": f"o{n}", "payment_method_id": f"card_{n}"},
            "old": {"order_id": f"o{n}", "user_id": f"u{n}"},
            "ref": {"payment_method_id": {"id": f"card_{n}", "user_id": f"u{n}"}},
        }
        for n in range(4)
    ]
    whens = [r["when"] for r in learn_preconditions(desc, envs, envs, Distributions({}))]
    assert {"missing_ref": "payment_method_id"} in whens
    assert {
        "ne": [{"p": ["ref", "payment_method_id", "user_id"]}, {"p": ["old", "user_id"]}]
    } in whens
