"""Values inside records: timestamps in every spelling, and integers JSON allows but 64 bits do
not hold."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

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


def test_integers_beyond_64_bits_are_kept_and_exported(tmp_path: Path) -> None:
    big = 2**70 + 1
    trajectory = [{"task_id": 1, "trial": 0, "reward": 1.0, "info": {"order": big}, "traj": [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "find", "arguments": {"order": big}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "ok"},
    ]}]
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps(trajectory, indent=2))
    out = tmp_path / "episodes.jsonl"

    result = ingest(path, keep=True, out=out)

    assert (result.episodes, result.rejected) == (1, 0)
    episode = result.collected[0]
    assert episode.metadata["order"] == big
    assert episode.tool_calls[0].args == {"order": big}
    assert ingest(out, keep=True).collected == [episode], "native JSONL keeps them exact too"
    assert dumps({"order": big}) == f'{{"order":{big}}}'
