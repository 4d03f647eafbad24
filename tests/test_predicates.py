"""The argument-predicate language that fault targets and the scorer share."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.faults.rules import Target
from simforge.predicates import Predicates, holds, matches

scalars = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3))
ops = st.dictionaries(
    st.sampled_from(["eq", "ne", "gt", "ge", "lt", "le", "exists"]), scalars, min_size=1
)
tests_ = st.dictionaries(st.sampled_from("abc"), st.one_of(scalars, ops), max_size=3)
args_ = st.dictionaries(st.sampled_from("abcd"), scalars, max_size=4)


@settings(deadline=None)  # no timing in a unit test (a loaded machine)
@given(tests_, args_)
def test_fault_targets_and_scoring_read_predicates_alike(tests, args):
    assert Target(args=tests).matches_args(args) == Predicates(tests).matches(args)


@settings(deadline=None)  # no timing in a unit test (a loaded machine)
@given(tests_, args_)
def test_a_predicate_set_is_the_conjunction_of_its_fields(tests, args):
    assert matches(args, tests) == all(holds(args.get(k), t) for k, t in tests.items())


def test_operators_constants_and_missing_fields():
    assert holds(7, {"gt": 5, "le": 7}) and not holds(8, {"gt": 5, "le": 7})
    assert holds("O-1", "O-1") and not holds("O-2", "O-1")
    assert holds(None, {"exists": False}) and not holds(None, {"gt": 1})
    assert not holds("a", {"gt": 3})  # incomparable: does not hold, never raises
    assert holds({"x": 1}, {"x": 1})  # a mapping of non-operators is a constant
    assert matches(None, {}) and not matches(None, {"a": 1})
