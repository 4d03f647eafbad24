"""Scenario files are checked at the border: errors name the file, the line, the field path and
what is allowed; a pack that is wrong fails at load with an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.config import NotFound
from simforge.scenario import PluginError, ScenarioError, ScenarioRegistry, load_pack, load_scenario

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI_SCENARIO = FIXTURES / "scenarios" / "mini.yaml"

GOOD = MINI_SCENARIO.read_text()


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_fixture_scenario_loads():
    s = load_scenario(MINI_SCENARIO)
    assert s.id == "mini/upgrade-v1" and s.domain == "mini"
    assert [t.id for t in s.tasks] == ["upgrade", "note"]
    assert s.think_time.sample(None) == 1.0  # type: ignore[arg-type]


def test_unknown_field_names_file_line_and_path(tmp_path):
    path = write(tmp_path, GOOD.replace("    instruction: Leave", "    instructoin: Leave"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert str(path) in message
    assert "tasks.1.instructoin: unknown field" in message
    assert "tasks.1.instruction: required field is missing" in message
    line = (
        GOOD.splitlines().index('    instruction: Leave a note on C-0002 saying "called back".') + 1
    )
    assert f"line {line}: tasks.1.instructoin" in message


def test_wrong_type_says_what_was_found(tmp_path):
    path = write(tmp_path, GOOD.replace("max_steps: 6", "max_steps: many"))
    with pytest.raises(ScenarioError, match=r"line 4: budgets.max_steps: .*integer.*'many'"):
        load_scenario(path)


def test_bad_id_and_bad_yaml(tmp_path):
    with pytest.raises(ScenarioError, match=r"id: String should match pattern"):
        load_scenario(write(tmp_path, GOOD.replace("mini/upgrade-v1", "Mini Upgrade")))
    with pytest.raises(ScenarioError, match=r"line \d+, column \d+: invalid YAML"):
        load_scenario(write(tmp_path, "id: [unclosed\n"))
    with pytest.raises(ScenarioError, match="expected a mapping"):
        load_scenario(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_oracle_steps_are_calls_or_an_answer(tmp_path):
    bad = GOOD.replace("      - answer: Done.", "      - {}")
    with pytest.raises(ScenarioError, match="exactly one of `calls`, `message` or `answer`"):
        load_scenario(write(tmp_path, bad))


def test_registry_checks_tools_and_entities_against_the_pack(tmp_path):
    text = GOOD.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    bad = text.replace("tool: create_note", "tool: create_nope").replace(
        "Customer: {C-0003: {tier", "Client: {C-0003: {tier"
    )
    path = write(tmp_path, bad)
    with pytest.raises(ScenarioError) as info:
        ScenarioRegistry([tmp_path]).get("mini/upgrade-v1")
    assert "unknown tool 'create_nope'" in str(info.value)
    assert "unknown entity 'Client'" in str(info.value)
    assert str(path) in str(info.value)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_reference_problems_name_their_line(tmp_path):
    text = GOOD.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    bad = text.replace("tool: create_note", "tool: create_nope")
    path = write(tmp_path, bad)
    with pytest.raises(ScenarioError) as info:
        ScenarioRegistry([tmp_path]).load_path(path)
    assert f"line {_line(bad, 'create_nope')}: task 'note': oracle step" in str(info.value)


def test_a_wrong_pack_names_the_scenario_file_and_line(tmp_path):
    bad = GOOD.replace("pack: ../packs/mini", "pack: ./no-such-pack")
    path = write(tmp_path, bad)
    with pytest.raises(ScenarioError) as info:
        ScenarioRegistry([tmp_path]).load_path(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line {_line(bad, 'no-such-pack')}: pack: ")
    assert "no-such-pack" in message


def test_a_bad_initial_row_names_its_line(tmp_path):
    import simforge

    text = GOOD.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    bad = text.replace("C-0003: {name: Zed Canary}", "C-0003: {name: 7}")
    assert bad != text
    path = write(tmp_path, bad)
    env = simforge.make(str(path))
    with pytest.raises(ScenarioError) as info:
        env.reset(seed=0, options={"task": "upgrade"})
    assert f"line {_line(bad, 'C-0003: {name: 7}')}: task 'upgrade': initial_state.Customer" \
        in str(info.value)


def test_registry_refuses_duplicate_ids(tmp_path):
    text = GOOD.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    write(tmp_path, text, "a.yaml")
    write(tmp_path, text, "b.yaml")
    with pytest.raises(ScenarioError, match="already defined"):
        ScenarioRegistry([tmp_path]).ids()


def test_a_folder_of_synthesized_packs_can_be_a_scenario_folder(tmp_path):
    """A synthesized pack keeps its scenario next to its manifest, pack.yaml: the manifest is
    skipped, the scenario found."""
    text = GOOD.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    pack = tmp_path / "packs" / "examples"
    pack.mkdir(parents=True)
    write(pack, text, "scenario.yaml")
    (pack / "pack.yaml").write_text("format: simforge-synth/1\nname: examples\nentities: {}\n")
    registry = ScenarioRegistry([tmp_path])
    assert registry.ids() == ["mini/upgrade-v1"]
    assert registry.get("mini/upgrade-v1").path == pack / "scenario.yaml"


def test_a_missing_scenario_file_is_reported_as_a_missing_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(NotFound) as info:
        ScenarioRegistry([tmp_path]).get(str(missing))
    assert str(info.value) == f"scenario file not found: {missing}"


def test_broken_packs_fail_at_load_naming_the_pack(tmp_path):
    (tmp_path / "nopack").mkdir()
    (tmp_path / "nopack" / "pack.py").write_text("X = 1\n")
    with pytest.raises(PluginError, match=r"nopack: pack.py must define PACK"):
        load_pack(str(tmp_path / "nopack"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "pack.py").write_text("import does_not_exist\n")
    with pytest.raises(PluginError, match=r"broken: failed to load: ModuleNotFoundError"):
        load_pack(str(tmp_path / "broken"))
    with pytest.raises(PluginError, match="pack 'ghost' not found"):
        load_pack("ghost")


def test_packs_load_by_path_without_becoming_importable_packages():
    pack = load_pack(str(FIXTURES / "packs" / "mini"))
    assert pack is load_pack(str(FIXTURES / "packs" / "mini"))  # cached
    assert pack.catalog["upgrade_customer"].spec.kind == "write"
    assert not (FIXTURES / "packs" / "mini" / "__init__.py").exists()
