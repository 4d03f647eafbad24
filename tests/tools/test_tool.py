"""``@tool``: the signature is the schema, the docstring the description; bad arguments are a
422 that names the argument, the expected type and what was sent, never a crash."""

from __future__ import annotations

import random
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from simforge.tools import (
    Constant,
    Empirical,
    LogNormal,
    ToolArgumentError,
    ToolContext,
    ToolDefinitionError,
    Uniform,
    tool,
)


class Refund(BaseModel):
    refund_id: str
    amount: float


@tool(kind="write", system="billing", entities=["Order"], capacity=2)
def refund_order(
    ctx: ToolContext, order_id: str, amount: float, reason: Literal["damaged", "late"] = "damaged"
) -> Refund:
    """Refund part or all of an order."""
    return Refund(refund_id="R-1", amount=amount)


def test_openai_export_carries_name_description_and_typed_parameters():
    fn = refund_order.spec.to_openai()
    assert fn["type"] == "function"
    assert fn["function"]["name"] == "refund_order"
    assert fn["function"]["description"] == "Refund part or all of an order."
    params = fn["function"]["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["order_id", "amount"]
    assert params["properties"]["amount"] == {"type": "number"}
    assert params["properties"]["reason"]["enum"] == ["damaged", "late"]
    assert params["additionalProperties"] is False
    assert "title" not in params


def test_spec_records_kind_system_entities_and_output_schema():
    spec = refund_order.spec
    assert (spec.kind, spec.system, spec.entities, spec.capacity) == (
        "write",
        "billing",
        ("Order",),
        2,
    )
    assert spec.output_schema["properties"]["amount"] == {"type": "number"}


def test_result_is_json_ready():
    assert refund_order.invoke(None, {"order_id": "O-1", "amount": 3}) == {
        "refund_id": "R-1",
        "amount": 3.0,
    }


@pytest.mark.parametrize(
    ("args", "argument", "expected", "received"),
    [
        ({"order_id": "O-1", "amount": "lots"}, "amount", "number", "lots"),
        ({"order_id": 7, "amount": 1}, "order_id", "string", 7),
        (
            {"order_id": "O-1", "amount": 1, "reason": "bored"},
            "reason",
            "one of ['damaged', 'late']",
            "bored",
        ),
        (
            {"order_id": "O-1", "amount": 1, "currency": "EUR"},
            "currency",
            "one of the tool's arguments",
            "EUR",
        ),
    ],
)
def test_bad_arguments_name_argument_expected_type_and_value(args, argument, expected, received):
    with pytest.raises(ToolArgumentError) as info:
        refund_order.invoke(None, args)
    err = info.value
    assert err.status == 422
    detail = err.details[0]
    assert detail["argument"] == argument
    assert detail["expected"].startswith(expected)
    assert detail["received"] == received
    assert argument in err.message and repr(received) in err.message


def test_missing_argument_and_non_object_arguments():
    with pytest.raises(ToolArgumentError, match="'amount': expected a value"):
        refund_order.invoke(None, {"order_id": "O-1"})
    with pytest.raises(ToolArgumentError, match="expected a JSON object"):
        refund_order.invoke(None, '{"order_id": ')


def test_definition_errors_name_the_tool():
    with pytest.raises(ToolDefinitionError, match=r"'nodoc'.*docstring"):

        @tool
        def nodoc(ctx: ToolContext, x: int) -> int:
            return x

    with pytest.raises(ToolDefinitionError, match=r"'noctx'.*first parameter"):

        @tool
        def noctx(x: int) -> int:
            """Doc."""
            return x

    with pytest.raises(ToolDefinitionError, match=r"'untyped'.*'x' needs a type"):

        @tool
        def untyped(ctx, x):  # type: ignore[no-untyped-def]
            """Doc."""


@given(seed=st.integers(0, 2**32))
def test_latency_models_stay_in_their_bounds(seed):
    rng = random.Random(seed)
    assert Constant(seconds=0.2).sample(rng) == 0.2
    assert 0.1 <= Uniform(low=0.1, high=0.3).sample(rng) <= 0.3
    assert 0 < LogNormal(median=0.1, sigma=2.0, cap=1.5).sample(rng) <= 1.5
    assert 0.01 <= Empirical(quantiles=[0.01, 0.02, 0.5]).sample(rng) <= 0.5


def test_lognormal_median_is_the_median():
    rng = random.Random(1)
    draws = sorted(LogNormal(median=0.2, sigma=0.8).sample(rng) for _ in range(20001))
    assert draws[10000] == pytest.approx(0.2, rel=0.05)


def test_empirical_from_samples_reproduces_quantiles():
    model = Empirical.from_samples([float(i) for i in range(101)], points=11)
    assert model.quantiles == [float(i) for i in range(0, 101, 10)]
    with pytest.raises(ValueError, match="non-decreasing"):
        Empirical(quantiles=[2.0, 1.0])
