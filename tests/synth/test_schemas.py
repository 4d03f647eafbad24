"""Schema inference: genson's structure plus enums, formats, id patterns and optional fields."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from genson import SchemaBuilder
from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.synth.learn.json_schemas import (
    infer_schema,
    is_id_like,
    string_facets,
    value_type,
)
from simforge.synth.pipeline import version_conflicts
from simforge.tools import ToolArgumentError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


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


def _synth_tool(samples):
    from simforge.synth.pack.loader import input_model
    from simforge.tools import Tool, ToolSpec

    schema = infer_schema(samples, object_root=True)
    spec = ToolSpec(name="book", description="Book.", input_schema=schema)
    return Tool(spec, input_model("book", schema), lambda ctx, a: a.model_dump(exclude_unset=True))


_BOOKINGS = [
    {
        "user_id": f"user_{n}",
        "cabin": ["economy", "business"][n % 2],
        "flights": [{"flight_number": f"HAT{n:03d}", "date": "2024-05-01", "qty": n % 3 + 1}],
        **({"insurance": {"kind": ["basic", "full"][n % 2], "extra": {"A": 1.5}}} if n % 3 else {}),
    }
    for n in range(8)
]


def test_synthesized_tools_validate_the_whole_learned_schema():
    """Nested values are checked like top-level ones: a nested ``qty: "lots"`` or a cabin
    outside its enum is a 422 naming the path, what is expected there and what came."""
    book = _synth_tool(_BOOKINGS)
    for sample in _BOOKINGS:
        assert book.invoke(None, sample) == sample
    bad = {**_BOOKINGS[1], "cabin": "first"}
    bad["flights"] = [{"flight_number": "HAT001", "date": "2024-05-01", "qty": "lots"}]
    with pytest.raises(ToolArgumentError) as info:
        book.invoke(None, bad)
    details = {d["argument"]: d for d in info.value.details}
    assert details["cabin"]["expected"] == "one of ['business', 'economy']"
    assert details["cabin"]["received"] == "first"
    assert details["flights.0.qty"]["expected"] == "integer"
    assert details["flights.0.qty"]["received"] == "lots"
    assert "'flights.0.qty': expected integer, got 'lots'" in info.value.message


@pytest.mark.parametrize(
    ("change", "argument", "expected"),
    [
        (
            {"flights": [{"flight_number": "HAT1", "date": "2024-05-01", "seat": "1A"}]},
            "flights.0.seat",
            "one of the fields ['date', 'flight_number', 'qty']",
        ),
        (
            {"flights": [{"date": "2024-05-01"}]},
            "flights.0.flight_number",
            "a value (the argument is required)",
        ),
        (
            {"flights": [{"flight_number": "HAT1", "date": "May 1st"}]},
            "flights.0.date",
            "string (date)",
        ),
        ({"insurance": {"kind": "basic", "extra": {"A": "lots"}}}, "insurance.extra.A", "number"),
        ({"insurance": {"kind": "gold"}}, "insurance.kind", "one of ['basic', 'full']"),
        ({"flights": "HAT1"}, "flights", "array of object"),
        ({"upgrade": True}, "upgrade", "one of the tool's arguments"),
    ],
)
def test_synthesized_argument_errors_name_path_and_expectation(change, argument, expected):
    book = _synth_tool([*_BOOKINGS, {**_BOOKINGS[1], "insurance": {"kind": "basic"}}])
    with pytest.raises(ToolArgumentError) as info:
        book.invoke(None, {**_BOOKINGS[1], **change})
    assert info.value.status == 422
    found = {d["argument"]: d["expected"] for d in info.value.details}
    assert argument in found, found
    assert found[argument].startswith(expected)


def test_an_id_pattern_is_served_but_a_malformed_id_reaches_the_handler():
    """Production answered a malformed id with its own error (tau2 retail: ``#9502127`` is
    "Error: Order not found"), so the learned shape is told to the agent, not enforced."""
    book = _synth_tool(_BOOKINGS)
    schema = book.spec.input_schema["properties"]["flights"]["items"]
    assert schema["properties"]["flight_number"]["pattern"]
    sent = {**_BOOKINGS[1], "flights": [{"flight_number": "hat-1", "date": "2024-05-01", "qty": 1}]}
    assert book.invoke(None, sent) == sent


def test_a_field_the_snapshot_shows_open_is_never_an_enum():
    """Two cities each seen twice look like a closed set; the snapshot's hundreds of cities
    say otherwise, and a held-out call to a third city must not be a 422."""
    from simforge.synth.learn.json_schemas import open_field_names

    calls = [{"order_id": f"#W{n}", "address": {"city": c, "state": s}}
             for n, (c, s) in enumerate([("Fort Worth", "TX"), ("New York", "NY")] * 2)]
    closed = infer_schema(calls, object_root=True)
    assert closed["properties"]["address"]["properties"]["city"]["enum"] == [
        "Fort Worth", "New York"]
    users = [{"user_id": f"u{n}", "address": {"city": f"City {chr(65 + n)}", "state": "TX"}}
             for n in range(12)]
    open_fields = open_field_names(users)
    assert open_fields == {"user_id", "city"}
    opened = infer_schema(calls, object_root=True, open_fields=open_fields)
    address = opened["properties"]["address"]["properties"]
    assert "enum" not in address["city"] and address["state"]["enum"] == ["NY", "TX"]


def test_a_pack_synthesized_before_arguments_were_closed_is_served_closed(tmp_path):
    """Packs written earlier have argument schemas without additionalProperties: the loader
    closes them, so the schema served is the one the arguments are checked against."""
    import json

    from simforge.synth.pack.loader import load_synth_pack
    from simforge.synth.pipeline import synthesize

    out = tmp_path / "pack"
    synthesize([EXAMPLES / "acme-otlp.json"], out)
    tools = json.loads((out / "tools.json").read_text())
    for entry in tools:
        _strip_additional(entry["spec"]["input_schema"])
    (out / "tools.json").write_text(json.dumps(tools))
    pack = load_synth_pack(out)
    for t in pack.catalog.values():
        assert t.spec.input_schema["additionalProperties"] is False
        jsonschema.Draft202012Validator.check_schema(t.spec.input_schema)


def _strip_additional(schema):
    if isinstance(schema, dict):
        if schema.get("additionalProperties") is False:
            del schema["additionalProperties"]
        for v in schema.values():
            _strip_additional(v)
    elif isinstance(schema, list):
        for v in schema:
            _strip_additional(v)


@pytest.mark.slow
def test_schemathesis_over_a_synthesized_pack_finds_no_server_error(tmp_path):
    """A pack synthesized from examples/traces/acme-otlp.json, served by ``simforge serve``:
    whatever schemathesis sends to its tools (bodies from the learned schemas, and bodies that
    break them), the answer is never a server error, and a body outside the schema is a 422. The natural failure rates learned from the traces (a 503 now and
    then) are switched off, so that any 5xx is the server's own."""
    import json
    import socket
    import threading
    import time

    import uvicorn

    schemathesis = pytest.importorskip("schemathesis")
    from simforge.serve.app import create_app
    from simforge.synth.pipeline import synthesize

    pack = tmp_path / "pack"
    synthesize([EXAMPLES / "acme-otlp.json"], pack)
    tools = json.loads((pack / "tools.json").read_text())
    for entry in tools:
        entry["spec"]["errors"] = {"rate": 0.0}
    (pack / "tools.json").write_text(json.dumps(tools))
    token = "synth-token"
    app = create_app(str(pack), time_scale=0.0, token=token)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    failures: list[str] = []
    sent: list[tuple[str, int]] = []
    try:
        schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{port}/openapi.json")
        operations = [
            result.ok()
            for result in schema.get_all_operations()
            if result.ok().path.startswith("/tools/")
        ]
        assert len(operations) > 50
        for operation in operations:
            for mode in ("positive", "negative"):
                _probe(operation, mode, token, sent, failures, schemathesis)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert failures == []
    assert len(sent) > 6 * len(operations), "schemathesis sent too few requests"
    assert ("positive", 200) in sent and ("negative", 422) in sent


def _probe(operation, mode, token, sent, failures, schemathesis):
    from hypothesis import HealthCheck
    from hypothesis import given as given_case
    from hypothesis import settings as case_settings

    strategy = operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode))

    @given_case(case=strategy)
    @case_settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    def probe(case):
        response = case.call(headers={"Authorization": f"Bearer {token}"}, timeout=10)
        sent.append((mode, response.status_code))
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path} {case.body!r}: "
                f"{response.status_code} {response.text[:200]}"
            )

    probe()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                  max_size=3),
    max_leaves=8,
)


@settings(max_examples=200)
@given(JSON)
def test_a_value_s_type_is_the_one_genson_gives_it(value):
    """One type inference: what synth calls a value's type (argument shapes, entity fields, map
    values) is genson's schema type for it, integers and other numbers being one type."""
    builder = SchemaBuilder(schema_uri=False)
    builder.add_object(value)
    kind = builder.to_schema()["type"]
    assert value_type(value) == ("number" if kind == "integer" else kind)


def test_calls_whose_argument_types_differ_are_versioned_and_ints_and_floats_are_not():
    from simforge.trace.episode import Episode

    def episode(id, *args):
        return Episode.model_validate({"id": id, "source": {"format": "test"}, "tool_calls": [
            {"call_id": f"{id}{n}", "tool": "pay", "args": a} for n, a in enumerate(args)]})

    episodes = [episode("a", {"amount": 3}, {"amount": 2.5}, {"amount": 4}),
                episode("b", {"amount": "three"})]
    messages = version_conflicts(episodes)
    assert len(messages) == 1 and "pay_v2" in messages[0]
    assert [c.tool for e in episodes for c in e.tool_calls] == ["pay", "pay", "pay", "pay_v2"]
