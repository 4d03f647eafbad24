"""A ``gymnasium.Env`` over a simforge environment, with ``Text`` spaces.

Observations are the JSON of simforge's observation dicts and actions are JSON (or a plain string,
which is a final answer), so any Gymnasium tooling can drive a simforge scenario. JSON is written
with ``ensure_ascii`` so that every character is in the spaces' printable-ASCII charset; an action
that is not valid JSON is the agent's final answer, as free text would be.
"""

from __future__ import annotations

import json
import string
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
        render_mode: str | None = None,
    ) -> None:
        self.env = (
            scenario
            if isinstance(scenario, SimforgeEnv)
            else make(scenario, task=task, faults=faults)
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
