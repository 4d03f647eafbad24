"""The hand-checked fast path for the common action shape agrees with the validating parser:
whatever ``fast_calls`` accepts, ``parse_action`` accepts as the same calls and nothing else,
and the common shape always takes the fast path."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simforge.env.action import ActionError, fast_calls, parse_action

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)
names = st.text(max_size=12)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
ids = st.none() | st.text(max_size=10)


@st.composite
def common_call(draw: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": draw(names)}
    if draw(st.booleans()):
        call["arguments"] = draw(arguments)
    if draw(st.booleans()):
        call["id"] = draw(ids)
    return call


common = st.builds(lambda calls: {"tool_calls": calls}, st.lists(common_call(), min_size=1,
                                                                  max_size=4))
near_misses = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(["tool_calls", "message", "final_answer", "think", "role",
                                     "content", "metadata"]), json_values, max_size=3),
    st.builds(lambda calls, extra: {"tool_calls": calls, **extra},
              st.lists(common_call() | json_values, max_size=3),
              st.dictionaries(st.sampled_from(["message", "think", "final_answer"]),
                              json_values, max_size=2)),
    st.builds(lambda call, key, value: {"tool_calls": [{**call, key: value}]},
              common_call(), st.sampled_from(["name", "arguments", "id", "function", "type",
                                              "tool", "args"]), json_values),
)


def _full(raw: Any) -> list[tuple[str, Any, str | None]] | None:
    try:
        action = parse_action(raw)
    except ActionError:
        return None
    if action.message is not None or action.final_answer is not None \
            or action.think is not None or action.metadata is not None:
        return None  # something the fast path would have had to carry
    return [(c.name, c.arguments, c.id) for c in action.tool_calls]


@given(common)
def test_the_common_shape_takes_the_fast_path_as_the_same_calls(raw):
    fast = fast_calls(raw)
    assert fast is not None
    assert [(c.tool, c.args, c.call_id) for c in fast] == _full(raw)


@given(near_misses)
def test_whatever_the_fast_path_takes_the_parser_takes_as_the_same_calls(raw):
    fast = fast_calls(raw)
    if fast is not None:
        assert [(c.tool, c.args, c.call_id) for c in fast] == _full(raw)
