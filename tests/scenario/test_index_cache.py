"""The registry's index remembers a validated scenario file's id on disk, keyed by the file's
bytes: a new process does not validate every file again, a changed file is validated again, and
a file that does not validate is never remembered."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.scenario import ScenarioError, ScenarioRegistry
from simforge.scenario import registry as registry_module

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = (FIXTURES / "scenarios" / "mini.yaml").read_text()


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "scenarios"
    folder.mkdir()
    return folder


def _no_validation(monkeypatch):
    def refuse(path):
        raise AssertionError(f"{path} validated again")

    monkeypatch.setattr(registry_module, "load_scenario", refuse)


def test_a_second_index_reads_the_ids_from_the_cache(disk_cache, monkeypatch):
    (disk_cache / "s.yaml").write_text(GOOD)
    assert ScenarioRegistry([disk_cache]).ids() == ["mini/upgrade-v1"]
    _no_validation(monkeypatch)
    assert ScenarioRegistry([disk_cache]).ids() == ["mini/upgrade-v1"]


def test_a_changed_file_is_validated_again(disk_cache, monkeypatch):
    path = disk_cache / "s.yaml"
    path.write_text(GOOD)
    assert ScenarioRegistry([disk_cache]).ids() == ["mini/upgrade-v1"]
    path.write_text(GOOD.replace("mini/upgrade-v1", "mini/upgrade-v2"))
    assert ScenarioRegistry([disk_cache]).ids() == ["mini/upgrade-v2"]
    _no_validation(monkeypatch)
    with pytest.raises(AssertionError, match="validated again"):
        path.write_text(GOOD.replace("mini/upgrade-v1", "mini/upgrade-v3"))
        ScenarioRegistry([disk_cache]).ids()


def test_a_broken_file_fails_every_time(disk_cache):
    path = disk_cache / "s.yaml"
    path.write_text(GOOD)
    assert ScenarioRegistry([disk_cache]).ids() == ["mini/upgrade-v1"]
    path.write_text(GOOD.replace("max_steps: 6", "max_steps: many"))
    for _ in range(2):
        with pytest.raises(ScenarioError, match=r"budgets\.max_steps"):
            ScenarioRegistry([disk_cache]).ids()


def test_duplicate_ids_are_still_refused_from_the_cache(disk_cache):
    (disk_cache / "a.yaml").write_text(GOOD)
    (disk_cache / "b.yaml").write_text(GOOD)
    for _ in range(2):  # the second time both ids come from the cache
        with pytest.raises(ScenarioError, match="already defined"):
            ScenarioRegistry([disk_cache]).ids()
