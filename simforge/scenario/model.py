"""The Scenario: a YAML file with an id ``domain/name-vN`` naming a pack, tasks, budgets and
seeds. Every model forbids unknown fields, so a typo is an error that names the field instead of
a setting silently ignored."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simforge.config import NotFound
from simforge.faults.rules import BackgroundLoad, Drift, Event, FaultProfile, FaultRule
from simforge.tools.spec import Constant, LatencyModel

SCENARIO_ID = r"^[a-z0-9][a-z0-9_\-]*/[a-z0-9][a-z0-9_\-]*-v[0-9]+$"

EntityRows = dict[str, dict[str, dict[str, Any] | None]]
"""``{entity: {id: row fields, or null for "absent"}}``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CallSpec(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class OracleStep(_Strict):
    """One step of a reference solution: calls issued together, a message to the user (who
    answers with the task's next scripted turn), or the final answer."""

    calls: list[CallSpec] = Field(default_factory=list)
    message: str | None = None
    answer: str | None = None
    think: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_kind(self) -> OracleStep:
        kinds = sum([bool(self.calls), self.message is not None, self.answer is not None])
        if kinds != 1:
            raise ValueError(
                "an oracle step has exactly one of `calls`, `message` or `answer`"
            )
        return self


class CreatedMatch(_Strict):
    """An entity the task must create: some row of ``entity`` created during the episode whose
    fields include ``match``."""

    entity: str
    match: dict[str, Any]


class Expected(_Strict):
    """Ground truth, held by the scorer only. ``state`` gives the fields entities must have at
    the end (``null`` for "must not exist"); ``created`` entities that must have been created;
    ``outputs`` the facts the final answer must state; ``touch`` the (entity, fields) the task may
    change beyond those (the allow-list of the collateral-damage check)."""

    state: EntityRows = Field(default_factory=dict)
    created: list[CreatedMatch] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    allow_changes: dict[str, list[str]] = Field(default_factory=dict)


class ValidatorConfig(_Strict):
    """A validator to run on top of the defaults (state_matches, required_outputs,
    no_collateral_damage), with its settings. Settings are ground truth: only the scorer sees
    them."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class RubricConfig(_Strict):
    """How verdicts become a reward (see ``simforge.scoring.rubric``)."""

    correctness: Literal["product", "weighted_mean"] = "product"
    weights: dict[str, float] = Field(default_factory=dict)
    gate_value: float = Field(0.0, ge=0.0, le=1.0)
    shaping: float = Field(0.1, ge=0.0, le=1.0)


class UserSpec(_Strict):
    """Who the simulated user is, for a user simulator (an LLM playing the user); never shown to
    the agent. The agent hears only what the user says: the instruction (the user's first
    message), then the user's replies. Each field is free text (``knows`` may be a mapping of
    facts); all are optional, and an LLM user is told only what is given.

    - ``persona``: who they are and how they speak;
    - ``wants``: why they got in touch, what outcome they want;
    - ``knows``: facts they hold and give when asked (an order id, the email on the account);
    - ``unknown``: what they do not know (and must not invent);
    - ``instructions``: how to behave (insist, refuse, confirm only after hearing the amount,
      change their mind once the agent has offered X).
    """

    persona: str | None = None
    wants: str | None = None
    knows: str | dict[str, Any] | None = None
    unknown: str | None = None
    instructions: str | None = None


TOOL_PATTERN = r"^[A-Za-z0-9_\-*?\[\]!]{1,128}$"
"""A tool name or a glob over tool names (``fnmatch``: ``get_*``, ``*_order``)."""
ToolRef = Annotated[str, Field(pattern=TOOL_PATTERN)]


class PolicyFile(_Strict):
    """A policy kept in a markdown file, relative to the scenario file."""

    file: str = Field(min_length=1)


class Task(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    instruction: str = Field(min_length=1)
    user_turns: list[str] = Field(default_factory=list)
    """The scripted user's replies, in order: one per message of the agent; after the last, the
    conversation ends and the agent's next text is its final answer."""
    user: UserSpec | None = None
    tools: list[ToolRef] | None = Field(None, min_length=1)
    """The tools this task offers (names and globs); default: the scenario's."""
    split: Literal["train", "eval"] = "train"
    faults: list[FaultRule] = Field(default_factory=list)
    """Fault rules that always apply to this task, on top of the run's profile (a system that
    is down for the whole episode: the impossible variants, :mod:`simforge.scenario.impossible`)."""
    initial_state: EntityRows = Field(default_factory=dict)
    expected: Expected = Field(default_factory=Expected)
    oracle: list[OracleStep] = Field(default_factory=list)
    validators: list[ValidatorConfig] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


MAX_SEED = 2**63 - 1
"""Seeds are stored as SQL BIGINT (and drawn as 64-bit streams)."""
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


class WorldConfig(_Strict):
    seed: Seed = 0
    size: str | int = "small"


class BudgetConfig(_Strict):
    max_steps: int = Field(30, ge=1)
    max_sim_seconds: float = Field(3600.0, gt=0)


class ScenarioFaults(_Strict):
    """``profiles``: the fault profiles under which a robust agent can still solve the tasks
    (``none`` is always the paired baseline); ``custom``: profiles defined by this scenario."""

    profiles: list[str] = Field(default_factory=lambda: ["none"])
    custom: list[FaultProfile] = Field(default_factory=list)


class Scenario(_Strict):
    id: str = Field(pattern=SCENARIO_ID)
    description: str = ""
    """The grader's notes: what the tasks test and the behaviour expected (for people reading
    the scenario list; never served to agents)."""
    agent_description: str | None = None
    """What an agent may be told of the scenario (OpenEnv's ``/metadata``); default: nothing
    but its id."""
    pack: str
    world: WorldConfig = Field(default_factory=WorldConfig)
    tasks: list[Task] = Field(min_length=1)
    budgets: BudgetConfig = Field(default_factory=BudgetConfig)
    think_time: LatencyModel = Field(default_factory=lambda: Constant(seconds=2.0))
    call_timeout: float | None = Field(30.0, gt=0)
    seeds: list[Seed] = Field(default_factory=lambda: [0, 1, 2], min_length=1)
    tags: list[str] = Field(default_factory=list)
    faults: ScenarioFaults = Field(default_factory=ScenarioFaults)
    background: list[BackgroundLoad | Drift | Event] = Field(default_factory=list)
    validators: list[ValidatorConfig] = Field(default_factory=list)
    rubric: RubricConfig = Field(default_factory=RubricConfig)
    tools: list[ToolRef] | None = Field(None, min_length=1)
    """The tools the scenario offers (names and globs). Default: those its tasks' reference
    solutions and validators name, plus the other tools of the same systems, at most
    :data:`~simforge.scenario.offer.MAX_TOOLS`."""
    policy: str | PolicyFile | None = None
    """The policy the agent follows (markdown, or ``{file: policy.md}``); default: the pack's
    policy for the systems the scenario offers."""

    @model_validator(mode="after")
    def _unique_tasks(self) -> Scenario:
        seen: dict[str, int] = {}
        for i, task in enumerate(self.tasks):
            if task.id in seen:
                first = seen[task.id]
                raise ValueError(
                    f"tasks[{i}].id: duplicate task id {task.id!r} (first at tasks[{first}])"
                )
            seen[task.id] = i
        return self

    @property
    def domain(self) -> str:
        return self.id.split("/", 1)[0]

    def task(self, task_id: str | None) -> Task:
        if task_id is None:
            return self.tasks[0]
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise NotFound(
            f"scenario {self.id!r} has no task {task_id!r}; tasks: {[t.id for t in self.tasks]}"
        )
