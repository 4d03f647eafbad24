"""Hostile scenario files are refused at the border, fast, with the file and the line: alias
bombs, deep nesting, bytes that are not UTF-8, duplicate task ids, seeds past 64 bits, and a
reference policy asked to play a task that has no reference solution."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simforge.cli import app
from simforge.config import MAX_YAML_DEPTH, MAX_YAML_NODES
from simforge.scenario.loader import ScenarioError, load_scenario, parse_scenario

HEAD = "id: x/hostile-v1\npack: acme\n"


def _bomb(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return (HEAD + "tasks:\n  - id: t\n    instruction: hi\n    metadata:\n"
            + "".join(f"      {line}\n" for line in lines))


def test_an_alias_bomb_is_refused_before_anything_walks_it():
    """A 3.8 KB file that expands to 387 million values: refused from its node graph (the
    unbounded version ran run/audit past 120 s at 2.2 GB)."""
    tracemalloc.start()
    with pytest.raises(ScenarioError, match=f"more than {MAX_YAML_NODES:,} values"):
        parse_scenario(_bomb(), "bomb.yaml")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * 2**20, peak


@pytest.mark.parametrize("depth", [MAX_YAML_DEPTH + 1, 1_500, 20_000])
def test_yaml_nested_past_the_limit_is_one_clear_error(depth):
    text = HEAD + "tasks: [{id: t, instruction: hi, metadata: {x: " + "[" * depth + "]" * depth
    with pytest.raises(ScenarioError, match=r"nest|depth"):
        parse_scenario(text + "}}]\n", "deep.yaml")


def test_bytes_that_are_not_utf8_are_named_by_line_and_column(tmp_path: Path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(HEAD.encode() + b"tasks:\n  - {id: t, instruction: \"caf\xe9\"}\n")
    with pytest.raises(ScenarioError, match=r"line 4, column \d+: not UTF-8 \(byte 0xe9\)"):
        load_scenario(path)


def test_a_duplicate_task_id_names_its_line_and_not_the_whole_file():
    text = HEAD + "tasks:\n  - {id: t, instruction: one}\n  - {id: t, instruction: two}\n"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "dup.yaml")
    message = str(info.value)
    assert "line 5: tasks.1.id: duplicate task id 't'" in message
    assert "instruction" not in message  # no dump of the scenario


@pytest.mark.parametrize("field", ["seeds: [9223372036854775808]", "world: {seed: 18446744073709551616}",
                                   "seeds: [-1]"])
def test_seeds_outside_64_bits_are_refused_at_load(field):
    with pytest.raises(ScenarioError, match="seed"):
        parse_scenario(HEAD + field + "\ntasks: [{id: t, instruction: hi}]\n", "seed.yaml")


def test_a_reference_policy_on_a_task_without_one_names_the_file_and_line(tmp_path: Path):
    path = tmp_path / "no-oracle.yaml"
    path.write_text(HEAD + "tasks:\n  - {id: t, instruction: hi}\n")
    result = CliRunner().invoke(app, ["run", str(path), "--policy", "oracle"])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"{path}: line 4: task 't' has no oracle" in said and "Traceback" not in said


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_a_scenario_or_one_scenario_error(text):
    try:
        parse_scenario(HEAD + text, "fuzz.yaml")
    except ScenarioError as exc:
        assert str(exc).startswith("fuzz.yaml: ")


@st.composite
def _graphs(draw: st.DrawFn) -> str:
    """YAML text with anchors, aliases (some reused many times) and nesting."""
    anchors: list[str] = []

    def value(depth: int) -> str:
        choice = draw(st.integers(0, 4 if depth < 6 else 1))
        if choice == 0 or (choice == 1 and not anchors):
            return draw(st.sampled_from(["1", "x", "null", "'a b'"]))
        if choice == 1:
            return "*" + draw(st.sampled_from(anchors))
        items = [value(depth + 1) for _ in range(draw(st.integers(0, 4)))]
        if choice == 2:
            text = "[" + ", ".join(items) + "]"
        else:
            text = "{" + ", ".join(f"k{i}: {v}" for i, v in enumerate(items)) + "}"
        if draw(st.booleans()):
            anchors.append(f"a{len(anchors)}")
            return f"&{anchors[-1]} {text}"
        return text

    return "{" + ", ".join(f"t{i}: {value(1)}" for i in range(draw(st.integers(1, 4)))) + "}"


@settings(max_examples=200, deadline=None)
@given(text=_graphs(), nodes=st.integers(1, 80), depth=st.integers(1, 8),
       walk=st.integers(1, 100))
def test_the_quick_count_refuses_exactly_what_the_measure_refuses(text, nodes, depth, walk):
    """The level-by-level count (aliases walked) and the memoised measure agree on every graph
    and limit: the same graph passes, or the same error names the same line."""
    import yaml

    from simforge import config

    root = yaml.compose(text, Loader=config._LOADER)
    outcomes = []
    saved = config.MAX_YAML_NODES, config.MAX_YAML_DEPTH, config._WALK_NODES
    config.MAX_YAML_NODES, config.MAX_YAML_DEPTH, config._WALK_NODES = nodes, depth, walk
    try:
        for check in (config._bounded, config._measured):
            try:
                check(root, "g.yaml", config.ConfigError)
                outcomes.append(None)
            except config.ConfigError as exc:
                outcomes.append(str(exc))
    finally:
        config.MAX_YAML_NODES, config.MAX_YAML_DEPTH, config._WALK_NODES = saved
    assert outcomes[0] == outcomes[1]
