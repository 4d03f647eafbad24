"""A ``gymnasium.Env`` over a simforge environment, with ``Text`` spaces.

Observations are the JSON of simforge's observation dicts and actions are JSON (or a plain string,
which is a text to the user: a message, or the final answer once the user has nothing more to
say), so any Gymnasium tooling can drive a simforge scenario. JSON is written with
``ensure_ascii`` so that every character is in the spaces' printable-ASCII charset; an action
that is not valid JSON is free text, as an agent's reply would be.

Every registered scenario is a Gymnasium id after ``import simforge``
(:func:`register_scenarios`): ``gymnasium.make("acme/refund-damaged-order-v1", split="train")``.
Scenario ids already have Gymnasium's form ``namespace/name-vN``.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from simforge.env.core import SimforgeEnv, make

CHARSET = frozenset(string.printable)
MAX_LENGTH = 1_000_000


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


class SimforgeGymEnv(gymnasium.Env[str, str]):
    """``SimforgeGymEnv("acme/refund-damaged-order-v1", task=..., faults=...)``."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        scenario: str | SimforgeEnv,
        *,
        task: str | None = None,
        faults: str | None = None,
        split: str | None = None,
        user: Any = None,
        render_mode: str | None = None,
    ) -> None:
        self.env = (
            scenario
            if isinstance(scenario, SimforgeEnv)
            else make(scenario, task=task, faults=faults, split=split, user=user)  # type: ignore[arg-type]
        )
        self.observation_space = spaces.Text(max_length=MAX_LENGTH, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=MAX_LENGTH, min_length=0, charset=CHARSET)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: only 'ansi' is supported")
        self.render_mode = render_mode
        self._last = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        obs, info = self.env.reset(seed=seed, options=options)
        self._last = _dump(obs)
        return self._last, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        try:
            parsed: Any = json.loads(action)
        except (TypeError, ValueError):
            parsed = action
        if not isinstance(parsed, dict | list):
            parsed = action  # a bare JSON string or number is free text: the final answer
        obs, reward, terminated, truncated, info = self.env.step(parsed)
        self._last = _dump(obs)
        return self._last, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.env.close()


ENTRY_POINT = "simforge.env.gym:SimforgeGymEnv"
_ID_LINE = re.compile(rb"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _scenario_ids() -> list[str]:
    """Scenario ids from the scenario folders, read off each file's ``id:`` line (parsing and
    validating every scenario costs most of a second; this costs milliseconds). A file whose
    id is not among its first 64 KiB is parsed; a broken one is left to ``gymnasium.make``."""
    from simforge.paths import resource_dirs
    from simforge.synth.pack_files import MANIFEST

    ids: list[str] = []
    for root in resource_dirs("scenarios"):
        for path in sorted(Path(root).rglob("*.yaml")):
            if path.name == MANIFEST:
                continue
            try:
                with path.open("rb") as f:
                    head = f.read(1 << 16)
            except OSError:
                continue
            match = _ID_LINE.search(head)
            if match is not None:
                ids.append(match.group(1).decode("utf-8", "replace"))
                continue
            try:
                from simforge.scenario.loader import load_scenario

                ids.append(load_scenario(path).id)
            except Exception:  # gymnasium.make of it will say what is wrong
                continue
    return ids


def register_scenarios() -> list[str]:
    """Register every scenario of the scenario folders with Gymnasium (once per id); returns the
    ids registered now. ``gymnasium.make(id, task=..., faults=..., split=..., user=...)``
    passes its keywords to :class:`SimforgeGymEnv`."""
    registry = gymnasium.envs.registration.registry
    added = []
    for scenario_id in dict.fromkeys(_scenario_ids()):
        if scenario_id in registry:
            continue
        try:
            gymnasium.register(
                id=scenario_id, entry_point=ENTRY_POINT, kwargs={"scenario": scenario_id}
            )
        except gymnasium.error.Error:
            continue  # not an id Gymnasium accepts; simforge.make still takes it
        added.append(scenario_id)
    return added
