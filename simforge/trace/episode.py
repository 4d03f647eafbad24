"""The Episode: one agent trajectory, normalised from any trace format or recorded by a session.

Every ingestion adapter produces exactly this model, and every simulated session records into it
(with :class:`SimulationRecord` filled in), so a simulated run can be exported, ingested, replayed
and scored exactly like a production trace. The scorer depends on this model, never on the kernel.

Times are float seconds. For recorded traces they are Unix epoch seconds; for simulated runs they
are simulated seconds since the episode's reset. ``call_id`` is unique inside an episode: adapters
de-duplicate ids that a source reused and keep the original in ``source_call_id``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
Requestor = Literal["assistant", "user", "environment"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """One call of a tool, with what came back.

    ``args`` is the parsed argument object (``None`` when the source's argument text was not valid
    JSON, in which case ``raw_args`` keeps it); ``raw_args`` holds the source's string form when
    it had one. ``result`` is the parsed result (a string that held JSON is parsed);
    ``raw_result`` keeps the original string. ``error`` is the error text when the call failed.
    """

    call_id: str
    tool: str
    args: dict[str, Any] | None = None
    raw_args: str | None = None
    result: Any = None
    raw_result: str | None = None
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    requestor: Requestor = "assistant"
    source_call_id: str | None = None
    message_index: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.started_at


class Message(_Model):
    """One turn of the dialogue. Assistant and user messages list the calls they issued by id;
    a tool message names the call it answers."""

    role: Role
    content: str | None = None
    tool_call_ids: list[str] = Field(default_factory=list)
    call_id: str | None = None
    timestamp: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class TaskSpec(_Model):
    """What the agent was asked: the instruction and the user's side of the dialogue."""

    id: str | None = None
    instruction: str | None = None
    user_turns: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Outcome(_Model):
    """Labels the source attached to the run (a benchmark's reward, a success flag)."""

    reward: float | None = None
    success: bool | None = None
    labels: dict[str, Any] = Field(default_factory=dict)


class Source(_Model):
    """Where an episode came from: the format, the file and the record inside it."""

    format: str
    path: str | None = None
    record: str | None = None


class InjectedFault(_Model):
    """A perturbation that fired during a simulated call: which call, which kind, with which
    parameters, and what the agent saw instead of the clean result."""

    kind: str
    tool: str
    call_id: str | None = None
    call_index: int
    sim_time: float
    rule: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    observed: Any = None


class FieldChange(_Model):
    old: Any = None
    new: Any = None


class EntityChange(_Model):
    """One entity's change between two moments of a world; ``fields`` is empty for a create or a
    delete (``before``/``after`` hold the whole row then)."""

    entity: str
    id: str
    op: Literal["created", "updated", "deleted"]
    fields: dict[str, FieldChange] = Field(default_factory=dict)
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class SimulationRecord(_Model):
    """What only a simulation knows about a run."""

    scenario: str
    task: str
    seed: int
    policy: str | None = None
    steps: int = 0
    sim_time: float = 0.0
    terminated: bool = False
    truncated: bool = False
    truncation_reason: str | None = None
    final_answer: str | None = None
    fault_profile: str = "none"
    faults: list[InjectedFault] = Field(default_factory=list)
    world_diff: list[EntityChange] = Field(default_factory=list)
    invalid_reason: str | None = None
    world_events: list[dict[str, Any]] = Field(default_factory=list)
    """What other actors did during the episode (``{at, name, tool, args, ok, changed}``):
    changes in ``world_diff`` that are theirs, not the agent's."""


class Episode(_Model):
    """One trajectory. ``simulation`` is set when simforge produced it (a Trajectory)."""

    id: str
    source: Source
    task: TaskSpec = Field(default_factory=TaskSpec)
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    outcome: Outcome = Field(default_factory=Outcome)
    metadata: dict[str, Any] = Field(default_factory=dict)
    simulation: SimulationRecord | None = None

    def calls_to(self, tool: str) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.tool == tool]


Trajectory = Episode
"""A simulated run is an Episode whose ``simulation`` record is filled in."""

M = TypeVar("M", bound=BaseModel)


def trusted(model: type[M]) -> Callable[[dict[str, Any]], M]:
    """A builder of ``model`` from a dict whose every value already has its field's type, that
    does not validate it again: what pydantic's ``model_construct`` is for, which takes about
    50 us a message in pydantic 2.14 where this takes a dict merge (validation takes 0.8 us).

    Only for dicts that simforge's own code builds field by field from values whose type it has
    checked or made: the messages and calls of :meth:`Conversation.built
    <simforge.trace.formats._conversation.Conversation.built>`, the fault records of
    :class:`~simforge.faults.plan.FaultPlan`. The result is the model that validation would
    give: the same values, defaults and ``model_fields_set`` (the tests compare both on every
    real trace, fixture and fuzzed record).
    """
    fields = model.model_fields
    defaults = {
        name: None if field.default_factory is not None else field.default
        for name, field in fields.items()
    }
    factories = tuple(
        (name, field.default_factory)
        for name, field in fields.items()
        if field.default_factory is not None
    )

    def build(data: dict[str, Any]) -> M:
        values = {**defaults, **data}
        for name, factory in factories:
            if name not in data:
                values[name] = factory()  # type: ignore[call-arg]
        built = _new(model)
        _set_dict(built, values)
        _set_fields_set(built, set(data))
        _set_extra(built, None)
        _set_private(built, None)
        return built

    return build


# BaseModel's slots, set through their descriptors as model_construct does (one lookup each
# here rather than one per call through object.__setattr__)
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__

