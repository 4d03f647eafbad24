"""Schema inference: genson's structure plus enums, formats, id patterns and optional fields."""

from __future__ import annotations

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.synth.schemas import infer_schema, is_id_like, string_facets


def test_required_only_when_always_present_and_enums_for_closed_sets():
    samples = [
        {"order_id": f"#W{n}", "status": ["pending", "delivered"][n % 2], "note": "x"}
        if n % 2
        else {"order_id": f"#W{n}", "status": ["pending", "delivered"][n % 2]}
        for n in range(10)
    ]
    schema = infer_schema(samples, object_root=True)
    assert set(schema["required"]) == {"order_id", "status"}
    assert schema["properties"]["status"]["enum"] == ["delivered", "pending"]
    assert schema["properties"]["order_id"]["pattern"] == r"^#[A-Z]+\d+$"
    assert "enum" not in schema["properties"]["order_id"]


def test_formats_for_dates_datetimes_and_emails():
    assert string_facets(["2024-05-01", "2024-06-30"]) == {"format": "date"}
    assert string_facets(["2024-05-01T10:00:00"]) == {"format": "date-time"}
    assert string_facets(["a@example.com", "b.c@example.org"]) == {"format": "email"}
    assert string_facets(["a free text answer", "another one"]) == {}
    assert is_id_like("credit_card_8897086") and not is_id_like("hello world")


def test_no_samples_gives_an_empty_object_schema():
    assert infer_schema([], object_root=True) == {"type": "object", "properties": {}}


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["pending", "delivered", "2024-05-01", "a@b.co", "#W123", "x y"]),
)
_objects = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.one_of(
        _values,
        st.lists(_values, max_size=3),
        st.dictionaries(st.sampled_from(["x", "y"]), _values, max_size=2),
    ),
    max_size=4,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_objects, min_size=1, max_size=12))
def test_inferred_schema_validates_every_observed_argument_object(samples):
    schema = infer_schema(samples, object_root=True)
    validator = jsonschema.validators.validator_for(schema)(schema)
    for sample in samples:
        errors = [e.message for e in validator.iter_errors(sample)]
        assert not errors, (sample, errors)
