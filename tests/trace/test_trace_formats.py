"""Each adapter against a hand-written fixture built from the field names of its spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simforge.trace.episode import Episode
from simforge.trace.ingest import ingest

FIXTURES = Path(__file__).parent / "fixtures"


def _episodes(name: str, fmt: str) -> list[Episode]:
    result = ingest(FIXTURES / name, keep=True)
    assert result.rejected == 0, result.rejections
    assert set(result.formats) == {fmt}, "format detected from the content"
    return result.collected


def test_openai_tool_calls_parallel_results_out_of_order_and_bad_arguments() -> None:
    weather, booking, tickets = _episodes("openai_tool_calls.jsonl", "openai")

    assert weather.id == "conv-weather-1"
    assert weather.metadata == {"model": "gpt-4o-2024-08-06"}
    paris, rome = weather.tool_calls
    assert paris.message_index == rome.message_index == 2
    assert paris.result == {"city": "Paris", "temp_c": 18}
    assert rome.raw_result == '{"city": "Rome", "temp_c": 24}'
    assert [m.call_id for m in weather.messages if m.role == "tool"] == ["call_a2", "call_a1"]

    broken, fixed = booking.tool_calls
    assert broken.args is None and broken.raw_args == '{"table": 4, "time": "19:00"'
    assert broken.metadata["args_error"] == "arguments are not valid JSON"
    assert fixed.args == {"table": 4, "time": "19:00"}
    assert booking.messages[-1].content == "Booked table 4 for 7pm."

    assert tickets.tool_calls[0].result == [3, 5]
    assert tickets.messages[-1].content == "There are 8 open tickets."


def test_openai_legacy_function_call() -> None:
    (episode,) = _episodes("openai_function_call.json", "openai")
    lookup, track = episode.tool_calls
    assert (lookup.tool, lookup.args) == ("lookup_order", {"order_id": "1042"})
    assert lookup.result == {"order_id": "1042", "status": "shipped"}
    assert track.args is None and track.raw_args == "not json"
    assert track.result == "In transit, arriving Friday"
    tool_messages = [m for m in episode.messages if m.role == "tool"]
    assert [m.call_id for m in tool_messages] == [lookup.call_id, track.call_id]
    assert tool_messages[0].metadata["source_role"] == "function"
    assert episode.task.instruction == "Where is order 1042?"


def test_anthropic_tool_use_and_tool_result_blocks() -> None:
    (episode,) = _episodes("anthropic_messages.json", "anthropic")
    order, customer, refund = episode.tool_calls
    assert episode.messages[0].role == "system"
    assert order.message_index == customer.message_index
    assert order.args == {"order_id": "77"}
    assert customer.result == {"customer_id": "c-9", "tier": "gold"}
    assert refund.args == {"order_id": "77", "amount": 120.5}
    assert refund.error == "Refund service unavailable"
    assert order.error is None
    roles = [m.role for m in episode.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "user",
                     "assistant"]
    assert episode.messages[-1].metadata["stop_reason"] == "end_turn"


def test_otlp_genai_spans_grouped_by_trace_with_real_latencies() -> None:
    weather, calendar = _episodes("otlp_genai.json", "otlp")

    assert weather.id == "5b8efff798038103d269b633813fc60c"
    paris, rome = weather.tool_calls
    assert paris.message_index == rome.message_index, "two tool_call parts in one message"
    assert paris.duration == pytest.approx(0.120, abs=1e-6)
    assert rome.duration == pytest.approx(0.500, abs=1e-6)
    assert paris.result == {"temp_c": 18}
    assert paris.raw_args == '{"city": "Paris"}' and paris.args == {"city": "Paris"}
    assert rome.error == "upstream timeout after 500 ms"
    assert rome.result == "timeout", "tool_call_response given as `result`"
    assert [m.role for m in weather.messages] == ["system", "user", "assistant", "tool", "tool",
                                                  "assistant"]
    assert weather.metadata["gen_ai.agent.name"] == "weather-bot"
    assert weather.metadata["resource"]["service.name"] == "weather-agent"

    (move,) = calendar.tool_calls
    assert move.tool == "move_event" and move.result == {"moved": True}
    assert move.duration == pytest.approx(0.035, abs=1e-6)
    assert calendar.messages[-1].content == "Done: your meeting is now at 4pm."
    assert calendar.task.instruction == "Move my 3pm to 4pm"


def test_openinference_tool_spans_across_lines() -> None:
    (episode,) = _episodes("openinference.jsonl", "otlp")
    stock, reserve = episode.tool_calls
    assert stock.call_id == "call_inv_1" and stock.message_index == 2
    assert stock.result == {"sku": "MUG-RED", "on_hand": 12}
    assert stock.duration == pytest.approx(0.045, abs=1e-6)
    assert reserve.error == "reservations are closed"
    assert reserve.args == {"sku": "MUG-RED", "qty": 2}
    assert reserve.message_index is None, "a tool span no message mentions"


def test_langsmith_runs() -> None:
    (episode,) = _episodes("langsmith_runs.json", "langsmith")
    lookup, reset = episode.tool_calls
    assert lookup.call_id == "call_ls_1" and lookup.args == {"user_id": "u-311"}
    assert lookup.result == {"user_id": "u-311", "email": "ana@example.com"}
    assert lookup.duration == pytest.approx(0.25)
    assert reset.error == "HTTPError: 503 Service Unavailable"
    assert lookup.message_index == reset.message_index
    assert episode.task.instruction == "Reset the password for user u-311"
    assert episode.outcome.labels["feedback_stats"]["correctness"]["avg"] == 1.0


def test_langfuse_observations() -> None:
    (episode,) = _episodes("langfuse_observations.json", "langfuse")
    order, shipping = episode.tool_calls
    assert order.call_id == "call_lf_1" and order.result == {"order_id": 55, "status": "packed"}
    assert order.duration == pytest.approx(0.08, abs=1e-6)
    assert shipping.error == "carrier rejected express for this zone"
    assert shipping.args == {"order_id": 55, "speed": "express"}
    assert shipping.raw_args == '{"order_id": 55, "speed": "express"}'
    assert episode.id == "trace-lf-1"


def test_format_can_be_forced_and_a_wrong_one_rejects_records() -> None:
    result = ingest(FIXTURES / "openai_tool_calls.jsonl", format="tau_bench")
    assert result.episodes == 0
    assert result.rejected == result.records_read == 3
    assert "traj" in result.rejections[0].reason


@pytest.mark.parametrize("requestor", ["system", 7, ["user"]])
def test_a_tau2_call_from_an_unknown_requestor_is_rejected_by_name(
    tmp_path: Path, requestor: object
) -> None:
    good = {"role": "assistant", "content": None, "timestamp": "2025-01-01T00:00:00",
            "tool_calls": [{"id": "c1", "name": "get", "arguments": {}, "requestor": "user"}]}
    bad = {**good, "tool_calls": [{**good["tool_calls"][0], "requestor": requestor}]}
    path = tmp_path / "results.jsonl"
    lines = [{"id": f"s{n}", "task_id": "1", "reward_info": {"reward": 1.0}, "messages": [m]}
             for n, m in enumerate([good, bad])]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")

    result = ingest(path, format="tau2", keep=True)

    assert (result.episodes, result.rejected) == (1, 1)
    assert result.collected[0].tool_calls[0].requestor == "user"
    reason = str(result.rejections[0])
    assert "results.jsonl:2 .messages[0]" in reason
    assert f"unknown requestor {requestor!r}" in reason
