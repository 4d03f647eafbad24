"""Properties: native JSONL round-trips exactly; corrupted input never escapes quarantine."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.trace.episode import (
    Episode,
    InjectedFault,
    Message,
    Outcome,
    SimulationRecord,
    Source,
    TaskSpec,
    ToolCall,
    trusted,
)
from simforge.trace.export import to_native, write_episodes
from simforge.trace.formats._conversation import Conversation
from simforge.trace.ingest import IngestResult, ingest, iter_episodes

FIXTURES = Path(__file__).parent / "fixtures"

text = st.text(max_size=12)
json_scalar = st.none() | st.booleans() | st.integers(-10**6, 10**6) | text | st.floats(
    allow_nan=False, allow_infinity=False, width=64)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_object = st.dictionaries(text, json_value, max_size=3)
times = st.none() | st.floats(0, 2e9, allow_nan=False)

tool_calls = st.builds(
    ToolCall,
    call_id=st.uuids().map(str), tool=st.sampled_from(["get", "put", "search"]),
    args=st.none() | json_object, raw_args=st.none() | text, result=json_value,
    raw_result=st.none() | text, error=st.none() | text, started_at=times, ended_at=times,
    requestor=st.sampled_from(["assistant", "user", "environment"]),
    source_call_id=st.none() | text, message_index=st.none() | st.integers(0, 50),
    metadata=json_object,
)
messages = st.builds(
    Message, role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=st.none() | text, tool_call_ids=st.lists(text, max_size=2),
    call_id=st.none() | text, timestamp=times, metadata=json_object,
)
episodes = st.builds(
    Episode,
    id=text, source=st.builds(Source, format=st.sampled_from(["tau2", "otlp"]),
                              path=st.none() | text, record=st.none() | text),
    task=st.builds(TaskSpec, id=st.none() | text, instruction=st.none() | text,
                   user_turns=st.lists(text, max_size=2), metadata=json_object),
    messages=st.lists(messages, max_size=4), tool_calls=st.lists(tool_calls, max_size=4),
    outcome=st.builds(Outcome, reward=st.none() | st.floats(0, 1),
                      success=st.none() | st.booleans(), labels=json_object),
    metadata=json_object,
    simulation=st.none() | st.builds(SimulationRecord, scenario=text, task=text,
                                     seed=st.integers(0, 2**31), sim_time=st.floats(0, 1e6)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(episodes, min_size=1, max_size=3))
def test_episode_to_native_to_episode_is_the_identity(originals: list[Episode]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episodes.jsonl"
        write_episodes(originals, path)
        back = list(iter_episodes(path, format="native"))
        detected = list(iter_episodes(path))
    assert back == originals
    assert detected == originals
    assert [to_native(e) for e in back] == [to_native(e) for e in originals]


def _seed_lines() -> list[bytes]:
    """Good records of several formats, one per line."""
    lines = (FIXTURES / "openai_tool_calls.jsonl").read_bytes().splitlines()
    anthropic = orjson.loads((FIXTURES / "anthropic_messages.json").read_bytes())
    otlp = (FIXTURES / "openinference.jsonl").read_bytes().splitlines()
    tau2_like = {"id": "s1", "task_id": "7", "reward_info": {"reward": 1.0},
                 "termination_reason": "user_stop", "messages": [
                     {"role": "assistant", "content": None, "timestamp": "2025-01-01T00:00:00",
                      "tool_calls": [{"id": "c1", "name": "get", "arguments": {"x": 1},
                                      "requestor": "assistant"}]},
                     {"role": "tool", "id": "c1", "content": "{}", "error": False,
                      "requestor": "assistant", "timestamp": "2025-01-01T00:00:01"}]}
    native = to_native(Episode(id="n1", source=Source(format="x"),
                               tool_calls=[ToolCall(call_id="a", tool="t")]))
    tau_bench_like = {"task_id": 3, "trial": 0, "reward": 0.0, "info": {"task": {
        "instruction": "cancel it"}}, "traj": [
            {"role": "system", "content": "policy"}, {"role": "user", "content": "cancel it"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "get", "arguments": '{"x": 1}'}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get", "content": '{"ok": true}'},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "cancel", "arguments": "{not json"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "cancel", "content": "Error: no"}]}
    return {"openai": lines, "anthropic": [orjson.dumps(a) for a in anthropic],
            "otlp": otlp, "tau2": [orjson.dumps(tau2_like)], "native": [native],
            "tau_bench": [orjson.dumps(tau_bench_like)]}


SEEDS = _seed_lines()


def _mutate_value(value: Any, data: st.DataObject) -> Any:
    """Replace one nested value by random JSON, or delete a key."""
    if isinstance(value, dict) and value:
        key = data.draw(st.sampled_from(sorted(value)))
        action = data.draw(st.sampled_from(["replace", "delete", "recurse"]))
        copy = dict(value)
        if action == "delete":
            del copy[key]
        elif action == "replace":
            copy[key] = data.draw(json_value)
        else:
            copy[key] = _mutate_value(value[key], data)
        return copy
    if isinstance(value, list) and value:
        index = data.draw(st.integers(0, len(value) - 1))
        copy = list(value)
        copy[index] = _mutate_value(value[index], data) if data.draw(st.booleans()) else \
            data.draw(json_value)
        return copy
    return data.draw(json_value)


def _corrupt(line: bytes, data: st.DataObject) -> bytes:
    kind = data.draw(st.sampled_from(["none", "truncate", "bytes", "structure", "structure"]))
    if kind == "truncate":
        return line[: data.draw(st.integers(1, max(1, len(line) - 1)))]
    if kind == "bytes":
        pos = data.draw(st.integers(0, len(line) - 1))
        return line[:pos] + data.draw(st.binary(min_size=1, max_size=4)).replace(b"\n", b"") + \
            line[pos + 1:]
    if kind == "structure":
        value = _mutate_value(orjson.loads(line), data)
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    return line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_records_never_raise_and_every_record_is_counted(data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(sorted(SEEDS)))
    seeds = SEEDS[fmt]
    count = data.draw(st.integers(1, 6))
    lines = [_corrupt(data.draw(st.sampled_from(seeds)), data) for _ in range(count)]
    lines = [line for line in lines if line.strip()]
    forced = data.draw(st.sampled_from([None, fmt]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        result: IngestResult = ingest(path, format=forced, quarantine=Path(tmp) / "q.jsonl",
                                      keep=True)
        entries = (Path(tmp) / "q.jsonl").read_bytes().splitlines() if result.rejected else []
        quarantined = sum(orjson.loads(e).get("records", 1) for e in entries)
        with patch.object(Conversation, "built", _validated_instead):
            validated = ingest(path, format=forced, keep=True)
    assert result.records_kept + result.rejected == result.records_read
    assert quarantined == result.rejected
    if forced is not None and fmt != "otlp":
        assert result.records_read == len(lines), "one record per JSONL line"
    assert_same_as_validated(result.collected, validated.collected)
    assert (result.records_kept, result.rejected) == (validated.records_kept, validated.rejected)


def _validated_instead(conv: Conversation) -> tuple[list[Any], list[Any]]:
    """``Conversation.built`` replaced: the dicts go through pydantic's validation instead."""
    return conv.messages, conv.calls


def assert_same_as_validated(built: list[Episode], validated: list[Episode]) -> None:
    """Models that adapters build without validating them again (``Conversation.built``) are
    exactly what validating the same dicts gives: values, types, defaults, set fields."""
    assert len(built) == len(validated)
    for ours, theirs in zip(built, validated, strict=True):
        assert ours == theirs
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a value of the wrong type warns when serialised
            assert ours.model_dump_json() == theirs.model_dump_json()
        pairs = zip([*ours.messages, *ours.tool_calls], [*theirs.messages, *theirs.tool_calls],
                    strict=True)
        for model, reference in pairs:
            assert type(model) is type(reference)
            assert model.model_fields_set == reference.model_fields_set
            assert repr(model) == repr(reference)


def test_models_built_without_validation_are_the_validated_ones_on_the_fixtures() -> None:
    paths = [FIXTURES, Path(__file__).parents[2] / "examples" / "traces"]
    built = ingest(paths, keep=True)
    with patch.object(Conversation, "built", _validated_instead):
        validated = ingest(paths, keep=True)
    assert {"openai", "tau_bench", "tau2"} & set(built.formats)
    assert_same_as_validated(built.collected, validated.collected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_records_in_one_document_never_raise_and_are_counted(
    data: st.DataObject,
) -> None:
    """The same corruptions inside one pretty-printed JSON array: the whole-document parser and
    the streaming re-read after a syntax error keep the same counting rule."""
    fmt = data.draw(st.sampled_from(sorted(set(SEEDS) - {"otlp"})))
    count = data.draw(st.integers(1, 5))
    lines = [_corrupt(data.draw(st.sampled_from(SEEDS[fmt])), data) for _ in range(count)]
    lines = [line for line in lines if line.strip()]
    body = b"[\n  " + b",\n  ".join(lines) + b"\n]\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.json"
        path.write_bytes(body)
        result: IngestResult = ingest(path, format=fmt, quarantine=Path(tmp) / "q.jsonl")
        entries = (Path(tmp) / "q.jsonl").read_bytes().splitlines() if result.rejected else []
        quarantined = sum(orjson.loads(e).get("records", 1) for e in entries)
    assert result.records_kept + result.rejected == result.records_read
    assert quarantined == result.rejected
    assert result.episodes <= result.records_kept


def test_models_built_without_validation_are_the_validated_ones_on_real_traces(
    shared_data: Path,
) -> None:
    paths = [shared_data / "tau2-bench" / "results",
             shared_data / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"]
    built = ingest(paths, keep=True)
    with patch.object(Conversation, "built", _validated_instead):
        validated = ingest(paths, keep=True)
    assert built.episodes == validated.episodes == 340
    assert_same_as_validated(built.collected, validated.collected)


injected = st.builds(
    InjectedFault, kind=st.sampled_from(["latency", "timeout"]), tool=text,
    call_id=st.none() | text, call_index=st.integers(0, 10**6), sim_time=st.floats(0, 1e6),
    rule=st.none() | text, params=json_object, observed=json_value,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(messages, tool_calls, injected), st.data())
def test_a_trusted_build_is_what_validation_gives(model: Any, data: st.DataObject) -> None:
    """``trusted`` (no second validation) against ``model_validate`` of the same fields, any
    subset of them given: values, defaults, set fields and field order."""
    given_fields = data.draw(st.sets(st.sampled_from(sorted(type(model).model_fields))))
    required = {n for n, f in type(model).model_fields.items() if f.is_required()}
    fields = {name: getattr(model, name) for name in sorted(given_fields | required)}
    built = trusted(type(model))(dict(fields))
    reference = type(model).model_validate(dict(fields))
    assert built == reference
    assert built.model_fields_set == reference.model_fields_set == set(fields)
    assert repr(built) == repr(reference)
    assert built.model_dump_json() == reference.model_dump_json()
