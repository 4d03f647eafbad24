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


def test_no_samples_gives_an_empty_closed_object_schema():
    assert infer_schema([], object_root=True) == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_argument_objects_are_closed_at_every_level():
    samples = [
        {"reservation_id": "R1", "passengers": [{"first_name": "A", "dob": "1990-01-01"}]},
        {"reservation_id": "R2", "passengers": [{"first_name": "B", "last_name": "C"}], "x": {}},
    ]
    schema = infer_schema(samples, object_root=True)
    assert schema["additionalProperties"] is False
    passenger = schema["properties"]["passengers"]["items"]
    assert passenger["additionalProperties"] is False and set(passenger["properties"]) == {
        "first_name",
        "dob",
        "last_name",
    }
    assert schema["properties"]["x"]["additionalProperties"] is False
    # results are not closed: a result's schema describes, it does not refuse
    assert "additionalProperties" not in infer_schema(samples)


def test_a_map_keyed_by_ids_is_a_map_not_properties():
    """tau2 retail's users: ``payment_methods`` keyed by the payment method's id. As fixed
    properties those ids (other users' data) would be in every tool description served."""
    users = [
        {
            "user_id": f"user_{n}",
            "payment_methods": {
                f"paypal_{3024827 + n}": {"source": "paypal", "id": f"paypal_{3024827 + n}"},
                f"credit_card_{100 + n}": {"source": "credit_card", "brand": "visa"},
            },
            "variants": {f"{1008292230 + n}": {"price": 10.5}},
            "dates": {"2024-05-16": {"status": "available"}, "2024-05-17": {"status": "full"}},
        }
        for n in range(3)
    ]
    schema = infer_schema(users)
    text = str(schema)
    assert "paypal_302" not in text and "credit_card_10" not in text and "1008292" not in text
    methods = schema["properties"]["payment_methods"]
    assert "properties" not in methods and methods["type"] == "object"
    assert set(methods["additionalProperties"]["properties"]) == {"source", "id", "brand"}
    assert methods["additionalProperties"]["required"] == ["source"]
    assert "additionalProperties" in schema["properties"]["variants"]
    assert "2024-05-16" not in text and "additionalProperties" in schema["properties"]["dates"]
    validator = jsonschema.Draft202012Validator(schema)
    assert all(validator.is_valid(u) for u in users)


def test_a_map_whose_keys_differ_across_results_is_a_map():
    """Product options keyed by option name: a product has color and size, another capacity."""
    results = [
        {"options": {"color": "blue", "size": "M"}},
        {"options": {"capacity": "1L", "power": "battery"}},
        {"options": {"material": "steel", "style": "modern"}},
    ]
    schema = infer_schema(results)
    assert schema["properties"]["options"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
    # a record with optional fields repeats its field names: it stays a record
    records = [{"id": f"T-{n}", "note": "x"} if n % 2 else {"id": f"T-{n}"} for n in range(6)]
    assert set(infer_schema(records)["properties"]) == {"id", "note"}
    # and the optional arguments of calls are arguments, however sparse
    calls = [{"email": "a@b.co"}, {"phone": "1"}, {"address": "1 Main St"}]
    assert set(infer_schema(calls, object_root=True)["properties"]) == {
        "email",
        "phone",
        "address",
    }


def test_enums_only_for_sets_believed_closed():
    every_twice = ["economy", "business", "basic_economy"] * 2
    assert string_facets(every_twice) == {"enum": ["basic_economy", "business", "economy"]}
    # a value seen once: the set is probably open (Good-Turing)
    assert string_facets(["economy"] * 9 + ["business"]) == {}
    # one value however often: a constant so far, not a set
    assert string_facets(["USA"] * 7) == {}
    # ids and numbers are never an enum, however often they repeat
    assert string_facets(["E-9522", "E-9631"] * 3) == {}
    assert string_facets(["12", "15"] * 3) == {}
    # a call retried with the same arguments is one observation
    retried = [{"cabin": "economy"}] * 2 + [{"cabin": "business"}] * 2
    assert "enum" not in infer_schema(retried, object_root=True)["properties"]["cabin"]


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
