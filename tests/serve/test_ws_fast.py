"""The ``/ws`` step fast path (:func:`openenv.fast_step`: orjson alone, the shape checked by
hand) agrees with the full path (``parse_json``, the message triage, the action's validating
parser): whatever message it takes, the full path takes as the same calls, and the common
step message always takes it. Its replies are the full path's bytes
(``test_ws_direct.py``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simforge.env.action import ActionError, parse_action
from simforge.serve import openenv
from simforge.serve.problems import Problem, parse_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def call(draw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(st.text(max_size=12))}
    if draw(st.booleans()):
        out["arguments"] = draw(arguments)
    if draw(st.booleans()):
        out["id"] = draw(st.none() | st.text(max_size=10))
    return out


calls = st.lists(call(), min_size=1, max_size=3)
common = st.builds(lambda c: {"type": "step", "data": {"tool_calls": c}}, calls)
data = st.one_of(
    st.builds(lambda c: {"tool_calls": c}, calls),
    st.builds(lambda c, m: {"tool_calls": c, "metadata": m}, calls, json_values),
    st.dictionaries(st.sampled_from(["tool_calls", "message", "metadata", "type", "think"]),
                    json_values, max_size=3),
    json_values,
)
near_misses = st.one_of(
    st.builds(lambda t, d: {"type": t, "data": d},
              st.sampled_from(["step", "reset", "state", "mcp", "Step"]), data),
    st.builds(lambda d, k, v: {"type": "step", "data": d, k: v}, data,
              st.sampled_from(["extra", "id", "data"]), json_values),
    st.builds(lambda d: {"data": d}, data),
    json_values,
)


def _full(raw: str) -> list[tuple[str, Any, str | None]] | None:
    """The calls the full path takes from ``raw``; ``None`` when it answers anything else."""
    try:
        message = parse_json(raw, field="message")
    except Problem:
        return None
    if type(message) is not dict or message.get("type") != "step" \
            or set(message) != {"type", "data"} or type(message["data"]) is not dict \
            or "type" in message["data"]:
        return None
    try:
        action = parse_action(openenv._plain_action(message["data"]))
    except ActionError:
        return None
    if action.message is not None or action.final_answer is not None \
            or action.think is not None or action.metadata is not None:
        return None
    return [(c.name, c.arguments, c.id) for c in action.tool_calls]


def _fast(raw: str) -> list[tuple[str, Any, str | None]] | None:
    fast = openenv.fast_step(raw)
    return None if fast is None else [(c.tool, c.args, c.call_id) for c in fast]


@given(common, st.booleans())
def test_the_common_step_takes_the_fast_path_as_the_same_calls(message, compact):
    raw = json.dumps(message, separators=(",", ":") if compact else None)
    if _wide(message):  # an integer beyond 64 bits: parse_json's to answer
        assert _fast(raw) is None
        return
    fast = _fast(raw)
    if fast is None:  # it may leave a run of 19 digits beside a float to parse_json
        assert openenv._LONG_DIGITS.search(raw)
        return
    assert fast == _full(raw)


def _wide(value: Any) -> bool:
    if type(value) is int:
        return not -(2**63) <= value < 2**63
    if isinstance(value, dict):
        return any(_wide(v) for v in value.values())
    if isinstance(value, list):
        return any(_wide(v) for v in value)
    return False


@given(st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64 - 1, 2**64, 10**18,
                        10**19, -(10**19), 10**25]),
       st.sampled_from(["", "[", "{\"k\":"]), st.booleans())
def test_integers_at_the_64_bit_edge_take_the_path_parse_json_takes(number, nesting, floats):
    """19 digits or more: an integer within 64 bits is taken as it is (parse_json reads it the
    same), one beyond is left to parse_json, which refuses it; beside a float (which sends the
    fast path to its search for long digits) the same."""
    value = f"{nesting}{number}{']' if nesting == '[' else '}' if nesting else ''}"
    args = f'{{"n":{value}' + (',"x":1.5}' if floats else "}")
    raw = '{"type":"step","data":{"tool_calls":[{"name":"a","arguments":' + args + "}]}}"
    wide = not -(2**63) <= number < 2**63
    assert (_full(raw) is None) == wide
    fast = _fast(raw)
    if floats and not wide and len(str(abs(number))) >= 19:
        assert fast in (None, _full(raw))  # searched for long digits: left to parse_json
    else:
        assert fast == _full(raw)


@given(near_misses)
def test_whatever_the_fast_path_takes_the_full_path_takes_as_the_same_calls(message):
    raw = json.dumps(message)
    fast = _fast(raw)
    if fast is not None:
        assert fast == _full(raw)


@given(st.text(max_size=40) | st.sampled_from([
    '{"type":"step","data":{"tool_calls":[{"name":"a","arguments":{"n":1' + "0" * 19 + '}}]}}',
    '{"type":"step","data":{"tool_calls":[{"name":"a","arguments":' + "[" * 130 + "]" * 130
    + "}]}}",
    '{"type":"step","data":{"tool_calls":[{"name":"a"}]}',
    '{"type":"step","data":{"tool_calls":[{"name":"\\ud800"}]}}',
]))
def test_what_parse_json_refuses_is_never_taken(raw):
    if _full(raw) is None:
        assert _fast(raw) is None
