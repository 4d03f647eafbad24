"""The join and aggregate forms of the effect language, learned from small hand-made episodes of
a flight shop: fares looked up in a flights table by (flight number, date, cabin), charges of
fare differences times passengers, a gift card debited on the user, and a refusal whose text
carries computed numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simforge.audit.fidelity import fidelity
from simforge.synth.expr.joins import JoinIndex
from simforge.synth.expr.language import evaluate
from simforge.synth.learn.error_conditions import learn_errors
from simforge.synth.learn.write_effects import learn_effects, learn_value
from simforge.synth.pack.files import TOOLS, read_json
from simforge.synth.pipeline import synthesize
from simforge.synth.runtime.effects import apply_effects
from simforge.synth.runtime.error_rules import ErrorObservation, holds, render

from .conftest import episode

DATES = [f"2024-05-{d:02d}" for d in range(1, 21)]  # enough dates to be a keyed collection
CABINS = ("economy", "business")


def _fare(n: int, day: int, cabin: str) -> int:
    return 100 + 7 * n + 3 * day + (400 if cabin == "business" else 0)


FLIGHTS = {
    f"FL{n:03d}": {
        "flight_number": f"FL{n:03d}",
        "origin": "AAA" if n % 2 else "BBB",
        "destination": "CCC" if n % 3 else "DDD",
        "dates": {
            d: {"status": "available", "prices": {c: _fare(n, i, c) for c in CABINS}}
            for i, d in enumerate(DATES)
        },
    }
    for n in range(1, 13)
}


def _leg(number: str, date: str, cabin: str) -> dict[str, Any]:
    row = FLIGHTS[number]
    price = row["dates"][date]["prices"][cabin]
    return {
        "flight_number": number,
        "origin": row["origin"],
        "destination": row["destination"],
        "date": date,
        "price": price,
    }


def _people(k: int) -> list[dict[str, str]]:
    return [{"first_name": f"P{i}", "last_name": "Doe"} for i in range(k)]


USERS = {
    f"user_{u}": {
        "name": f"User {u}",
        "payment_methods": {
            f"gift_card_{u}": {"id": f"gift_card_{u}", "source": "gift_card", "amount": 900.37},
            f"credit_card_{u}": {"id": f"credit_card_{u}", "source": "credit_card"},
        },
    }
    for u in range(12)
}
RESERVATIONS = {
    f"R{u:03d}": {
        "reservation_id": f"R{u:03d}",
        "user_id": f"user_{u}",
        "cabin": "business",
        "flights": [
            _leg(f"FL{(u + k) % 12 + 1:03d}", DATES[u], "business") for k in range(1 + u % 2)
        ],
        "passengers": _people(1 + u % 3),
        "payment_history": [{"payment_id": f"voucher_{u}", "amount": 1000}] * (1 + u % 3 // 2),
    }
    for u in range(12)
}


def _change(u: int, card: str) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """Move reservation ``R<u>`` to economy on two other flights, paying with ``card``."""
    res = RESERVATIONS[f"R{u:03d}"]
    wanted = [(f"FL{(u + 3) % 12 + 1:03d}", DATES[u + 2]), (f"FL{(u + 5) % 12 + 1:03d}", DATES[u])]
    legs = [_leg(n, d, "economy") for n, d in wanted]
    charge = (sum(x["price"] for x in legs) - sum(x["price"] for x in res["flights"])) * len(
        res["passengers"]
    )
    pid = f"{card}_{u}"
    args = {
        "reservation_id": res["reservation_id"],
        "cabin": "economy",
        "flights": [{"flight_number": n, "date": d} for n, d in wanted],
        "payment_id": pid,
    }
    new = {
        **res,
        "cabin": "economy",
        "flights": legs,
        "payment_history": [*res["payment_history"], {"payment_id": pid, "amount": charge}],
    }
    user = json.loads(json.dumps(USERS[f"user_{u}"]))
    if card == "gift_card":
        user["payment_methods"][pid]["amount"] -= charge
    user["user_id"] = f"user_{u}"
    return (
        [
            ("get_reservation_details", {"reservation_id": res["reservation_id"]}, res, None),
            ("update_reservation_flights", args, new, None),
            ("get_user_details", {"user_id": f"user_{u}"}, user, None),
        ],
        args,
        new,
    )


def _book(u: int, pay: float | None = None) -> tuple[str, dict[str, Any], Any, str | None]:
    wanted = [(f"FL{u % 12 + 1:03d}", DATES[u]), (f"FL{(u + 7) % 12 + 1:03d}", DATES[u + 1])]
    legs = [_leg(n, d, "economy") for n, d in wanted]
    passengers = _people(1 + u % 2)
    total = sum(x["price"] for x in legs) * len(passengers)
    paid = total if pay is None else pay
    args = {
        "user_id": f"user_{u}",
        "cabin": "economy",
        "flights": [{"flight_number": n, "date": d} for n, d in wanted],
        "passengers": passengers,
        "payment_methods": [{"payment_id": f"credit_card_{u}", "amount": paid}],
    }
    if paid != total:
        text = f"Error: Payment amount does not add up, total price is {total}, but paid {paid:g}"
        return ("book_reservation", args, text, text)
    row = {
        "reservation_id": "NEWRES",
        "user_id": args["user_id"],
        "cabin": "economy",
        "flights": legs,
        "passengers": passengers,
        "payment_history": args["payment_methods"],
    }
    return ("book_reservation", args, row, None)


def _episodes(users: range) -> list[Any]:
    eps = []
    for u in users:
        calls, _, _ = _change(u, "gift_card" if u % 2 else "credit_card")
        calls.append(_book(u, pay=float(u + 1)))
        calls.append(_book(u))
        eps.append(episode(u, calls))
    return eps


def _snapshot(folder: Path) -> Path:
    folder.mkdir()
    (folder / "flights.json").write_text(json.dumps(FLIGHTS))
    (folder / "users.json").write_text(json.dumps(USERS))
    (folder / "reservations.json").write_text(json.dumps(RESERVATIONS))
    return folder


# -- the forms, one by one ------------------------------------------------------------------------


def _db() -> JoinIndex:
    tables = {"Flight": FLIGHTS}
    return JoinIndex(lambda e, i: tables.get(e, {}).get(i), dict.fromkeys(FLIGHTS, "Flight"))


def test_row_and_at_read_another_table_by_values_of_the_call():
    env = {
        "args": {"cabin": "business"},
        "elem": {"flight_number": "FL002", "date": DATES[3]},
        "db": _db(),
    }
    row = {"row": ["Flight", {"p": ["elem", "flight_number"]}]}
    price = {
        "at": [
            row,
            {"c": "dates"},
            {"p": ["elem", "date"]},
            {"c": "prices"},
            {"p": ["args", "cabin"]},
        ]
    }
    assert evaluate(row, env)["origin"] == "BBB"
    assert evaluate(price, env) == _fare(2, 3, "business")
    mapped = {"map": [{"p": ["args", "legs"]}, {"p": ["elem", "date"]}]}
    assert evaluate(mapped, {"args": {"legs": [{"date": "a"}, {"date": "b"}]}}) == ["a", "b"]


def test_map_template_learns_the_join_not_what_elements_share():
    samples = []
    for u in range(3):
        _, args, new = _change(u, "credit_card")
        samples.append((new["flights"], {"args": args, "old": None, "ref": {}, "db": _db()}))
    learned = learn_value(samples)
    assert learned.score == 3
    assert learned.expr["map"][0] == {"p": ["args", "flights"]}
    template = learned.expr["map"][1]["obj"]
    assert template["origin"]["at"][0] == {"row": ["Flight", {"p": ["elem", "flight_number"]}]}
    assert {"p": ["elem", "date"]} in template["price"]["at"]
    assert {"p": ["args", "cabin"]} in template["price"]["at"]


def test_charges_combine_new_fields_with_old_ones_times_a_count():
    observations = []
    for u in range(5):
        _, args, new = _change(u, "credit_card")
        old = RESERVATIONS[args["reservation_id"]]
        observations.append((new, {"args": args, "old": old, "ref": {}, "db": _db()}))
    changes = learn_effects(observations).changes
    assert list(changes)[-1] == "payment_history"  # computed after the fields it reads
    amount = changes["payment_history"]["append"][1][0]["obj"]["amount"]
    assert "mul" in amount and "'new', 'flights'" in repr(amount)
    for new, env in observations:
        assert apply_effects(changes, env)["payment_history"] == new["payment_history"]


def test_errors_compare_computed_values_and_fill_the_recorded_template():
    obs = []
    for u, paid in [(1, 5.0), (2, None), (3, 7.5), (4, None)]:
        _, args, result, error = _book(u, paid)
        new = result if error is None else {"flights": _book(u)[2]["flights"]}
        obs.append(ErrorObservation({"args": args, "old": None, "new": new}, error))
    rules = learn_errors(obs)
    assert len(rules) == 1 and rules[0]["when"].keys() == {"ne"}
    assert rules[0]["message"].endswith("total price is {0}, but paid {1}")
    assert render(rules[0], obs[0].env) == obs[0].error
    assert holds(rules[0]["when"], obs[2]) and not holds(rules[0]["when"], obs[1])


# -- end to end: synthesize, then replay held-out episodes ------------------------------------------


def test_flight_shop_learns_joins_charges_side_effects_and_computed_errors(tmp_path):
    out = tmp_path / "pack"
    synthesize([], out, data=[_snapshot(tmp_path / "data")], episodes=_episodes(range(8)))
    handlers = {t["handler"]["tool"]: t["handler"] for t in read_json(out / TOOLS)}
    change = handlers["update_reservation_flights"]
    assert "{'row': ['Flight', {'p': ['elem', 'flight_number']}]}" in repr(
        change["effects"]["flights"]
    )
    side = change["side"]
    assert [(s["arg"], s["entity"], s["sub"]) for s in side] == [
        ("payment_id", "User", "payment_methods")
    ]
    # the card's balance less the charge just appended, wherever in the history it lands
    assert "'payment_history', -1, 'amount'" in repr(side[0]["changes"]["amount"])
    book = handlers["book_reservation"]
    assert [r["when"].keys() for r in book["errors"]] == [{"ne": None}.keys()]

    result = fidelity(out, episodes=_episodes(range(8, 12)))
    assert result["writes"]["exact"] == result["writes"]["calls"] == 8
    assert result["errors"]["exact"] == result["errors"]["calls"] == 4
    assert result["reads"]["rate"] == 1.0  # gift card balances read after the change
