"""The Gymnasium-style environment: ``reset(*, seed, options) -> (obs, info)`` and
``step(action) -> (obs, reward, terminated, truncated, info)``.

Observations carry only what an agent may see: the task's instruction, the tool catalog, tool
results and the simulated time. Expected states, reference solutions and validator settings stay
in the scenario, which the environment keeps to itself and hands only to the scorer.
"""

from __future__ import annotations

from typing import Any

from simforge.env.action import fast_calls, parse_action
from simforge.env.initial import task_base
from simforge.faults.library import resolve_profile
from simforge.scenario.model import Task
from simforge.scenario.registry import LoadedScenario, default_registry
from simforge.scoring import Rubric, Score, ScoringContext, default_validators, score
from simforge.sim.session import Budgets, CallRequest, Session
from simforge.trace.episode import Episode, TaskSpec
from simforge.world.store import World


class SimforgeEnv:
    """One scenario's environment; ``reset`` picks a task (``options={"task": id}``)."""

    def __init__(
        self,
        loaded: LoadedScenario,
        *,
        task: str | None = None,
        faults: str | None = None,
        record_limit: int | None = None,
    ) -> None:
        self.loaded = loaded
        self.record_limit = record_limit
        self._default_faults = faults
        resolve_profile(faults, loaded.scenario.faults.custom)  # fail now, not at reset
        self.scenario = loaded.scenario
        self.pack = loaded.pack
        self._default_task = task
        self._next_seed = self.scenario.seeds[0]
        self._episodes = 0
        self.session: Session | None = None
        self.task: Task | None = None
        self.policy_name: str | None = None
        self._score: Score | None = None
        self._trajectory: Episode | None = None
        self._user_turn = 0

    @property
    def spec_id(self) -> str:
        return self.scenario.id

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        options = dict(options or {})
        unknown = set(options) - {"task", "policy", "faults"}
        if unknown:
            allowed = ["faults", "policy", "task"]
            raise ValueError(f"reset options: unknown keys {sorted(unknown)}; allowed: {allowed}")
        if seed is None:
            seed = self._next_seed
        self._next_seed = seed + 1
        self.task = self.scenario.task(options.get("task", self._default_task))
        self.policy_name = options.get("policy")
        world = World(self.pack.schemas, task_base(self.loaded, self.task))
        profile = resolve_profile(
            options.get("faults", self._default_faults), self.scenario.faults.custom
        )
        budgets = self.scenario.budgets
        self.session = Session(
            self.pack.catalog,
            world,
            seed=seed,
            think_time=self.scenario.think_time,
            call_timeout=self.scenario.call_timeout,
            budgets=Budgets(budgets.max_steps, budgets.max_sim_seconds),
            faults=profile,
            background=self.scenario.background,
            record_limit=self.record_limit,
        )
        self._score = None
        self._trajectory = None
        self._user_turn = 0
        self._episodes += 1
        obs = {
            "task": {"id": self.task.id, "instruction": self.task.instruction},
            "tools": self.pack.catalog.to_openai(),
            "time": 0.0,
            "step": 0,
            "results": [],
            "user": None,
        }
        return obs, self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        session = self._require_session()
        results: list[dict[str, Any]] = []
        user: str | None = None
        fast = fast_calls(action)
        if fast is not None:
            results = [o.observation() for o in session.step(fast)]
        elif (act := parse_action(action)).final_answer is not None:
            session.finish(act.final_answer, think=act.think)
        else:
            if act.message is not None and not act.tool_calls:
                user = self._next_user_turn()
            calls = [CallRequest(c.name, c.arguments, c.id) for c in act.tool_calls]
            outcomes = session.step(calls, think=act.think, text=act.message)
            if user is not None:
                session.recorder.user_turn(user, session.now)
            results = [o.observation() for o in outcomes]
        reward = 0.0
        info = self._info()
        if session.done:
            result = self.score()
            reward = result.reward if result.reward is not None else 0.0
            info["score"] = result.summary()
            info["invalid"] = result.reward is None
        obs = {"results": results, "time": session.now, "step": session.steps, "user": user}
        return obs, reward, session.terminated, session.truncated, info

    def trajectory(self) -> Episode:
        """The episode so far (built once, when the episode has ended)."""
        session = self._require_session()
        assert self.task is not None
        if self._trajectory is not None:
            return self._trajectory
        trajectory = session.recorder.trajectory(
            session,
            episode_id=f"{self.scenario.id}#{self.task.id}@{session.seed}",
            scenario=self.scenario.id,
            task=TaskSpec(
                id=self.task.id, instruction=self.task.instruction, user_turns=self.task.user_turns
            ),
            policy=self.policy_name,
        )
        if session.done:
            self._trajectory = trajectory
        return trajectory

    def score(self) -> Score:
        """Verdicts and reward of the episode (final once the episode has ended)."""
        session = self._require_session()
        if self._score is not None:
            return self._score
        assert self.task is not None
        ctx = ScoringContext(
            self.trajectory(),
            session.world,
            self.task,
            tools=self.pack.catalog,
            budgets=self.scenario.budgets.model_dump(),
        )
        extra = [
            (v.name, dict(v.params)) for v in [*self.scenario.validators, *self.task.validators]
        ]
        rubric = Rubric(**self.scenario.rubric.model_dump())
        result = score(ctx, rubric, [*default_validators(ctx), *extra])
        if session.done:
            self._score = result
        return result

    def close(self) -> None:
        self.session = None

    def _next_user_turn(self) -> str | None:
        assert self.task is not None
        turns = self.task.user_turns
        if self._user_turn < len(turns):
            self._user_turn += 1
            return turns[self._user_turn - 1]
        return None

    def _require_session(self) -> Session:
        if self.session is None:
            raise RuntimeError("call reset() before step()")
        return self.session

    def _info(self) -> dict[str, Any]:
        session = self.session
        assert session is not None and self.task is not None
        return {
            "scenario": self.scenario.id,
            "task": self.task.id,
            "seed": session.seed,
            "time": session.now,
            "step": session.steps,
            "truncation_reason": session.truncation_reason,
            "faults": session.fault_profile,
        }


def make(scenario_id: str, *, task: str | None = None, faults: str | None = None) -> SimforgeEnv:
    """The environment of a registered scenario (``domain/name-vN``) or a scenario YAML path,
    optionally under a fault profile (a built-in name, the scenario's own, or a YAML path)."""
    return SimforgeEnv(default_registry.get(scenario_id), task=task, faults=faults)
