"""A synthesized handler gets its arguments as ``model_dump(exclude_unset=True)`` would give
them; for closed models of scalar arguments the loader builds that dict from the fields set
(:func:`simforge.synth.pack.loader._flat_fields`), which must be the same dict, keys in the
same order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.synth.pack.loader import _flat_fields, _handler, input_model
from simforge.synth.runtime.interpreter import Runtime

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user_id": {"type": "string"},
        "amount": {"type": "number"},
        "count": {"type": "integer"},
        "flag": {"type": "boolean"},
        "cabin": {"type": "string", "enum": ["basic", "business"]},
        "date": {"type": "string", "format": "date"},
    },
    "required": ["user_id"],
    "additionalProperties": False,
}
VALUES = {
    "amount": st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False)),
    "count": st.integers(-10**6, 10**6),
    "flag": st.booleans(),
    "cabin": st.sampled_from(["basic", "business"]),
    "date": st.dates().map(str),
}


def _seen(flat: tuple[str, ...] | None, model: Any, args: dict[str, Any]) -> dict[str, Any]:
    got: list[dict[str, Any]] = []
    handler = _handler(lambda ctx, a, rt: got.append(a), Runtime({}, {}, None), lambda: None,
                       flat)
    handler(None, model.model_validate(args))
    return got[0]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8), st.dictionaries(st.sampled_from(sorted(VALUES)), st.none()),
       st.data())
def test_the_flat_path_gives_what_model_dump_gives(user: str, keys: dict[str, None],
                                                    data: st.DataObject):
    model = input_model("t", SCHEMA)
    flat = _flat_fields(model, SCHEMA)
    assert flat is not None
    # any subset of the optional arguments, given in any order
    args: dict[str, Any] = {k: data.draw(VALUES[k]) for k in keys}
    args["user_id"] = user
    want = model.model_validate(args).model_dump(exclude_unset=True)
    got = _seen(flat, model, args)
    assert got == want and list(got) == list(want)
    assert got == _seen(None, model, args)


def test_nested_open_or_union_arguments_take_model_dump():
    nested = {**SCHEMA, "properties": {**SCHEMA["properties"],
                                       "items": {"type": "array", "items": {"type": "string"}}}}
    union = {**SCHEMA, "properties": {"x": {"type": ["string", "null"]}}}
    any_of = {**SCHEMA, "properties": {"x": {"anyOf": [{"type": "string"}]}}}
    open_ = {**SCHEMA, "additionalProperties": True}
    for schema in (nested, union, any_of, open_):
        assert _flat_fields(input_model("t", schema), schema) is None
    assert _flat_fields(input_model("t", SCHEMA), SCHEMA) == tuple(SCHEMA["properties"])
