"""Finding a scenario by id reads each file's top-level ``id:`` line instead of validating every
file: the id read so is the one a full parse gives (or none, and the file is validated), only
the loaded file is validated, a broken neighbour does not stop an intact scenario, and listing
the ids still validates every file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simforge.scenario import ScenarioError, ScenarioRegistry
from simforge.scenario import registry as registry_module
from simforge.scenario.registry import quick_id

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = (FIXTURES / "scenarios" / "mini.yaml").read_text().replace(
    "pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}"
)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFORGE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "scenarios"
    out.mkdir()
    return out


def test_finding_one_scenario_validates_only_the_file_it_loads(folder, monkeypatch):
    (folder / "a.yaml").write_text(GOOD)
    for n in range(5):
        (folder / f"other{n}.yaml").write_text(GOOD.replace("mini/upgrade-v1", f"mini/x{n}"))
    validated: list[str] = []
    real = registry_module.load_scenario

    def counting(path):
        validated.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(registry_module, "load_scenario", counting)
    loaded = ScenarioRegistry([folder]).get("mini/upgrade-v1")
    assert loaded.scenario.id == "mini/upgrade-v1"
    assert validated == ["a.yaml"]


def test_a_broken_neighbour_does_not_stop_an_intact_scenario(folder):
    (folder / "a.yaml").write_text(GOOD)
    (folder / "b.yaml").write_text(
        GOOD.replace("mini/upgrade-v1", "mini/broken-v1").replace("max_steps: 6", "max_steps: x")
    )
    registry = ScenarioRegistry([folder])
    assert registry.get("mini/upgrade-v1").scenario.id == "mini/upgrade-v1"
    with pytest.raises(ScenarioError, match=r"b\.yaml.*budgets\.max_steps"):
        registry.get("mini/broken-v1")
    with pytest.raises(ScenarioError, match=r"budgets\.max_steps"):  # listing validates all
        registry.ids()


def test_an_id_that_is_not_a_plain_line_is_found_by_validating(folder):
    quoted = GOOD.replace("id: mini/upgrade-v1", 'id: "mini/upgrade-v1"  # quoted')
    (folder / "q.yaml").write_text(quoted)
    assert quick_id(folder / "q.yaml") is None
    assert ScenarioRegistry([folder]).get("mini/upgrade-v1").path == folder / "q.yaml"


def test_duplicates_are_refused_across_read_and_validated_ids(folder):
    (folder / "a.yaml").write_text(GOOD)
    (folder / "b.yaml").write_text(GOOD.replace("id: mini/upgrade-v1", "id: 'mini/upgrade-v1'"))
    with pytest.raises(ScenarioError, match="already defined"):
        ScenarioRegistry([folder]).get("mini/upgrade-v1")


def test_a_file_changed_after_indexing_is_refused_not_loaded_as_another_id(folder):
    path = folder / "a.yaml"
    path.write_text(GOOD)
    registry = ScenarioRegistry([folder])
    assert registry.get("mini/upgrade-v1")  # indexed and loaded
    other = ScenarioRegistry([folder])
    other._index()
    path.write_text(GOOD.replace("mini/upgrade-v1", "mini/renamed-v1"))
    with pytest.raises(ScenarioError, match=r"line 1: id: 'mini/renamed-v1', where the index"):
        other.get("mini/upgrade-v1")


def test_a_line_ending_in_crlf_and_a_comment_reads_the_same(folder):
    path = folder / "a.yaml"
    path.write_bytes(GOOD.replace("id: mini/upgrade-v1", "id: mini/upgrade-v1   # the id")
                     .replace("\n", "\r\n").encode())
    assert quick_id(path) == "mini/upgrade-v1"
    assert ScenarioRegistry([folder]).get("mini/upgrade-v1").scenario.id == "mini/upgrade-v1"


# Top-level documents made of pieces that could fool a line scan: ids quoted or plain, with
# comments, anchors, tags; other keys holding "id:" in block scalars, quoted multi-line strings,
# flow mappings and nested mappings; several id lines.
_VALUE = st.sampled_from([
    "acme/x-v1", "a", "x1/y_2.z:3", "'acme/x-v1'", '"acme/x-v1"', "&anchor acme/x-v1",
    "!!str acme/x-v1", "acme/x-v1 # note", "[a, b]", "{a: 1}", "null", "7", "yes",
    "acme/x-v1\t", "acme x", "|\n  acme/x-v1", "1.5", "2001-12-14", "on", "~", ".inf",
    "0x1F", "1_000", "acme/x-v1:", "a: b",
])
_OTHER = st.sampled_from([
    "description: plain text",
    "description: |\n  id: inner-v1\n  more",
    'description: "a quoted\n  id: folded-v1"',
    "nested:\n  id: nested-v1",
    "flow: {id: flow-v1}",
    "# id: commented-v1",
    "list:\n  - id: item-v1",
    "id: second-v1",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUE, before=st.lists(_OTHER, max_size=3), after=st.lists(_OTHER, max_size=3),
       crlf=st.booleans())
def test_a_read_id_is_always_the_parsed_id(tmp_path, value, before, after, crlf):
    text = "\n".join([*before, f"id: {value}", *after]) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    path = tmp_path / "s.yaml"
    path.write_bytes(text.encode())
    read = quick_id(path)
    if read is None:
        return
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return  # a full parse refuses the file; loading it says why
    assert isinstance(parsed, dict) and parsed.get("id") == read
