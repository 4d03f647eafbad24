"""Reading files: layouts, gzip, locations of bad records, and the quarantine file."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import orjson
import pytest

from simforge.trace import reader
from simforge.trace.detect import sniff_layout
from simforge.trace.ingest import ingest
from simforge.trace.quarantine import truncate
from simforge.trace.reader import Document

FIXTURES = Path(__file__).parent / "fixtures"
MESSAGE = {"role": "user", "content": "hi"}


def _conversation(n: int) -> bytes:
    return orjson.dumps({"id": f"c{n}", "messages": [MESSAGE, {"role": "assistant",
                                                               "content": f"hello {n}"}]})


@pytest.mark.parametrize(
    ("text", "layout"),
    [
        (b'{"a": 1}\n{"a": 2}\n', "jsonl"),
        (b'[1]\n[2]\n', "jsonl"),
        (b'{\n  "a": 1\n}\n', "object"),
        (b'[\n  {"a": 1},\n  {"a": 2}\n]', "array"),
        (b'{"a": 1}', "object"),
        (b'{"a": 1, BROKEN\n{"a": 2}\n', "jsonl"),
        (b"   \n\n", "empty"),
        (b"hello", "unknown"),
        (b'\xef\xbb\xbf{"a": 1}\n{"a": 2}', "jsonl"),
    ],
)
def test_layout_is_sniffed_from_the_first_lines(text: bytes, layout: str) -> None:
    assert sniff_layout(io.BytesIO(text)) == layout


def test_gzip_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "conversations.data"
    path.write_bytes(gzip.compress(b"\n".join(_conversation(i) for i in range(3))))
    result = ingest(path)
    assert (result.episodes, result.formats) == (3, {"openai": 3})


def test_bad_jsonl_lines_are_quarantined_with_line_offset_and_reason(tmp_path: Path) -> None:
    good = [_conversation(i) for i in range(4)]
    lines = [good[0], b'{"id": "x", "messages": [', good[1], b"", good[2], b'{"messages": 7}',
             good[3]]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    quarantine = tmp_path / "out" / "rejected.jsonl"

    result = ingest(path, quarantine=quarantine)

    assert (result.episodes, result.rejected, result.records_read) == (4, 2, 6)
    entries = [orjson.loads(line) for line in quarantine.read_bytes().splitlines()]
    assert [e["line"] for e in entries] == [2, 6]
    assert entries[0]["offset"] == len(good[0]) + 1
    assert entries[0]["file"] == str(path)
    assert entries[0]["reason"].startswith("invalid JSON")
    assert entries[0]["raw"] == '{"id": "x", "messages": ['
    assert "not an array" in entries[1]["reason"]
    assert entries[1]["format"] == "openai"


def test_a_broken_json_document_keeps_the_records_before_the_error(tmp_path: Path) -> None:
    items = b",\n".join(_conversation(i) for i in range(5))
    path = tmp_path / "broken.json"
    path.write_bytes(b"[\n" + items + b",\n{\"id\": oops}\n]")
    result = ingest(path, quarantine=tmp_path / "q.jsonl")
    assert result.episodes == 5
    assert result.rejected == 1
    rejection = result.rejections[0]
    assert rejection.location is not None and rejection.location.offset is not None
    assert rejection.location.index == 5


def test_unreadable_inputs_are_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "text.json").write_bytes(b"not json at all")
    (tmp_path / "other.json").write_bytes(b'{"unrelated": [1, 2, 3]}')
    result = ingest([tmp_path / "missing.jsonl", *sorted(tmp_path.iterdir())])
    assert result.episodes == 0 and not result.ok
    reasons = [r.reason for r in result.rejections]
    assert any("cannot open" in r for r in reasons)
    assert any("not JSON" in r for r in reasons)
    assert any("unrecognised trace format" in r for r in reasons)
    assert result.records_kept + result.rejected == result.records_read == 3


def test_documents_over_the_limit_are_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "WHOLE_DOCUMENT_LIMIT", 100)
    doc = Document(FIXTURES / "otlp_genai.json")
    assert doc.loaded() is None
    assert doc.skeleton()["resourceSpans"][0]["resource"]["attributes"][0]["key"] == \
        "service.name"
    assert ingest(FIXTURES / "otlp_genai.json").episodes == 2


def test_long_raw_records_are_truncated_in_the_middle() -> None:
    text, cut = truncate("a" * 3000 + "b" * 3000)
    assert cut and text.startswith("a" * 2000) and text.endswith("b" * 500)
    assert "3500 characters omitted" in text
    assert truncate("short") == ("short", False)
