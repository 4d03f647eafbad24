"""The shipped example traces ingest cleanly, with the tool calls and real durations they
record, and the generator that made them is deterministic."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from simforge.trace.ingest import ingest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"
OTLP, OPENAI = TRACES / "acme-otlp.json", TRACES / "acme-openai.jsonl"
SHIPPED_EPISODES = 40


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "acme_generate_traces", ROOT / "examples" / "generate_traces.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_files_are_small() -> None:
    assert OTLP.stat().st_size < 1_000_000 and OPENAI.stat().st_size < 1_000_000


def test_otlp_traces_ingest_cleanly_with_calls_and_durations() -> None:
    result = ingest(OTLP, keep=True)
    assert result.formats == {"otlp": SHIPPED_EPISODES}
    assert result.rejected == 0 and result.episodes == SHIPPED_EPISODES
    openai_lines = [orjson.loads(line) for line in OPENAI.read_bytes().splitlines()]
    issued = sum(len(m.get("tool_calls", [])) for e in openai_lines for m in e["messages"])
    assert result.tool_calls == issued > SHIPPED_EPISODES
    calls = [c for e in result.collected for c in e.tool_calls]
    assert all(c.duration is not None and 0 < c.duration < 60 for c in calls)
    assert any(c.error is not None for c in calls)  # faults and refusals are in the log
    assert len({c.tool for c in calls}) >= 40
    for episode in result.collected:
        assert episode.task.instruction
        assert episode.messages[-1].role == "assistant"


def test_openai_messages_ingest_cleanly() -> None:
    result = ingest(OPENAI)
    assert result.formats == {"openai": SHIPPED_EPISODES} and result.rejected == 0


def test_generator_is_deterministic(generator: ModuleType, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    generator.generate(6, first)
    generator.generate(6, second)
    for name in ("acme-otlp.json", "acme-openai.jsonl"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_schedule_mixes_agents_and_fault_profiles(generator: ModuleType) -> None:
    plan = generator.schedule(120)
    assert {agent for *_, agent, _ in plan} == set(generator.AGENTS)
    assert len({profile for *_, profile in plan}) >= 3
