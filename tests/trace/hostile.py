"""Hostile trace files, made from good records: what the fuzz tests and the campaign feed ingestion.

A case is a file (bytes, a name, a forced format or none) plus what must come out of it: the
intact records, which must all survive whatever their neighbours are. The damage kinds are the
ones seen in the wild or in the issue: a byte order mark, a bad first record, ``NaN`` and
``Infinity`` (Python's ``json.dump`` default), deep nesting, bracket bombs, garbage lines,
integers beyond 64 bits, and truncations at every structural boundary of a real record.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from simforge.trace.episode import Episode
from simforge.trace.ingest import IngestResult, ingest

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile"
CONVERSATION_FORMATS = ("openai", "anthropic", "tau2", "tau_bench")

GARBAGE: tuple[bytes, ...] = (
    b"[]", b"{}", b'{"messages": []}', b"null", b"0", b'"text"', b"[[]]", b'{"task_id": 0}',
    b'{"traj": 5, "task_id": 1}', b'{"messages": {}}', b"{", b"]", b"}{", b"\x00\x01\x02",
    b"\xff\xfe not utf-8", b'{"a": NaN', b"[" * 300, b'{"role": "user"}', b"true",
)


def seed_records() -> dict[str, list[Any]]:
    """Good records per conversation format: the fixtures, plus small hand-made tau records."""
    openai = [orjson.loads(line) for line in
              (FIXTURES / "openai_tool_calls.jsonl").read_bytes().splitlines()]
    anthropic = orjson.loads((FIXTURES / "anthropic_messages.json").read_bytes())
    tau2 = [{"id": f"s{i}", "task_id": str(i), "reward_info": {"reward": 1.0},
             "termination_reason": "user_stop", "messages": [
                 {"role": "user", "content": f"help {i}", "timestamp": "2025-01-01T00:00:00"},
                 {"role": "assistant", "content": None, "timestamp": "2025-01-01T00:00:01",
                  "tool_calls": [{"id": f"c{i}", "name": "get", "arguments": {"x": i},
                                  "requestor": "assistant"}]},
                 {"role": "tool", "id": f"c{i}", "content": '{"ok": true, "n": [1, 2]}',
                  "error": False, "requestor": "assistant", "timestamp": "2025-01-01T00:00:02"},
                 {"role": "assistant", "content": f"done {i}",
                  "timestamp": "2025-01-01T00:00:03"}]} for i in range(3)]
    tau_bench = [{"task_id": i, "trial": 0, "reward": float(i % 2), "info": {"task": {
        "instruction": f"cancel order {i}", "actions": [{"name": "cancel", "kwargs": {"id": i}}]}},
        "traj": [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": f"cancel order {i}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "get", "arguments": json.dumps({"id": i})}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get",
             "content": json.dumps({"id": i, "items": [{"sku": "a"}]})},
            {"role": "assistant", "content": "cancelled"}]} for i in range(3)]
    return {"openai": openai, "anthropic": anthropic, "tau2": tau2, "tau_bench": tau_bench}


def real_records(data: Path | None) -> dict[str, list[Any]]:
    """Real records from the shared data, when present (tau-bench and one tau2 file)."""
    if data is None or not data.is_dir():
        return {}
    out: dict[str, list[Any]] = {}
    tau_bench = data / "tau-bench/historical_trajectories/gpt-4o-airline.json"
    if tau_bench.is_file():
        out["tau_bench"] = orjson.loads(tau_bench.read_bytes())
    tau2 = data / "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
    if tau2.is_file():
        out["tau2"] = orjson.loads(tau2.read_bytes())["simulations"]
    return out


def signature(episode: Episode) -> bytes:
    """What an intact record's episode is, wherever in a file it sits (ids and source, which
    name the position, left out)."""
    return orjson.dumps([episode.model_dump(mode="json", include={"messages", "tool_calls",
                                                                  "outcome", "task"})],
                        option=orjson.OPT_SORT_KEYS)


_expected: dict[tuple[str, bytes], bytes | None] = {}


def expected_signature(fmt: str, record: Any, tmp: Path) -> bytes | None:
    """The signature of one record ingested on its own (``None`` if it is not kept alone)."""
    raw = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    key = (fmt, raw)
    if key not in _expected:
        path = tmp / "alone.jsonl"
        path.write_bytes(orjson.dumps(record) + b"\n")
        result = ingest(path, format=fmt, keep=True)
        _expected[key] = signature(result.collected[0]) if result.episodes == 1 else None
    return _expected[key]


@dataclass
class Case:
    name: str
    data: bytes
    fmt: str
    forced: bool
    intact: list[Any] = field(default_factory=list)
    """Records written exactly as they were: each must come out as an episode."""
    total: int = 0
    """Records written, intact or not."""
    guesswork: bool = False
    """A compact document whose first record is damaged: with no good record read yet, where
    the next record begins is a guess (see ``simforge.trace.scan``); its losses are counted
    apart."""


# --- damage -----------------------------------------------------------------------------------

def boundaries(text: bytes) -> list[int]:
    """Every structural boundary of a JSON text: after each bracket, comma and colon, and
    after each string's closing quote."""
    cuts: set[int] = set()
    for match in re.finditer(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', text):
        cuts.add(match.end())
        cuts.add(match.start())
    return sorted(c for c in cuts if 0 < c < len(text))


def deep(levels: int, kind: str = "array") -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if kind == "array" else {"a": value}
    return value


def deep_text(levels: int, kind: str = "array") -> bytes:
    if kind == "array":
        return b"[" * levels + b"1" + b"]" * levels
    return b'{"a":' * levels + b"1" + b"}" * levels


def with_nan(record: Any, rng: random.Random) -> bytes:
    """The record as ``json.dumps`` writes it, with a ``NaN`` or ``Infinity`` added."""
    copy = json.loads(json.dumps(record))
    if isinstance(copy, dict):
        copy[rng.choice(["score", "reward_extra", "latency"])] = rng.choice(
            [float("nan"), float("inf"), float("-inf")])
    else:
        copy.append({"role": "assistant", "content": "x", "score": float("nan")})
    return json.dumps(copy).encode()


def with_deep_value(record: Any, rng: random.Random, levels: int) -> bytes:
    """The record with a deeply nested value in a free-form place (metadata, or a JSON string
    that an adapter parses), written as text: no serialiser writes such depth."""
    nested = deep_text(levels, rng.choice(["array", "object"]))
    marker = "__deep_value__"
    if isinstance(record, dict):
        copy: Any = {**record, "extra_meta": marker}
    else:
        copy = [*record, {"role": "user", "content": "x", "deep": marker}]
    text = orjson.dumps(copy)
    value = orjson.dumps(nested.decode()) if rng.random() < 0.5 else nested
    return text.replace(orjson.dumps(marker), value, 1)


def with_huge_integer(record: Any, rng: random.Random) -> bytes:
    copy = json.loads(json.dumps(record))
    big = rng.choice([2**64, -(2**70), 10**40])
    if isinstance(copy, dict):
        copy["big"] = big
    return json.dumps(copy).encode()


def damaged_record(record: Any, rng: random.Random) -> bytes:
    """One damaged version of a record's text."""
    text = orjson.dumps(record)
    kind = rng.choice(["truncate", "truncate", "nan", "deep", "bomb", "garbage", "bytes",
                       "huge_int", "falsy_calls", "empty"])
    if kind == "truncate":
        cuts = boundaries(text)
        return text[:rng.choice(cuts)] if cuts else text[:1]
    if kind == "nan":
        return with_nan(record, rng)
    if kind == "deep":
        return with_deep_value(record, rng, rng.choice([129, 200, 300, 1100, 5000]))
    if kind == "bomb":
        return rng.choice([b"[", b"{\"a\":", b"[{\"a\":"]) * rng.choice([300, 3000, 30000])
    if kind == "garbage":
        return rng.choice(GARBAGE)
    if kind == "bytes":
        pos = rng.randrange(len(text))
        return text[:pos] + bytes(rng.randrange(256) for _ in range(3)) + text[pos + 3:]
    if kind == "huge_int":
        return with_huge_integer(record, rng)
    if kind == "falsy_calls":
        return re.sub(rb'"tool_calls":\s*\[', rng.choice([b'"tool_calls": "", "x": [',
                                                          b'"tool_calls": 0, "x": [',
                                                          b'"tool_calls": {}, "x": [']),
                      text, count=1)
    return b'{"messages": []}'


def survives_intact(kind: str) -> bool:
    """Damage kinds whose record stays readable and keeps its episode."""
    return kind in ("nan", "huge_int")


# --- layouts ----------------------------------------------------------------------------------

def as_jsonl(texts: list[bytes], rng: random.Random) -> bytes:
    body = b"\n".join(t.replace(b"\n", b" ") for t in texts) + b"\n"
    if rng.random() < 0.15:
        body = b"\xef\xbb\xbf" + body
    return body


def as_array(texts: list[bytes], pretty: bool, rng: random.Random) -> bytes:
    if pretty:
        parts = [_indent(t) for t in texts]
        body = b"[\n  " + b",\n  ".join(parts) + b"\n]\n"
    else:
        body = b"[" + b",".join(t.replace(b"\n", b" ") for t in texts) + b"]"
    if rng.random() < 0.15:
        body = b"\xef\xbb\xbf" + body
    return body


def _indent(text: bytes) -> bytes:
    """A record's text as ``json.dump(indent=2)`` would place it inside an array (valid JSON
    re-indented; damaged text kept on one line)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text.replace(b"\n", b" ")
    try:
        return json.dumps(value, indent=2).replace("\n", "\n  ").encode()
    except (ValueError, RecursionError):
        return text


def make_case(rng: random.Random, seeds: dict[str, list[Any]], index: int) -> Case:
    """A file of 3 to 12 records of one format, some damaged, in one layout."""
    fmt = rng.choice(sorted(seeds))
    shape = _shape(rng.choice(seeds[fmt]))
    pool = [r for r in seeds[fmt] if _shape(r) == shape]  # one schema a file, as in the wild
    count = rng.randint(3, 12)
    texts: list[bytes] = []
    intact: list[Any] = []
    damage_rate = rng.choice([0.1, 0.3, 0.5])
    head_damaged = False
    for position in range(count):
        record = rng.choice(pool)
        first_bad = position == 0 and rng.random() < 0.25
        if first_bad or rng.random() < damage_rate:
            texts.append(damaged_record(record, rng))
            head_damaged = head_damaged or position == len(intact)
        else:
            texts.append(orjson.dumps(record))
            intact.append(record)
    layout = rng.choice(["jsonl", "jsonl", "pretty", "compact"])
    if fmt == "anthropic" and layout != "jsonl":
        layout = "jsonl"  # an array of Anthropic conversations reads the same; keep it simple
    if layout == "jsonl":
        data = as_jsonl(texts, rng)
        name = f"case{index}.jsonl"
    else:
        data = as_array(texts, layout == "pretty", rng)
        name = f"case{index}.json"
    forced = rng.random() < 0.3
    return Case(name, data, fmt, forced, intact, count, layout == "compact" and head_damaged)


def _shape(record: Any) -> tuple[str, ...]:
    """A record's type and first key: records of one file share it (a compact document is
    resynchronised at the next record that begins like one seen before)."""
    if isinstance(record, dict):
        return ("object", next(iter(record), ""))
    return ("array",)


def hostile_corpus() -> list[Path]:
    return sorted(p for p in HOSTILE.iterdir() if p.is_file() and p.suffix not in (".md", ".py"))


# --- checks -----------------------------------------------------------------------------------

def check(result: IngestResult, quarantine: Path | None = None) -> None:
    """What holds for every input: counts add up, and the quarantine holds every rejection."""
    assert result.records_kept + result.rejected == result.records_read, result
    assert result.episodes <= result.records_kept or result.formats.keys() & {
        "otlp", "langsmith", "langfuse"}
    if quarantine is not None:
        entries = quarantine.read_bytes().splitlines() if quarantine.exists() else []
        assert sum(orjson.loads(e).get("records", 1) for e in entries) == result.rejected


def lost_intact(case: Case, result: IngestResult, tmp: Path) -> int:
    """How many intact records of ``case`` have no episode in ``result``."""
    if not case.intact:
        return 0
    if not case.forced and (len(case.intact) < 2 or 2 * len(case.intact) <= case.total):
        return 0  # a file mostly of damage: the format it is detected as may differ
    have: dict[bytes, int] = {}
    for episode in result.collected:
        key = signature(episode)
        have[key] = have.get(key, 0) + 1
    lost = 0
    for record in case.intact:
        want = expected_signature(case.fmt, record, tmp)
        if want is None:
            continue
        if have.get(want, 0) > 0:
            have[want] -= 1
        else:
            lost += 1
    return lost


def run_case(case: Case, tmp: Path) -> tuple[IngestResult, int]:
    """Ingest one case; ``(result, intact records lost)``."""
    path = tmp / case.name
    path.write_bytes(case.data)
    quarantine = tmp / "q.jsonl"
    result = ingest(path, format=case.fmt if case.forced else None, quarantine=quarantine,
                    keep=True)
    check(result, quarantine)
    return result, lost_intact(case, result, tmp)


def cases(seed: int, count: int, seeds: dict[str, list[Any]]) -> Iterable[Case]:
    rng = random.Random(seed)
    for index in range(count):
        yield make_case(rng, seeds, index)
