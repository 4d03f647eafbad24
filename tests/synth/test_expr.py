"""The expression language of learned handlers (``simforge.synth.expr.language``): what each form
evaluates to, that the pack-file form (JSON) round-trips, that the compiled closure agrees with
the interpreter, and how a bad expression fails."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simforge.synth.expr.language import Unresolved, compile_expr, evaluate, same
from simforge.world.frozen import freeze

ENV = {
    "args": {"reason": "no longer needed", "qty": 3, "ids": ["i1", "i2"], "flag": True},
    "old": {"status": "pending", "total": 10.5, "items": [{"id": "i1", "price": 4.0},
                                                         {"id": "i2", "price": 6.5}]},
    "ref": {"ids": [{"id": "n1", "price": 5.0}, {"id": "n2", "price": 7.0}]},
}

CASES = [
    ({"c": "cancelled"}, "cancelled"),
    ({"p": ["args", "reason"]}, "no longer needed"),
    ({"p": ["old", "items", 1, "price"]}, 6.5),
    ({"neg": {"p": ["old", "total"]}}, -10.5),
    ({"abs": {"c": -2}}, 2),
    ({"round": [{"c": 2.345}, 1]}, 2.3),
    ({"len": {"p": ["args", "ids"]}}, 2),
    ({"sorted": {"c": [3, 1, 2]}}, [1, 2, 3]),
    ({"add": [{"p": ["old", "total"]}, {"c": 1}]}, 11.5),
    ({"sub": [{"c": 5}, {"c": 2}]}, 3),
    ({"mul": [{"p": ["args", "qty"]}, {"c": 2}]}, 6),
    ({"sum": [["old", "items"], "price"]}, 10.5),
    ({"pairdiff": [["ref", "ids"], ["old", "items"], "price"]}, 1.5),
    ({"obj": {"why": {"p": ["args", "reason"]}, "n": {"c": 1}}}, {"why": "no longer needed", "n": 1}),
    ({"if_pos": [{"c": -1}, {"c": "pos"}, {"c": "neg"}]}, "neg"),
    ({"if_true": [{"p": ["args", "flag"]}, {"c": "yes"}, {"c": "no"}]}, "yes"),
    ({"append": [{"c": [1]}, [{"c": 2}, {"c": 3}]]}, [1, 2, 3]),
    ({"map": [{"p": ["old", "items"]}, {"p": ["elem", "id"]}]}, ["i1", "i2"]),
    ({"appendmap": [{"c": []}, ["ref", "ids"], {"p": ["elem", "id"]}]}, ["n1", "n2"]),
    ({"at": [{"p": ["old"]}, {"c": "items"}, {"c": 0}, {"c": "id"}]}, "i1"),
    ({"replace": {"list": {"p": ["old", "items"]}, "ids": {"c": ["i2"]},
                  "with": {"c": [{"id": "n2", "price": 7.0, "extra": 1}]},
                  "key": "id", "keys": ["id", "price"]}},
     [{"id": "i1", "price": 4.0}, {"id": "n2", "price": 7.0}]),
]


@pytest.mark.parametrize(("expr", "want"), CASES, ids=[next(iter(e)) for e, _ in CASES])
def test_each_form_evaluates_the_same_interpreted_compiled_and_after_a_round_trip(expr, want):
    assert same(evaluate(expr, ENV), want)
    assert same(compile_expr(expr)(ENV), want)
    stored = orjson.loads(orjson.dumps(expr))  # the form tools.json holds
    assert stored == expr
    assert same(evaluate(stored, ENV), want)
    assert same(evaluate(expr, freeze(ENV)), want)  # rows of a frozen base read alike


@pytest.mark.parametrize("expr", [{"nope": 1}, {"c": 1, "p": ["args"]}, {}])
def test_a_malformed_expression_fails_when_evaluated_never_silently(expr):
    with pytest.raises(ValueError):
        evaluate(expr, ENV)
    compiled = compile_expr(expr)  # compiling defers the failure to evaluation
    with pytest.raises(ValueError):
        compiled(ENV)


@pytest.mark.parametrize("expr", [
    {"p": ["args", "missing"]}, {"neg": {"c": "text"}}, {"len": {"c": 3}},
    {"sorted": {"c": [1, "a"]}}, {"if_true": [{"c": 1}, {"c": 0}, {"c": 0}]},
    {"map": [{"c": 3}, {"c": 0}]}, {"row": ["Order", {"c": "o1"}]},
])
def test_an_expression_that_does_not_apply_is_unresolved(expr):
    with pytest.raises(Unresolved):
        evaluate(expr, ENV)
    with pytest.raises(Unresolved):
        compile_expr(expr)(ENV)


numbers = st.integers(-1000, 1000) | st.floats(-1e6, 1e6, allow_nan=False)
leaves = st.builds(lambda v: {"c": v}, numbers) | st.sampled_from(
    [{"p": ["old", "total"]}, {"p": ["args", "qty"]}]
)
arithmetic = st.recursive(
    leaves,
    lambda inner: st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(["add", "sub", "mul"]),
                            inner, inner)
    | st.builds(lambda op, a: {op: a}, st.sampled_from(["neg", "abs"]), inner)
    | st.builds(lambda a, b, c: {"if_pos": [a, b, c]}, inner, inner, inner),
    max_leaves=12,
)


@given(arithmetic)
def test_compiled_agrees_with_the_interpreter_and_the_stored_form_evaluates_alike(expr):
    def outcome(f):
        try:
            return ("value", f())
        except (Unresolved, OverflowError) as exc:
            return ("error", type(exc))

    interpreted = outcome(lambda: evaluate(expr, ENV))
    compiled = outcome(lambda: compile_expr(expr)(ENV))
    stored = outcome(lambda: evaluate(orjson.loads(orjson.dumps(expr)), ENV))
    assert interpreted[0] == compiled[0] == stored[0]
    if interpreted[0] == "value":
        assert same(interpreted[1], compiled[1]) and same(interpreted[1], stored[1])
