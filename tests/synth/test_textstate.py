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


# -- a factored state: fields as functions of other fields -------------------------------------

FAULTS = ("airplane_mode", "sim_lock", "roaming_block")


def _network(state: dict[str, bool]) -> str:
    return "\n".join(
        f"{name.replace('_', ' ').title()}: {'ON' if state[name] else 'OFF'}" for name in FAULTS
    )


def _signal(state: dict[str, bool]) -> str:
    if any(state.values()):
        return "Status Bar: 📵 No Signal | 🔋 80%"
    return "Status Bar: 📶⁴ Excellent | 5G | 🔋 80%"


def _device(n: int, start: tuple[str, ...], toggles: list[str]) -> Episode:
    """A phone that loses its signal when any of three faults is on; each fault has a setup
    operation (``turn_<fault>_on``) and a toggle. The episode reads the network status and the
    status bar as set up, then toggles, reading only the network status again: the status bar
    is never seen after a toggle."""
    state = {name: name in start for name in FAULTS}
    calls: list[tuple[str, dict[str, Any], Any, str | None]] = [
        ("check_network_status", {}, _network(state), None),
        ("check_status_bar", {}, _signal(state), None),
    ]
    for name in toggles:
        state[name] = not state[name]
        title = name.replace("_", " ").title()
        calls.append(
            (f"toggle_{name}", {}, f"{title} is now {'ON' if state[name] else 'OFF'}.", None)
        )
        calls.append(("check_network_status", {}, _network(state), None))
    ep = episode(n, calls)
    ep.task.id = f"device-{n}"
    actions = [{"env_type": "user", "func_name": f"turn_{f}_on", "arguments": {}} for f in start]
    ep.task.metadata = {"initial_state": {"initialization_actions": actions}}
    return ep


def _devices() -> list[Episode]:
    """Training shows at most two faults at once, never all three."""
    a, s, r = FAULTS
    plans: list[tuple[tuple[str, ...], list[str]]] = [
        ((), [a, a]),
        ((a,), [a]),
        ((s,), [s]),
        ((r,), [r]),
        ((a, s), [a, s]),
        ((s, r), [r, s]),
        ((a, r), [r, a]),
        ((), [s, r, s, r]),
        ((a,), [s, a, s]),
        ((r,), [a, r, a]),
    ]
    return [_device(n, *plan) for n, plan in enumerate(plans, 1)]


def test_a_field_is_learned_over_other_fields_and_answers_a_combination_never_seen(tmp_path):
    """The status bar shows no signal when any one of three faults is on. Training shows it
    only as set up, with at most two faults at once, and the faults' toggles only through the
    network status. Learned as a function of the faults' current values (each a toggle of its
    history, learned from the network status), the status bar is the disjunction of the three,
    and a phone set up with all three answers exactly, through every toggle back to a signal,
    compiled and interpreted alike. (Over the raw history, the bar learned no toggle: it
    stayed without signal after all three were switched off.)"""
    out = tmp_path / "pack"
    synthesize([], out, episodes=_devices())
    model = json.loads((out / "state.json").read_text())
    assert model["factored"] is True
    # the status bar is a rule over the other fields' values, not over the raw history
    tests: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "f" in node:
            tests.append(node["f"])
            walk(node["t"])
            walk(node["e"])

    walk(model["fields"]["Status Bar"])
    assert tests and all(t.startswith("is:") for t in tests), tests
    assert model["order"].index("Status Bar") > model["order"].index("Sim Lock")
    for compiled in (True, False):
        pack = load_synth_pack(out, compiled=compiled)
        world = World(pack.schemas, pack.base())
        ops = [f"turn_{f}_on:{{}}" for f in FAULTS]
        world.update("SessionState", "session", {"ops": ops}, now=0.0)
        rng = random.Random(0)

        def call(tool: str, pack: Any = pack, world: World = world, rng: Any = rng) -> Any:
            ctx = ToolContext(world, 0.0, rng, tool=tool, call_id=tool)
            return pack.catalog[tool].invoke(ctx, {})

        state = dict.fromkeys(FAULTS, True)
        assert call("check_status_bar") == _signal(state)
        assert call("check_network_status") == _network(state)
        for name in FAULTS:
            state[name] = False
            title = name.replace("_", " ").title()
            assert call(f"toggle_{name}") == f"{title} is now OFF."
            assert call("check_status_bar") == _signal(state)
        assert _signal(state).endswith("5G | 🔋 80%")


def test_the_simplest_consistent_rule_comes_before_a_tree():
    """Elimination and Occam on their own: a value that appears when any one of three
    conditions holds, learned from examples of at most two, is their disjunction (a tree would
    answer a combination of three from whichever branch held it); a value that needs a
    condition's absence gets a negated literal; a list that cannot explain the rest hands it
    to the fallback."""
    from simforge.synth.learn.occam import decision_list, holds, size

    def answer(tree: dict[str, Any], features: set[str]) -> Any:
        while "v" not in tree:
            tree = tree["t"] if holds(tree["f"], features) else tree["e"]
        return tree["v"]

    rows = [
        (set(), "ok"),
        ({"a", "noise1"}, "bad"),
        ({"a", "b"}, "bad"),
        ({"b"}, "bad"),
        ({"c", "noise2"}, "bad"),
        ({"c"}, "bad"),
        ({"noise1"}, "ok"),
        ({"noise2"}, "ok"),
    ]
    tree = decision_list(rows, [lambda lit: True], lambda rest: {"v": "?"})
    assert size(tree) == 3
    assert answer(tree, {"a", "b", "c"}) == "bad" and answer(tree, {"noise1", "noise2"}) == "ok"
    # "shown" where a toggle is on and airplane mode is not: ``!on`` before the default
    rows = [
        ({"on"}, "shown"),
        ({"on", "airplane"}, "hidden"),
        (set(), "hidden"),
        ({"airplane"}, "hidden"),
        ({"on", "x"}, "shown"),
    ]
    tree = decision_list(rows, [lambda lit: True], lambda rest: {"v": "?"})
    assert (
        answer(tree, {"on", "y"}) == "shown" and answer(tree, {"on", "airplane", "y"}) == "hidden"
    )
    # XOR is no list of single literals: the fallback answers it
    rows = [({"p"}, 1), ({"q"}, 1), ({"p", "q"}, 0), (set(), 0)]
    assert decision_list(rows, [lambda lit: True], lambda rest: {"v": "tree"}) == {"v": "tree"}
