"""Ingestion of the real traces in ../shared/data: every episode and tool call is accounted for.

Expected figures come from ../shared/data/README.md (tau2 table; tau-bench: 200 runs, 1,164
calls, 14 tools, ids reused inside trajectories, errors as ``Error:`` strings).
"""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import orjson
import pytest

from simforge.trace import reader
from simforge.trace.episode import Episode
from simforge.trace.ingest import ingest

TAU2 = {
    # file stem: (runs, messages, tool calls, mean reward, error flags, user-side calls, max par)
    "gpt-4.1_airline_default_gpt-4.1_1trials": (20, 510, 148, 0.50, 1, 0, 12),
    "gpt-4.1_retail_defautl_gpt-4.1_1trials": (40, 1105, 299, 0.85, 12, 0, 6),
    "gpt-4.1_telecom_default_gpt-4.1_1trials": (40, 2238, 689, 0.45, 0, 482, 4),
    "gpt-4.1_telecom_no-user_gpt-4.1_1trials": (40, 1232, 626, 0.50, 2, 0, 5),
}
TAU_BENCH = "tau-bench/historical_trajectories/gpt-4o-airline.json"


def _collect(path: Path | str, **kwargs: object) -> list[Episode]:
    result = ingest(path, keep=True, **kwargs)  # type: ignore[arg-type]
    assert result.rejected == 0, result.rejections[:3]
    return result.collected


def _max_parallel(episode: Episode) -> int:
    counts = Counter(c.message_index for c in episode.tool_calls if c.message_index is not None)
    return max(counts.values(), default=0)


@pytest.mark.parametrize("stem", sorted(TAU2))
def test_tau2_results_file_gives_every_simulation_and_call(shared_data: Path, stem: str) -> None:
    runs, messages, calls, reward, errors, user_calls, parallel = TAU2[stem]
    episodes = _collect(shared_data / "tau2-bench/results" / f"{stem}.json")

    assert len(episodes) == runs
    assert sum(len(e.messages) for e in episodes) == messages
    all_calls = [c for e in episodes for c in e.tool_calls]
    assert len(all_calls) == calls
    assert sum(e.outcome.reward or 0 for e in episodes) / runs == pytest.approx(reward)
    assert sum(c.error is not None for c in all_calls) == errors
    assert sum(c.requestor == "user" for c in all_calls) == user_calls
    assert max(_max_parallel(e) for e in episodes) == parallel
    assert all(m.timestamp is not None for e in episodes for m in e.messages)
    assert all(c.started_at is not None and c.ended_at is not None for c in all_calls)
    assert all(c.duration is not None and c.duration >= 0 for c in all_calls)
    for episode in episodes:
        assert episode.source.format == "tau2"
        assert episode.task.instruction
        assert episode.outcome.labels["termination_reason"] in ("user_stop", "agent_stop")
        assert "reward_basis" in episode.outcome.labels
        assert len({c.call_id for c in episode.tool_calls}) == len(episode.tool_calls)


def test_tau_bench_airline_trajectories(shared_data: Path) -> None:
    episodes = _collect(shared_data / TAU_BENCH)

    calls = [c for e in episodes for c in e.tool_calls]
    assert len(episodes) == 200
    assert len(calls) == 1164
    assert len({c.tool for c in calls}) == 14
    assert {e.source.format for e in episodes} == {"tau_bench"}
    for episode in episodes:
        assert len({c.call_id for c in episode.tool_calls}) == len(episode.tool_calls)
    assert sum(c.source_call_id is not None for c in calls) > 0
    errors = [c for c in calls if c.error is not None]
    assert errors and all(c.error.startswith("Error:") for c in errors)  # type: ignore[union-attr]
    assert sum(e.outcome.success is True for e in episodes) == sum(
        e.outcome.reward == 1.0 for e in episodes)


def test_tau_bench_pairs_each_result_with_the_call_just_before_it(shared_data: Path) -> None:
    raw = orjson.loads((shared_data / TAU_BENCH).read_bytes())
    episodes = _collect(shared_data / TAU_BENCH)
    for record, episode in zip(raw, episodes, strict=True):
        calls = {c.call_id: c for c in episode.tool_calls}
        tool_messages = [m for m in record["traj"] if m["role"] == "tool"]
        answered = [m for m in episode.messages if m.role == "tool"]
        assert len(tool_messages) == len(answered)
        for source, message in zip(tool_messages, answered, strict=True):
            call = calls[message.call_id]  # type: ignore[index]
            assert call.raw_result == source["content"]
            assert call.tool == source["name"]
            assert (call.source_call_id or call.call_id) == source["tool_call_id"]


def test_reused_call_ids_are_made_unique_and_the_original_kept(shared_data: Path) -> None:
    raw = orjson.loads((shared_data / TAU_BENCH).read_bytes())
    repeats = reused = 0
    for record in raw:
        ids = Counter(tc["id"] for m in record["traj"] for tc in m.get("tool_calls") or [])
        repeats += sum(n - 1 for n in ids.values())
        reused += sum(n > 1 for n in ids.values())
    assert reused == 71, "the data README's figure"
    calls = [c for e in _collect(shared_data / TAU_BENCH) for c in e.tool_calls]
    renamed = [c for c in calls if c.source_call_id is not None]
    assert len(renamed) == repeats
    assert all(c.call_id.startswith(f"{c.source_call_id}#") for c in renamed)


def test_gzip_and_jsonl_forms_give_the_same_episodes(shared_data: Path, tmp_path: Path) -> None:
    source = shared_data / "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
    gz = tmp_path / "airline.json.gz"
    gz.write_bytes(gzip.compress(source.read_bytes()))
    plain = _collect(source)
    assert [e.id for e in _collect(gz)] == [e.id for e in plain]

    lines = tmp_path / "tau_bench.jsonl"
    records = orjson.loads((shared_data / TAU_BENCH).read_bytes())[:30]
    lines.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    episodes = _collect(lines)
    assert len(episodes) == 30
    assert sum(len(e.tool_calls) for e in episodes) == sum(
        len(m.get("tool_calls") or []) for r in records for m in r["traj"])


def test_large_documents_stream_with_the_same_result(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the whole-document limit the incremental parser is used: same episodes."""
    source = shared_data / "tau2-bench/results/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json"
    loaded = _collect(source)
    monkeypatch.setattr(reader, "WHOLE_DOCUMENT_LIMIT", 4096)
    streamed = _collect(source)
    assert [e.model_dump() for e in streamed] == [e.model_dump() for e in loaded]
