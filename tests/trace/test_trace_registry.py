"""The format registry: third-party adapters, and plugins that fail loudly and by name."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from simforge.trace import registry
from simforge.trace.detect import Sample
from simforge.trace.episode import Episode, Source
from simforge.trace.errors import FormatPluginError, Location
from simforge.trace.ingest import ingest
from simforge.trace.registry import FormatAdapter, formats


class CsvLikeFormat(FormatAdapter):
    name = "acme_log"

    def sniff(self, sample: Sample) -> float:
        return 1.0 if isinstance(sample.value, dict) and "acme" in sample.value else 0.0

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        return (Episode(id=str(record["acme"]), source=Source(format=self.name)),)


class FakeEntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.value = f"acme_plugin:{name}"
        self._target = target

    def load(self) -> Any:
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(registry, "_registry", dict(formats()))
    monkeypatch.setattr(registry, "_plugins_loaded", False)

    def install(*entries: FakeEntryPoint) -> None:
        monkeypatch.setattr(registry, "entry_points", lambda group: list(entries))

    return install


def test_builtin_formats_are_all_registered() -> None:
    assert set(formats()) >= {"native", "openai", "anthropic", "tau_bench", "tau2", "otlp",
                              "langsmith", "langfuse"}


def test_a_plugin_format_is_detected_and_used(fresh_registry: Any, tmp_path: Path) -> None:
    fresh_registry(FakeEntryPoint("acme_log", CsvLikeFormat))
    path = tmp_path / "acme.jsonl"
    path.write_text('{"acme": 1}\n{"acme": 2}\n')
    result = ingest(path)
    assert result.formats == {"acme_log": 2}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (ImportError("No module named 'acme_plugin'"), "failed to import: ImportError"),
        (object, "is not a subclass"),
        (type("NoName", (FormatAdapter,), {}), "has no `name`"),
        (type("NoParse", (FormatAdapter,), {"name": "x", "sniff": lambda s, v: 0.0}),
         "does not implement `parse`"),
    ],
)
def test_a_broken_plugin_gives_one_error_naming_it(
    fresh_registry: Any, target: Any, message: str
) -> None:
    fresh_registry(FakeEntryPoint("broken", target))
    with pytest.raises(FormatPluginError) as info:
        formats()
    assert "broken (acme_plugin:broken)" in str(info.value)
    assert message in str(info.value)


def test_a_plugin_cannot_take_a_builtin_name(fresh_registry: Any) -> None:
    clash = type("Clash", (CsvLikeFormat,), {"name": "otlp"})
    fresh_registry(FakeEntryPoint("otlp", clash))
    with pytest.raises(FormatPluginError, match="reuses the built-in format name 'otlp'"):
        formats()


def test_the_public_api_is_exported() -> None:
    import simforge.trace as trace

    for name in trace.__all__:
        assert hasattr(trace, name), name
    assert {"ingest", "iter_episodes", "FormatAdapter", "Episode"} <= set(trace.__all__)
