"""The Gymnasium-style environment: ``reset(*, seed, options) -> (obs, info)`` and
``step(action) -> (obs, reward, terminated, truncated, info)``.

Observations carry only what an agent may see: the task's instruction (the user's first
message), the tools the task offers, the policy the agent follows, tool results, the user's
replies and the simulated time. Expected states, reference solutions, validator settings and the
user's hidden scenario stay in the scenario, which the environment keeps to itself and hands only
to the scorer and the user simulator.

The conversation contract (the same in every agent path: this API, the llm policy, an external
harness, the HTTP control plane, OpenEnv and MCP): a text is a message to the user, who
answers; the conversation ends when the user ends it (the scripted user after its last turn, an
LLM user by its signal), when the agent calls a tool that ends it (a transfer to a human), when
the agent gives an explicit ``final_answer``, or at the budgets. The agent's last text is its
final answer for the validators. A user simulator that fails makes the episode invalid.

Without a task, ``reset`` samples one from the environment's tasks with the reset seed: every
block of ``n`` consecutive seeds (``0..n-1``, ``n..2n-1``, ...) visits each of the ``n`` tasks
once, in a seeded order, so a trainer looping over seeds trains on all of them, evenly.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any, Literal

from simforge.env.action import fast_calls, parse_action
from simforge.env.initial import task_base
from simforge.errors import NotReady, UsageError
from simforge.faults.library import resolve_profile
from simforge.scenario.model import Task
from simforge.scenario.registry import LoadedScenario
from simforge.scoring import Rubric, Score, ScoringContext, default_validators, score
from simforge.sim.calls import CallOutcome
from simforge.sim.session import Budgets, CallRequest, Session
from simforge.tools.pack import ToolCatalog
from simforge.trace.episode import Episode, TaskSpec
from simforge.users.base import Turn, User, UserReply, reply_async
from simforge.users.specs import build_user
from simforge.world.store import World

Split = Literal["train", "eval"]
SPLITS: tuple[str, ...] = ("train", "eval")
RESET_OPTIONS = ("faults", "policy", "task")


def sample_task(ids: Sequence[str], seed: int) -> str:
    """The task of a reset ``seed``: each block of ``len(ids)`` consecutive seeds is a seeded
    permutation of ``ids`` (stable across processes: ``random.Random`` seeds a string by its
    SHA-512)."""
    n = len(ids)
    if n == 1:
        return ids[0]
    block, position = divmod(seed, n)
    return ids[_task_order(n, block)[position]]


@functools.lru_cache(maxsize=256)
def _task_order(n: int, block: int) -> tuple[int, ...]:
    """The seeded permutation of ``range(n)`` for one block of seeds: seeding a generator from
    a string (its SHA-512) and shuffling cost about 20 us, once per block rather than once per
    reset (a trainer's seeds run through a block one reset after another)."""
    order = list(range(n))
    random.Random(f"simforge-tasks:{n}:{block}").shuffle(order)
    return tuple(order)


class SimforgeEnv:
    """One scenario's environment. ``task`` fixes the task of every reset (else each reset
    samples one); ``split`` keeps the tasks of one split (``train`` or ``eval``); ``user`` is the
    simulated user (a :class:`~simforge.users.User`, or a spec: ``scripted``, ``llm:MODEL``;
    default ``$SIMFORGE_USER`` or scripted)."""

    def __init__(
        self,
        loaded: LoadedScenario,
        *,
        task: str | None = None,
        faults: str | None = None,
        record_limit: int | None = None,
        split: Split | None = None,
        user: User | str | None = None,
        strict_tools: bool = False,
    ) -> None:
        self.loaded = loaded
        self.strict_tools = strict_tools
        """Offer tools in OpenAI's strict mode (every parameter required, optional ones
        nullable) and read a ``null`` the agent sends for an optional parameter as not given
        (:func:`simforge.tools.spec.strict_arguments`)."""
        self.record_limit = record_limit
        self._default_faults = faults
        resolve_profile(faults, loaded.profiles)  # fail now, not at reset
        self.scenario = loaded.scenario
        self.pack = loaded.pack
        self.split = split
        self._tasks = _split_tasks(self.scenario.tasks, split, self.scenario.id)
        if task is not None:
            chosen = self.scenario.task(task)
            if chosen not in self._tasks:
                raise UsageError(
                    f"task {task!r} of {self.scenario.id!r} is in the {chosen.split!r} split, "
                    f"not {split!r}"
                )
        self._default_task = task
        self.user: User = user if user is not None and not isinstance(user, str) else (
            build_user(user)
        )
        self._next_seed = self.scenario.seeds[0]
        self._episodes = 0
        self.session: Session | None = None
        self.task: Task | None = None
        self.policy_name: str | None = None
        self._score: Score | None = None
        self._trajectory: Episode | None = None
        self._dialogue: list[Turn] = []
        self._last_text: str | None = None
        self._ending: frozenset[str] = frozenset()
        self._endings: dict[int, tuple[ToolCatalog, frozenset[str]]] = {}
        self._surface_version = 0

    @property
    def spec_id(self) -> str:
        return self.scenario.id

    @property
    def default_faults(self) -> str | None:
        """The fault profile of a reset that names none (``make(..., faults=)``)."""
        return self._default_faults

    @property
    def tasks(self) -> list[str]:
        """The ids of the tasks a reset may pick (those of the split, if one was chosen)."""
        return [t.id for t in self._tasks]

    @property
    def last_text(self) -> str | None:
        """What the agent last said in this episode (a message, or text beside its calls)."""
        return self._last_text

    @property
    def tools(self) -> ToolCatalog:
        """The tools the current task offers (its catalog; a subset of the pack's)."""
        assert self.task is not None, "call reset() first"
        return self.loaded.tools(self.task.id)

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tools the agent is offered now, OpenAI function format: the task's, as the
        episode's surface faults present them (renamed, delayed, distractors)."""
        session = self._require_session()
        if session.surface is not None:
            return session.offered()
        return self.tools.to_openai()

    def privileged_task(self) -> Task:
        """The task as a privileged policy (the oracle) plays it in this episode: its
        reference calls rewritten for the episode's tool surface, so renamed tools and
        parameters stay reachable."""
        task = self.task
        session = self._require_session()
        assert task is not None
        surface = session.surface
        if surface is None or not task.oracle:
            return task
        steps = []
        for step in task.oracle:
            calls = []
            for call in step.calls:
                name, args = surface.rewrite_call(call.tool, dict(call.args))
                calls.append(call.model_copy(update={"tool": name, "args": args}))
            steps.append(step.model_copy(update={"calls": calls}))
        return task.model_copy(update={"oracle": steps})

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        info = self.start(seed=seed, options=options)
        return self.initial_observation(), info

    def start(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """:meth:`reset` without building its observation, for a caller that builds it itself
        (:meth:`initial_observation`) or does not need it: the reset's info."""
        options = dict(options or {})
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            raise UsageError(
                f"reset options: unknown keys {sorted(unknown)}; allowed: {list(RESET_OPTIONS)}"
            )
        if seed is None:
            seed = self._next_seed
        self._next_seed = seed + 1
        task_id = options.get("task", self._default_task)
        if task_id is None:
            task_id = sample_task(self.tasks, seed)
        self.task = task = self.scenario.task(task_id)
        self.policy_name = options.get("policy")
        world = World(self.pack.schemas, task_base(self.loaded, task))
        profile = resolve_profile(options.get("faults", self._default_faults), self.loaded.profiles)
        if task.faults:  # the task's own rules apply under every profile, "none" included
            profile = profile.model_copy(update={"rules": [*task.faults, *profile.rules]})
        budgets = self.scenario.budgets
        tools = self.loaded.tools(task.id)
        self.session = Session(
            tools,
            world,
            seed=seed,
            think_time=self.scenario.think_time,
            call_timeout=self.scenario.call_timeout,
            budgets=Budgets(budgets.max_steps, budgets.max_sim_seconds),
            faults=profile,
            background=self.scenario.background,
            record_limit=self.record_limit,
            catalog=self.pack.catalog,
        )
        ending = self._endings.get(id(tools))
        if ending is None or ending[0] is not tools:  # once per catalog, not per reset
            ending = self._endings[id(tools)] = (
                tools, frozenset(n for n, t in tools.items() if t.outline.ends_conversation))
        self._ending = ending[1]
        self._score = None
        self._trajectory = None
        self._dialogue = [Turn("user", task.instruction)]
        self._last_text = None
        self._surface_version = 0
        self._episodes += 1
        self.user.reset(task, seed=seed, scenario=self.scenario.id)
        return self._info()

    def initial_observation(self, catalog_tools: bool = True) -> dict[str, Any]:
        """What ``reset`` shows the agent: the instruction, the tools the task offers and the
        policy (rebuilt on demand: a served session need not keep it).

        ``catalog_tools=False``: ``tools`` is ``None`` when they are the task's catalog as it
        is (no surface faults, no strict mode), for a caller that sends that from a cache of
        its own (the server's reset observation); tools a surface or strict mode changes are
        built as always."""
        task = self.task
        assert task is not None, "call reset() first"
        session = self.session
        surface = session.surface if session is not None else None
        strict = self.strict_tools
        tools = surface.to_openai(0.0, strict=strict) if surface is not None else (
            self.loaded.tools(task.id).to_openai(strict=strict)
            if catalog_tools or strict else None)
        return {
            "task": {"id": task.id, "instruction": task.instruction},
            "tools": tools,
            "policy": self.loaded.policy,
            "time": 0.0,
            "step": 0,
            "results": [],
            "user": None,
        }

    # -- a step: the agent's action, then (for a message) the user's reply ----------------------

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        results, ask = self._act(action)
        user = None
        if ask:
            try:
                reply: UserReply | BaseException = self.user.reply(list(self._dialogue))
            except Exception as exc:  # a user simulator's failure is never the agent's
                reply = exc
            user = self._hear(reply)
        return self._answer(results, user)

    async def astep(
        self, action: Any
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """:meth:`step` for an event loop: the user's reply is awaited (an LLM user's request
        does not block a server or an async runner)."""
        results, ask = self._act(action)
        user = None
        if ask:
            try:
                reply: UserReply | BaseException = await reply_async(
                    self.user, list(self._dialogue)
                )
            except Exception as exc:
                reply = exc
            user = self._hear(reply)
        return self._answer(results, user)

    def _act(self, action: Any) -> tuple[list[dict[str, Any]], bool]:
        """Run the action's calls or record its text. ``(results, True)`` when the action was
        a message the user must answer now."""
        session = self._require_session()
        fast = fast_calls(action)
        if fast is not None:
            return self._calls(session, fast), False
        act = parse_action(action)
        if act.final_answer is not None:
            session.finish(act.final_answer, think=act.think, metadata=act.metadata)
            return [], False
        calls = [CallRequest(c.name, c.arguments, c.id) for c in act.tool_calls]
        if self.strict_tools:
            calls = [self._unstrict(session, c) for c in calls]
        outcomes = session.step(calls, think=act.think, text=act.message, metadata=act.metadata)
        if act.message is not None:
            self._last_text = act.message
        if calls:
            if self._ending:
                self._end_by_tool(session, outcomes)
            return [o.observation() for o in outcomes], False
        if session.done:  # the budget ran out before the user could answer
            return [], False
        assert act.message is not None
        self._dialogue.append(Turn("agent", act.message))
        return [], True

    def step_calls(
        self, calls: list[CallRequest]
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """:meth:`step` of an action that is tool calls alone, given as the kernel's requests
        (what :func:`~simforge.env.action.fast_calls` makes of one): a caller that has checked
        the action's shape already does not pay for a second look at it."""
        session = self._require_session()
        return self._answer(self._calls(session, calls), None, session)

    def _calls(self, session: Session, calls: list[CallRequest]) -> list[dict[str, Any]]:
        if self.strict_tools:
            calls = [self._unstrict(session, c) for c in calls]
        outcomes = session.step(calls)
        if self._ending:
            self._end_by_tool(session, outcomes)
        return [o.observation() for o in outcomes]

    @staticmethod
    def _unstrict(session: Session, call: CallRequest) -> CallRequest:
        """A strict-mode call's arguments as the tool takes them (nulls of optional ones out)."""
        from simforge.tools.spec import strict_arguments

        tool = session.tools.get(call.tool)
        if tool is None or not isinstance(call.args, dict):
            return call
        return CallRequest(call.tool, strict_arguments(tool.spec.input_schema, call.args),
                           call.call_id)

    def _end_by_tool(self, session: Session, outcomes: list[CallOutcome]) -> None:
        if session.done:
            return
        for outcome in outcomes:
            if outcome.tool in self._ending and outcome.error is None:
                session.conclude(self._last_text)
                return

    def _hear(self, reply: UserReply | BaseException) -> str | None:
        """Record the user's reply; end the conversation when the user ended it."""
        session = self._require_session()
        if isinstance(reply, BaseException):
            session.abort(f"user simulator: {type(reply).__name__}: {reply}"[:1000])
            return None
        if not isinstance(reply, UserReply):
            session.abort(f"user simulator: replied {type(reply).__name__}, not a UserReply")
            return None
        text = reply.text
        if text:
            session.recorder.user_turn(text, session.now, reply.metadata)
            self._dialogue.append(Turn("user", text))
        if reply.ended:
            session.conclude(self._last_text)
        return text

    def _answer(
        self, results: list[dict[str, Any]], user: str | None, session: Session | None = None
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if session is None:
            session = self._require_session()
        reward = 0.0
        now = session.now
        info = self._info(session, now)
        if session.terminated or session.truncated:
            result = self.score()
            reward = result.reward if result.reward is not None else 0.0
            info["score"] = result.summary()
            info["invalid"] = result.reward is None
        obs = {"results": results, "time": now, "step": session.steps, "user": user}
        surface = session.surface
        if surface is not None and surface.delays:
            version = surface.version(session.now)
            if version != self._surface_version:  # tools appeared or changed: show them
                self._surface_version = version
                obs["tools"] = surface.to_openai(session.now)
        return obs, reward, session.terminated, session.truncated, info

    # -- the episode's record and its score ----------------------------------------------------

    def trajectory(self) -> Episode:
        """The episode so far (built once, when the episode has ended)."""
        session = self._require_session()
        assert self.task is not None
        if self._trajectory is not None:
            return self._trajectory
        user = getattr(self.user, "name", "scripted")
        trajectory = session.recorder.trajectory(
            session,
            episode_id=f"{self.scenario.id}#{self.task.id}@{session.seed}",
            scenario=self.scenario.id,
            task=TaskSpec(
                id=self.task.id, instruction=self.task.instruction, user_turns=self.task.user_turns
            ),
            policy=self.policy_name,
            metadata=None if user == "scripted" else {"user": user},
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
            plugins=self.loaded.plugins,
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
        close = getattr(self.user, "close", None)
        if callable(close):
            close()

    def _require_session(self) -> Session:
        if self.session is None:
            raise NotReady("call reset() before step()")
        return self.session

    def _info(self, session: Session | None = None, now: float | None = None) -> dict[str, Any]:
        if session is None:
            session = self.session
        assert session is not None and self.task is not None
        return {
            "scenario": self.scenario.id,
            "task": self.task.id,
            "seed": session.seed,
            "time": session.now if now is None else now,
            "step": session.steps,
            "truncation_reason": session.truncation_reason,
            "faults": session.fault_profile,
        }


def _split_tasks(tasks: Sequence[Task], split: str | None, scenario: str) -> list[Task]:
    if split is None:
        return list(tasks)
    if split not in SPLITS:
        raise UsageError(f"split {split!r}: expected one of {list(SPLITS)}")
    chosen = [t for t in tasks if t.split == split]
    if not chosen:
        counts = {s: sum(t.split == s for t in tasks) for s in SPLITS}
        raise UsageError(f"scenario {scenario!r} has no task in the {split!r} split ({counts})")
    return chosen
