"""The one plugin registry (simforge.plugins): a name registered by two plugins is refused,
naming both; and two scenarios checked and scored with different validator plugins coexist in
one process, each scored by its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import simforge
from simforge.env.core import SimforgeEnv
from simforge.errors import PluginError
from simforge.plugins import PLUGINS, Plugins, Table
from simforge.runs.episode import play_episode
from simforge.scenario import ScenarioError, ScenarioRegistry
from simforge.scoring import Verdict, invariant, validator
from simforge.scoring.context import ScoringContext

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINI = (FIXTURES / "scenarios" / "mini.yaml").read_text()


def _first() -> str:
    return "first"


def _second() -> str:
    return "second"


def test_a_name_registered_by_two_plugins_is_refused_naming_both():
    table: Table[object] = Table("validator")
    table.register("same", _first)
    table.register("same", _first)  # the same definition again (a module loaded twice)
    with pytest.raises(PluginError, match="already registered") as caught:
        table.register("same", _second)
    assert "_first" in str(caught.value) and "_second" in str(caught.value)
    assert table["same"] is _first
    with pytest.raises(PluginError, match="unknown validator 'other'; registered: \\['same'\\]"):
        table.lookup("other")


def _scenario_dir(tmp_path: Path, name: str, validators: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    packs = FIXTURES / "packs" / "mini"
    text = MINI.replace("pack: ../packs/mini", f"pack: {packs}").replace(
        "id: mini/upgrade-v1", f"id: {name}/upgrade-v1\nvalidators:\n{validators}"
    )
    (folder / "scenario.yaml").write_text(text)
    return folder


def _oracle_reward(registry: ScenarioRegistry, scenario_id: str) -> tuple[float | None, list[str]]:
    env = SimforgeEnv(registry.get(scenario_id))
    outcome = play_episode(env, simforge.policies.OraclePolicy(), seed=0, task="upgrade")
    score = env.score()
    return outcome.result.reward, [v.name for v in score.verdicts]


def test_two_scenarios_with_different_validator_plugins_coexist(tmp_path):
    strict, lenient = PLUGINS.copy(), PLUGINS.copy()

    @validator("house_rule", "correctness", plugins=strict)
    def refuse(ctx: ScoringContext) -> Verdict:
        return Verdict.of("house_rule", "correctness", False, why="strict house")

    @validator("house_rule", "correctness", plugins=lenient)
    def allow(ctx: ScoringContext) -> Verdict:
        return Verdict.of("house_rule", "correctness", True, why="lenient house")

    rules = "  - name: house_rule\n"
    a = ScenarioRegistry([_scenario_dir(tmp_path, "strict", rules)], plugins=strict)
    b = ScenarioRegistry([_scenario_dir(tmp_path, "lenient", rules)], plugins=lenient)
    reward_a, names_a = _oracle_reward(a, "strict/upgrade-v1")
    reward_b, names_b = _oracle_reward(b, "lenient/upgrade-v1")
    assert "house_rule" in names_a and "house_rule" in names_b
    assert reward_a == 0.0  # the strict house's rule fails the oracle
    assert reward_b == 1.0
    assert "house_rule" not in PLUGINS.validators  # the default registry never saw either

    # the default registry refuses the file at load, naming the validator it does not know
    default = ScenarioRegistry([tmp_path / "strict"])
    with pytest.raises(ScenarioError, match="unknown validator 'house_rule'"):
        default.get("strict/upgrade-v1")


def test_invariant_names_are_checked_and_run_in_the_scenario_s_own_registry(tmp_path):
    mine = PLUGINS.copy()

    @invariant("no_gold_for_zed", plugins=mine)
    def no_gold(ctx: ScoringContext) -> list[dict[str, str]]:
        row = ctx.world.get("Customer", "C-0003")
        return [{"row": "C-0003"}] if row and row.get("tier") == "gold" else []

    rules = "  - name: invariants\n    params: {rules: [{check: no_gold_for_zed}]}\n"
    registry = ScenarioRegistry([_scenario_dir(tmp_path, "inv", rules)], plugins=mine)
    reward, names = _oracle_reward(registry, "inv/upgrade-v1")
    assert "invariants" in names and reward == 0.0  # the oracle makes Zed gold: a violation
    with pytest.raises(ScenarioError, match="unknown invariant 'no_gold_for_zed'"):
        ScenarioRegistry([tmp_path / "inv"]).get("inv/upgrade-v1")


def test_a_copy_starts_with_everything_and_then_goes_its_own_way():
    mine = PLUGINS.copy()
    assert isinstance(mine, Plugins) and mine.serial != PLUGINS.serial
    assert set(PLUGINS.validators) <= set(mine.validators)
    assert set(PLUGINS.fault_kinds) == set(mine.fault_kinds)
    assert set(PLUGINS.pack_formats) == set(mine.pack_formats) == {"pack.yaml"}
    mine.validators.register("only_mine", _first)
    assert "only_mine" not in PLUGINS.validators


def test_the_installed_entry_points_are_read_once_for_every_group(monkeypatch):
    import importlib.metadata as metadata

    from simforge import plugins

    real = metadata.entry_points
    reads: list[int] = []
    monkeypatch.setattr(metadata, "entry_points", lambda: (reads.append(1), real())[1])
    plugins._installed_entry_points.cache_clear()
    try:
        for group in ("simforge.packs", "simforge.validators", "console_scripts"):
            assert list(plugins.entry_points(group=group)) == list(real(group=group))
        assert reads == [1]
    finally:
        plugins._installed_entry_points.cache_clear()
