"""State shown only in text: a read whose answer depends on what happened before, not on its
arguments, learned from the episode's setup and its state-changing calls."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from simforge.synth.learn.text_state import split
from simforge.synth.pack.loader import load_synth_pack
from simforge.synth.pipeline import synthesize
from simforge.tools.context import ToolContext
from simforge.trace.episode import Episode
from simforge.world.store import World

from .conftest import episode


def _bar(airplane: bool, saver: bool) -> str:
    if airplane:
        return "Status Bar: ✈️ Airplane Mode | 🔋 80%"
    return "Status Bar: 📶⁴ Excellent | 5G" + (" | 🔽 Data Saver" if saver else "") + " | 🔋 80%"


def _phone(n: int, airplane: bool, saver: bool, toggles: list[str]) -> Episode:
    """A phone whose setup may switch airplane mode and data saver on; the episode checks
    the status bar, toggles, and checks again."""
    start = (airplane, saver)
    calls: list[tuple[str, dict[str, Any], Any, str | None]] = [
        ("check_status_bar", {}, _bar(airplane, saver), None)
    ]
    for tool in toggles:
        if tool == "toggle_airplane_mode":
            airplane = not airplane
            text = f"Airplane Mode is now {'ON' if airplane else 'OFF'}."
        else:
            saver = not saver
            text = f"Data Saver Mode is now {'ON' if saver else 'OFF'}."
        calls.append((tool, {}, f"{text}\n{_bar(airplane, saver)}", None))
        calls.append(("check_status_bar", {}, _bar(airplane, saver), None))
    ep = episode(n, calls)
    setup = [
        {"env_type": "user", "func_name": name, "arguments": {}}
        for name, on in (("turn_airplane_mode_on", start[0]), ("turn_data_saver_mode_on", start[1]))
        if on
    ]
    ep.task.id = f"phone-{n}"
    ep.task.metadata = {"initial_state": {"initialization_actions": setup}}
    return ep


def _episodes() -> list[Episode]:
    plans = [
        (True, False, ["toggle_airplane_mode"]),
        (False, True, ["toggle_data_saver_mode"]),
        (True, True, ["toggle_airplane_mode", "toggle_data_saver_mode"]),
        (False, False, ["toggle_data_saver_mode", "toggle_data_saver_mode"]),
        (True, False, ["toggle_airplane_mode", "toggle_airplane_mode", "toggle_airplane_mode"]),
        (False, True, ["toggle_airplane_mode", "toggle_airplane_mode"]),
        (True, True, ["toggle_data_saver_mode", "toggle_airplane_mode"]),
        (False, False, ["toggle_airplane_mode"]),
    ]
    return [_phone(n, *plan) for n, plan in enumerate(plans, 1)]


def test_a_read_without_arguments_answers_from_the_state_the_history_left(tmp_path: Path):
    """check_status_bar() has no arguments: a replay table keeps one of its answers. Learned
    from the history (the setup's operations and the toggles since), it answers each state as
    production did, in a combination no training episode showed."""
    out = tmp_path / "pack"
    synthesize([], out, episodes=_episodes())
    tools = {t["spec"]["name"]: t["handler"] for t in json.loads((out / "tools.json").read_text())}
    assert tools["check_status_bar"]["kind"] == "state"
    assert tools["toggle_airplane_mode"]["records"] is True
    model = json.loads((out / "state.json").read_text())
    assert "Status Bar" in model["fields"] and "Status Bar" in model["keyed"]
    pack = load_synth_pack(out)
    world = World(pack.schemas, pack.base())
    # a phone set up with data saver on, then airplane mode switched on and off again: never
    # one training episode
    world.update("SessionState", "session", {"ops": ["turn_data_saver_mode_on:{}"]}, now=0.0)
    rng = random.Random(0)

    def call(tool: str) -> Any:
        ctx = ToolContext(world, 0.0, rng, tool=tool, call_id=tool)
        return pack.catalog[tool].invoke(ctx, {})

    assert call("check_status_bar") == _bar(False, True)
    assert call("toggle_airplane_mode") == "Airplane Mode is now ON.\n" + _bar(True, True)
    assert call("check_status_bar") == _bar(True, True)
    assert call("toggle_airplane_mode") == "Airplane Mode is now OFF.\n" + _bar(False, True)
    assert call("toggle_data_saver_mode") == "Data Saver Mode is now OFF.\n" + _bar(False, False)
    assert call("check_status_bar") == _bar(False, False)
    # the session's state row holds the history and the fields, for expected states
    row = world.get("SessionState", "session")
    assert row["ops"][-1] == "toggle_data_saver_mode:{}"


def test_tasks_start_from_their_declared_setup_and_expect_what_changed(tmp_path: Path):
    import yaml

    out = tmp_path / "pack"
    synthesize([], out, episodes=_episodes())
    tasks = yaml.safe_load((out / "scenario.yaml").read_text())["tasks"]
    first = tasks[0]
    assert first["initial_state"]["SessionState"]["session"]["ops"] == ["turn_airplane_mode_on:{}"]
    expected = first["expected"]["state"]["SessionState"]["session"]
    # the signal and the network type it shows came back when airplane mode went off
    assert expected == {"s_status_bar": "📶⁴ Excellent", "s_5g": "5G"}
    from simforge.audit.fidelity import replay_gold

    assert replay_gold(out)["rate"] == 1.0


def test_answers_split_into_fields():
    assert split("A: 1\nB | C") == [("", "A: 1"), ("\n", "B"), (" | ", "C")]
