"""A ``gymnasium.Env`` over a simforge environment, with ``Text`` spaces.

Observations are the JSON of simforge's observation dicts and actions are JSON (or a plain string,
which is a text to the user: a message, or the final answer once the user has nothing more to
say), so any Gymnasium tooling can drive a simforge scenario. JSON is written with
``ensure_ascii`` so that every character is in the spaces' printable-ASCII charset.

**Malformed actions are observations.** An action that starts like JSON (``{`` or ``[``) but does
not parse, a JSON value of the wrong shape (``{"tool_calls": 3}``, a call without a name) or an
action that is not a string at all is not run: the agent loses the turn (a step of the budget
and its think time pass, nothing is called or said, and the trajectory records the turn with
the error in its metadata) and the observation carries ``"error"`` saying what was wrong, as a
tool answers bad arguments with a 422. The episode goes on; ``info["malformed_actions"]``
counts such turns in the episode. Any other text is a message to the user, as an agent's
reply would be.

**Copies are rebuilt, not cloned.** A ``SimforgeGymEnv`` holds a simulation (simpy, locks, an
open world) that cannot be pickled, so ``pickle`` and ``copy.deepcopy`` rebuild it from its
scenario reference (the id or YAML path it was made from, or a pack folder served as a
sandbox) and its constructor arguments, then replay the current episode (its reset and the
actions since: the simulation is deterministic, and an LLM user's replies come from its cache),
and restore the random generator. The copy is in the same state as the original and goes on
independently. This is what Gymnasium's ``AsyncVectorEnv`` needs with the ``spawn`` and
``forkserver`` contexts, and what wrappers that copy environments need.

**Vector envs.** ``SyncVectorEnv`` and ``AsyncVectorEnv`` run simforge envs (any context), with
``shared_memory=False`` for the async one: Gymnasium (1.x) reads a ``Text`` observation out of
shared memory once, when the vector env is built, and hands back that stale text on every step
after. The observation space here refuses shared memory, so that mistake is an error saying so
rather than empty observations.

Every registered scenario is a Gymnasium id after ``import simforge``
(:func:`~simforge.env.gym_ids.register_scenarios`):
``gymnasium.make("acme/refund-damaged-order-v1", split="train")``.
(``import simforge`` does not import Gymnasium: the ids are registered when Gymnasium is
imported, before or after simforge; :mod:`simforge.env.gym_hook`.)
Scenario ids already have Gymnasium's form ``namespace/name-vN``.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import shared_memory as _shared_memory

from simforge.env.action import ActionError, parse_action
from simforge.env.core import SimforgeEnv
from simforge.env.pool import make
from simforge.errors import NotReady, UsageError, WrongType

if TYPE_CHECKING:
    from simforge.scenario.registry import LoadedScenario

CHARSET = frozenset(string.printable)
MAX_LENGTH = 1_000_000


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


# -- scenario references: what a copy is rebuilt from ----------------------------------------


@dataclass(frozen=True)
class PackRef:
    """A pack folder served on its own (``simforge.scenario.registry.sandbox_scenario``)."""

    path: str


ScenarioRef = str | PackRef
"""A scenario id, a scenario YAML path, or a pack folder (:class:`PackRef`)."""


def open_scenario(ref: Any) -> LoadedScenario:
    """The loaded scenario a reference names: a registered id or a YAML path (``str`` or
    ``os.PathLike``), a :class:`PackRef` or a :class:`~simforge.tools.pack.Pack` (served as a
    sandbox: one free task over all its tools), or a ``LoadedScenario`` itself."""
    from simforge.scenario.registry import LoadedScenario, default_registry, sandbox_scenario
    from simforge.tools.pack import Pack

    if isinstance(ref, LoadedScenario):
        return ref
    if isinstance(ref, SimforgeEnv):
        return ref.loaded
    if isinstance(ref, PackRef | Pack):
        from simforge.scenario import load_pack

        pack = ref if isinstance(ref, Pack) else load_pack(ref.path)
        return sandbox_scenario(pack)
    if isinstance(ref, str | os.PathLike):
        return default_registry.get(os.fspath(ref))
    raise WrongType(
        f"scenario: expected an id, a YAML path, a Pack or a LoadedScenario, got "
        f"{type(ref).__name__}"
    )


def scenario_reference(loaded: LoadedScenario) -> ScenarioRef:
    """What ``loaded`` can be rebuilt from in another process: its id when the registry gives
    back this very scenario, else its YAML path, else (a sandbox) its pack folder. Raises
    ``TypeError`` for a scenario built in memory, which nothing can rebuild."""
    from simforge.scenario.registry import default_registry

    scenario = loaded.scenario
    for ref in (scenario.id, None if loaded.path is None else str(loaded.path)):
        if ref is None:
            continue
        try:
            if default_registry.get(ref).scenario == scenario:
                return ref
        except Exception:  # not registered, or no longer loads: try the next reference
            continue
    pack_path = loaded.pack.path
    if pack_path is not None and scenario.id.startswith("serve/"):
        return PackRef(str(pack_path))
    raise WrongType(
        f"scenario {scenario.id!r} was built in memory: a copy of its environment cannot be "
        "rebuilt (give the scenario by id, YAML path or pack folder)"
    )


# -- the spaces -------------------------------------------------------------------------------


class JsonText(spaces.Text):
    """``spaces.Text`` of JSON (or free text) in printable ASCII, which refuses Gymnasium's
    shared memory: ``AsyncVectorEnv(shared_memory=True)`` would read a ``Text`` observation
    back once, when it is built, and return that stale text on every later step."""


@_shared_memory.create_shared_memory.register(JsonText)
def _no_shared_memory(space: JsonText, n: int = 1, ctx: Any = None) -> Any:
    raise CustomSpaceError(
        "simforge observations are Text: use AsyncVectorEnv(..., shared_memory=False) "
        "(Gymnasium reads Text back from shared memory only once)"
    )


def _space() -> JsonText:
    return JsonText(max_length=MAX_LENGTH, min_length=0, charset=CHARSET)


# -- the environment --------------------------------------------------------------------------


class SimforgeGymEnv(gymnasium.Env[str, str]):
    """``SimforgeGymEnv("acme/refund-damaged-order-v1", task=..., faults=...)``: a scenario id or
    YAML path (a list: one pool of their tasks), a :class:`~simforge.tools.pack.Pack` or
    :class:`PackRef` (a sandbox), or a ``SimforgeEnv`` already made."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        scenario: Any,
        *,
        task: str | None = None,
        faults: str | None = None,
        split: str | None = None,
        user: Any = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise UsageError(f"render_mode {render_mode!r}: only 'ansi' is supported")
        self._kwargs: dict[str, Any] = {
            "task": task, "faults": faults, "split": split, "user": user,
        }
        self._ref: Any = None  # worked out when first needed (a copy)
        if isinstance(scenario, SimforgeEnv):
            self.env: Any = scenario
        else:
            if isinstance(scenario, str | os.PathLike | PackRef):
                self._ref = scenario if isinstance(scenario, PackRef) else os.fspath(scenario)
            elif isinstance(scenario, list | tuple):
                self._ref = [os.fspath(s) for s in scenario]
            self.env = _build(self._ref if self._ref is not None else scenario, self._kwargs)
        self.observation_space = _space()
        self.action_space = _space()
        self.render_mode = render_mode
        self._last = ""
        self._reset_args: tuple[int, dict[str, Any] | None] | None = None
        self._actions: list[Any] = []
        self._malformed = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset_args = (seed, None if options is None else dict(options))
        self._actions = []
        self._malformed = 0
        info["malformed_actions"] = 0
        self._last = _dump(obs)
        return self._last, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        parsed, problem = _interpret(action)
        if problem is not None:
            answer = self._lose_turn(problem)
            self._actions.append(action)
            return answer
        obs, reward, terminated, truncated, info = self.env.step(parsed)
        self._actions.append(action)
        info["malformed_actions"] = self._malformed
        self._last = _dump(obs)
        return self._last, float(reward), terminated, truncated, info

    def _lose_turn(self, problem: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A malformed action: a step passes with nothing called or said; the observation
        says what was wrong."""
        env = self.env
        session = env.session
        if session is None:
            raise NotReady("call reset() before step()")
        session.step([], metadata={"malformed_action": problem})
        self._malformed += 1
        # the env's own end-of-step (score once the budget has run out); TaskPool forwards it
        obs, reward, terminated, truncated, info = env._answer([], None)
        obs["error"] = problem
        info["malformed_actions"] = self._malformed
        info["action_error"] = problem
        self._last = _dump(obs)
        return self._last, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.env.close()

    # -- pickle and deepcopy: rebuild from the reference, replay the episode -------------------

    def _reference(self) -> Any:
        if self._ref is None:
            self._ref = scenario_reference(self.env.loaded)
        return self._ref

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("env", "_last")}
        state["_ref"] = self._reference()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        env = _build(state["_ref"], state["_kwargs"])
        self.__dict__.update(state)
        self.env = env
        self._last = ""
        reset_args, actions = self._reset_args, list(self._actions)
        rng = self._np_random
        rng_seed = self._np_random_seed
        if reset_args is not None:
            seed, options = reset_args
            obs, _ = self.env.reset(seed=seed, options=options)
            self._last = _dump(obs)
            self._actions, self._malformed = [], 0
            for action in actions:
                self.step(action)
        self._np_random, self._np_random_seed = rng, rng_seed


def _build(ref: Any, kwargs: dict[str, Any]) -> Any:
    """The env a reference names (a list of references: one pool of their tasks)."""
    if isinstance(ref, list | str):
        return make(ref, **kwargs)
    return SimforgeEnv(open_scenario(ref), **kwargs)


_JSON_START = ("{", "[")


def _interpret(action: Any) -> tuple[Any, str | None]:
    """``(what to hand the env, None)`` or ``(None, the problem)`` for a malformed action."""
    if not isinstance(action, str):
        return None, f"action: expected a string (JSON or text), got {type(action).__name__}"
    text = action.strip()
    if not text.startswith(_JSON_START):
        return action, None  # free text: a message to the user
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        return None, f"action: not valid JSON ({exc})"
    try:
        parse_action(parsed)  # the shape, checked before anything runs
    except ActionError as exc:
        return None, str(exc)
    except (TypeError, AttributeError, KeyError, ValueError) as exc:  # shapes it trips on
        return None, f"action: malformed ({type(exc).__name__}: {exc})"
    return parsed, None


