"""A compiled view (:func:`simforge.synth.runtime.compiled._compile_view`) shows a row as the
interpreter's ``_view`` does: the same keys in the same order, a fresh mutable dict, the row
untouched, for the world's plain and read-only rows alike."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.synth.runtime import interpreter as interp
from simforge.synth.runtime.compiled import _compile_view
from simforge.world.frozen import FrozenDict, freeze

KEYS = st.sampled_from(["id", "status", "note", "items", "total", "x"])
VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=3),
                   st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES), st.lists(KEYS, max_size=3), st.lists(KEYS, max_size=3),
       st.booleans())
def test_a_compiled_view_is_the_interpreters(row: dict[str, Any], omit: list[str],
                                             omit_null: list[str], frozen: bool):
    view = {"omit": omit, "omit_null": omit_null}
    seen = freeze(row) if frozen else dict(row)
    before = dict(seen)
    want = interp._view(seen, view, {})
    got = _compile_view(view)(seen, {})
    assert got == want and list(got) == list(want)
    if omit or omit_null:
        assert type(got) is dict and got is not seen
        got["new"] = 1  # a fresh dict: the row does not change
    assert dict(seen) == before and type(seen) is (FrozenDict if frozen else dict)
