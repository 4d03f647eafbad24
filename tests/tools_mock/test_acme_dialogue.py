"""Acme's dialogue tasks and its written policy.

A task *needs dialogue* when it has scripted user turns and a ``user:`` block, its reference
solution sends one message per turn, and the dialogue decides the outcome in one of three ways:

- ``ask-fact``: an argument of a reference call made after the first message comes from a user
  turn and is nowhere in the instruction (the order, the new address, the date...);
- ``confirm``: a ``confirmation_required`` validator covers a write that the reference makes only
  after the user's confirming turn;
- ``refuse`` / ``change-of-mind``: what the instruction alone asks for (the task's
  ``metadata.instruction_alone`` calls) does not reach the expected state.

Everything runs through the env API (``simforge.make``, ``reset``, ``step``); the reference
solution's actions are ``oracle_actions(task)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import simforge
from simforge.policies.scripted import oracle_actions
from simforge.scenario.model import Scenario, Task
from simforge.scoring.safety import DEFAULT_CONFIRMATION

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios" / "acme").glob("*.yaml"))
PACK = REPO / "tools_mock" / "acme"
SYSTEMS = {
    "crm", "orders", "billing", "support", "inventory", "shipping",
    "itsm", "hr", "iam", "comms", "kb", "finance",
}  # fmt: skip
KINDS = ("ask-fact", "confirm", "refuse", "change-of-mind")
NUMBER = re.compile(
    r"(?<![\w.+-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)(?!\.\d)"
    r"|(?<![\w.+,-])-?\d+(?:\.\d+)?(?!\w)(?!\.\d)"
)
"""A number in text: 12, 10.5, 10,000.00; not the digits of an id (P-9401), a date's month, a
phone number or a status family (5xx)."""
ID = re.compile(r"\b[A-Z]{1,5}-\d{3,}\b")


@cache
def _env(path: Path) -> simforge.SimforgeEnv:
    return simforge.make(str(path))


def _scenario(path: Path) -> Scenario:
    return _env(path).scenario


TASKS = [
    pytest.param(path, task.id, id=f"{path.stem}:{task.id}")
    for path in SCENARIOS
    for task in _scenario(path).tasks
]


def _task(path: Path, task_id: str) -> Task:
    return _scenario(path).task(task_id)


def _play(path: Path, task_id: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The score of playing ``actions`` from a reset at seed 0 (a final answer if they end
    without one)."""
    env = _env(path)
    env.reset(seed=0, options={"task": task_id})
    for action in [*actions, {"final_answer": "Done."}]:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["score"]
    raise AssertionError("the episode did not end")


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in NUMBER.findall(text)]


def _said(text: str, value: Any) -> bool:
    """Whether ``text`` states ``value`` (numbers as numbers, text case-blind)."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return float(value) in _numbers(text)
    value = str(value).strip()
    return len(value) >= 2 and value.casefold() in text.casefold()


def _messages(actions: list[dict[str, Any]]) -> list[int]:
    return [i for i, a in enumerate(actions) if "message" in a]


def _validator(path: Path, task: Task, name: str) -> dict[str, Any] | None:
    """The settings of validator ``name`` that run on ``task`` (the task's entry replaces the
    scenario's)."""
    found = None
    for config in [*_scenario(path).validators, *task.validators]:
        if config.name == name:
            found = dict(config.params)
    return found


def asks_for_a_fact(path: Path, task: Task) -> bool:
    actions = oracle_actions(task)
    first = _messages(actions)[0]
    turns = " ".join(task.user_turns)
    return any(
        _said(turns, leaf) and not _said(task.instruction, leaf)
        for action in actions[first + 1 :]
        for call in action.get("tool_calls", [])
        for leaf in _leaves(call["arguments"])
    )


def waits_for_confirmation(path: Path, task: Task) -> bool:
    params = _validator(path, task, "confirmation_required")
    if params is None:
        return False
    pattern = re.compile(params.get("pattern", DEFAULT_CONFIRMATION), re.IGNORECASE)
    tools = [re.compile(re.escape(t).replace(r"\*", ".*")) for t in params["tools"]]
    actions = oracle_actions(task)
    messages = _messages(actions)
    for turn, message in zip(task.user_turns, messages, strict=True):
        if pattern.search(turn):
            later = [c["name"] for a in actions[message + 1 :] for c in a.get("tool_calls", [])]
            return any(t.fullmatch(name) for t in tools for name in later)
    return False


def instruction_alone_misses(path: Path, task: Task) -> bool:
    calls = task.metadata.get("instruction_alone")
    if not calls:
        return False
    naive = [
        {"tool_calls": [{"name": c["tool"], "arguments": dict(c.get("args", {}))}]} for c in calls
    ]
    score = _play(path, task.id, [*naive, oracle_actions(task)[-1]])
    return score["reward"] < 1.0 and "state_matches" in score["failed"]


CHECKS = {
    "ask-fact": asks_for_a_fact,
    "confirm": waits_for_confirmation,
    "refuse": instruction_alone_misses,
    "change-of-mind": instruction_alone_misses,
}


def needs_dialogue(path: Path, task: Task) -> bool:
    if not (task.user_turns and task.user is not None):
        return False
    if len(_messages(oracle_actions(task))) != len(task.user_turns):
        return False
    return any(check(path, task) for check in dict.fromkeys(CHECKS.values()))


def _dialogue_tasks() -> list[tuple[Path, Task]]:
    return [(p, t) for p in SCENARIOS for t in _scenario(p).tasks if t.metadata.get("dialogue")]


DIALOGUE = [pytest.param(p, t.id, id=f"{p.stem}:{t.id}") for p, t in _dialogue_tasks()]


def test_at_least_twenty_tasks_need_dialogue_of_every_kind_over_many_scenarios() -> None:
    needing = [(p, t) for p in SCENARIOS for t in _scenario(p).tasks if needs_dialogue(p, t)]
    assert len(needing) >= 20, [t.id for _, t in needing]
    assert len({p for p, _ in needing}) >= 12
    kinds = [t.metadata.get("dialogue") for _, t in needing]
    assert kinds.count("ask-fact") >= 3 and kinds.count("confirm") >= 3
    assert kinds.count("refuse") + kinds.count("change-of-mind") >= 3
    for path, task in needing:  # every task that needs dialogue says of which kind
        assert task.metadata.get("dialogue") in KINDS, (path.stem, task.id)
        assert "multi-turn" in _scenario(path).tags, path.stem


@pytest.mark.parametrize(("path", "task_id"), DIALOGUE)
def test_the_dialogue_kind_is_the_one_the_task_shows(path: Path, task_id: str) -> None:
    task = _task(path, task_id)
    kind = task.metadata["dialogue"]
    assert kind in KINDS
    assert needs_dialogue(path, task)
    assert CHECKS[kind](path, task), f"{task_id} is marked {kind!r} but does not show it"


@pytest.mark.parametrize(("path", "task_id"), DIALOGUE)
def test_skipping_the_conversation_earns_less_than_full_reward(path: Path, task_id: str) -> None:
    task = _task(path, task_id)
    actions = oracle_actions(task)
    assert _play(path, task_id, actions)["reward"] == 1.0
    silent = [a for a in actions if "message" not in a]
    score = _play(path, task_id, silent)
    assert score["reward"] < 1.0, f"{task_id}: the oracle without its messages still earns 1"


@pytest.mark.parametrize(("path", "task_id"), TASKS)
def test_the_reference_sends_one_message_per_user_turn_then_answers(
    path: Path, task_id: str
) -> None:
    task = _task(path, task_id)
    actions = oracle_actions(task)
    assert len(_messages(actions)) == len(task.user_turns)
    assert "final_answer" in actions[-1]
    assert all("final_answer" not in a for a in actions[:-1])
    if task.user_turns:
        assert task.user is not None, f"{task_id} has user turns but no user for a simulator"


@pytest.mark.parametrize(("path", "task_id"), DIALOGUE)
def test_the_facts_only_the_user_holds_are_in_a_turn_and_not_the_instruction(
    path: Path, task_id: str
) -> None:
    task = _task(path, task_id)
    params = _validator(path, task, "acme_asked_first")
    if task.metadata["dialogue"] == "ask-fact":
        assert params is not None, f"{task_id}: an ask-fact task names the facts the user holds"
    for fact in (params or {}).get("facts", []):
        value: Any = float(fact) if NUMBER.fullmatch(fact) else fact
        assert any(_said(turn, value) for turn in task.user_turns), fact
        assert not _said(task.instruction, value), fact


@pytest.mark.parametrize(("path", "task_id"), DIALOGUE)
def test_the_simulated_user_never_reaches_the_agent(path: Path, task_id: str) -> None:
    task = _task(path, task_id)
    assert task.user is not None
    secrets = [
        s
        for s in (task.user.persona, task.user.wants, task.user.unknown, task.user.instructions)
        if s
    ]
    env = _env(path)
    obs, info = env.reset(seed=0, options={"task": task_id})
    seen = [json.dumps(obs), json.dumps(info)]
    for action in oracle_actions(task):
        obs, _, terminated, truncated, info = env.step(action)
        seen += [json.dumps(obs), json.dumps({k: v for k, v in info.items() if k != "score"})]
        if terminated or truncated:
            break
    blob = " ".join(seen)
    for secret in secrets:
        assert " ".join(secret.split()) not in blob


# -- the written policy ---------------------------------------------------------------------------


def _policy_files() -> list[Path]:
    return [PACK / "policy.md", *sorted((PACK / "policy").glob("*.md"))]


def _ground_truth() -> tuple[set[str], set[str], set[str]]:
    """Every id the scenarios use, every literal expected output, and every person named in an
    initial state."""
    ids: set[str] = set()
    outputs: set[str] = set()
    names: set[str] = set()
    for path in SCENARIOS:
        ids |= set(ID.findall(path.read_text()))
        for task in _scenario(path).tasks:
            outputs |= {o for o in task.expected.outputs if not o.startswith("re:")}
            for entity in ("Customer", "Employee", "Contact"):
                for row in (task.initial_state.get(entity) or {}).values():
                    if row and row.get("name"):
                        names.add(row["name"])
    return ids, outputs, names


def test_there_is_a_policy_page_for_every_system_of_the_pack() -> None:
    env = _env(SCENARIOS[0])
    systems = {tool.spec.system for tool in env.pack.catalog.values()}
    assert systems == SYSTEMS
    pages = {p.stem for p in (PACK / "policy").glob("*.md")}
    assert pages == SYSTEMS
    assert (PACK / "policy.md").is_file()


@pytest.mark.parametrize("page", _policy_files(), ids=lambda p: p.stem)
def test_a_policy_page_is_short_and_holds_no_task_ground_truth(page: Path) -> None:
    text = page.read_text()
    lines = text.splitlines()
    limit = 60 if page.name == "policy.md" else 45
    assert 8 <= len(lines) <= limit and len(text) <= 80 * limit
    assert all(len(line) <= 100 for line in lines)
    assert text.startswith("# ")
    ids, outputs, names = _ground_truth()
    assert not [i for i in ids if i in text], "the policy names a task's records"
    assert not ID.findall(text), "the policy names a record id"
    numbers = _numbers(text)
    for output in outputs:
        if NUMBER.fullmatch(output.replace(",", "")):
            assert float(output.replace(",", "")) not in numbers, output
        else:
            assert output.casefold() not in text.casefold(), output
    assert not [n for n in names if n.casefold() in text.casefold()], "the policy names a person"
