"""Values inside records: timestamps in every spelling, and integers JSON allows but 64 bits do
not hold."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from simforge.trace.export import EpisodeWriter, to_native
from simforge.trace.formats._common import dumps, to_epoch
from simforge.trace.ingest import ingest

moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1))
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(moments, st.sampled_from(["seconds", "milliseconds", "microseconds", "auto"]))
def test_naive_iso_times_are_utc_seconds(moment: datetime, spec: str) -> None:
    text = moment.isoformat(timespec=spec)
    expected = datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
    assert to_epoch(text) == expected
    assert to_epoch(f"  {text}\n") == expected, "surrounding whitespace is ignored"


@given(moments, offsets)
def test_iso_times_with_an_offset_or_z_are_absolute(moment: datetime, offset: timezone) -> None:
    aware = moment.replace(tzinfo=offset)
    assert to_epoch(aware.isoformat()) == aware.timestamp()
    utc = moment.replace(tzinfo=UTC)
    assert to_epoch(utc.isoformat().replace("+00:00", "Z")) == utc.timestamp()


@given(st.floats(1e9, 4e9, allow_nan=False))
def test_numbers_and_numeric_strings_are_read_by_magnitude(seconds: float) -> None:
    assert to_epoch(seconds) == seconds
    whole = int(seconds)
    for scale in (1, 1_000, 1_000_000, 1_000_000_000):
        assert to_epoch(whole * scale) == float(whole)
        assert to_epoch(str(whole * scale)) == float(whole)


def test_what_is_not_a_time_is_none() -> None:
    for value in ["", "  ", "yesterday", "2025-13-40T99:00:00", "1234-5678", None, True, [], {}]:
        assert to_epoch(value) is None, value


def test_integers_beyond_64_bits_never_break_ingestion_or_export(tmp_path: Path) -> None:
    """A trace may hold integers no 64-bit type holds. Parsed from JSON they become floats
    (orjson's rule, in documents and lines alike); native episodes keep them exact; either way
    the episode is kept and exports in both forms."""
    big = 2**70 + 1
    trajectory = [{"task_id": 1, "trial": 0, "reward": 1.0, "info": {"order": big}, "traj": [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "find", "arguments": {"order": big}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "ok"},
    ]}]
    document = tmp_path / "trajectories.json"
    document.write_text(json.dumps(trajectory, indent=2))
    lines = tmp_path / "trajectories.jsonl"
    lines.write_text(json.dumps(trajectory[0]) + "\n")
    for path in (document, lines):
        (episode,) = ingest(path, keep=True).collected
        assert episode.metadata["order"] == float(big)
        assert episode.tool_calls[0].args == {"order": float(big)}

    native = tmp_path / "native.jsonl"
    exact = episode.model_copy(update={"metadata": {"order": big}})
    exact.tool_calls[0].args = {"order": big}
    native.write_bytes(to_native(exact) + b"\n")
    (back,) = ingest(native, keep=True).collected
    assert back.metadata["order"] == big and back.tool_calls[0].args == {"order": big}
    out = tmp_path / "openai.jsonl"
    with EpisodeWriter(out, "openai") as writer:
        writer.write(back)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    arguments = row["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"order": big}
    assert dumps({"order": big}) == f'{{"order":{big}}}'


def test_integers_beyond_64_bits_reach_quarantine_and_packs_as_json(tmp_path: Path) -> None:
    from simforge.synth.pipeline import synthesize
    from simforge.trace.episode import Episode, Message, Source, ToolCall

    big = 2**70 + 3
    calls = [ToolCall(call_id="c1", tool="get_order", args={"order_id": "O-1", "ref": big},
                      result={"order_id": "O-1", "ref": big, "status": "paid"},
                      message_index=1)]
    episode = Episode(id="e1", source=Source(format="native"), tool_calls=calls, messages=[
        Message(role="user", content="where is my order"),
        Message(role="assistant", tool_call_ids=["c1"]), Message(role="tool", call_id="c1"),
        Message(role="assistant", content="it is paid")])
    native = tmp_path / "episodes.jsonl"
    native.write_bytes(to_native(episode) + b"\n" + b'{"id": "broken", "ref": ' +
                       str(big).encode() + b"}\n")
    quarantine = tmp_path / "rejected.jsonl"

    result = ingest(native, keep=True, quarantine=quarantine)

    assert (result.episodes, result.rejected) == (1, 1)
    (entry,) = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert json.loads(entry["raw"]) == {"id": "broken", "ref": big}
    report = synthesize([], tmp_path / "pack", episodes=result.collected, holdout=0.0)
    assert report.train == 1
    replay = (tmp_path / "pack" / "replay.json.gz").read_bytes()
    assert str(big).encode() in gzip.decompress(replay)


def test_a_streamed_document_reads_on_past_an_integer_beyond_64_bits(tmp_path: Path) -> None:
    """ijson's C backend refuses such integers mid-stream; the rest of the file is not lost."""
    from simforge.trace.reader import Document

    items = [{"n": 1}, {"n": 2**70 + 1}, {"n": 3}, {"n": 4}]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(items, indent=1))
    records = list(Document(path, whole_limit=10).items("item"))
    assert [r.error for r in records] == [None] * 4
    assert [r.value["n"] for r in records] == [1, 2**70 + 1, 3, 4]
    assert [r.location.index for r in records] == [0, 1, 2, 3]
