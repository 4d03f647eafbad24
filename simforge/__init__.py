"""simforge: production agent traces in; perturbed, scored, reproducible environments out.

The public API is what ``__all__`` lists; everything else is an implementation detail that may
change. Start with :func:`make`::

    env = simforge.make("acme/refund-damaged-order-v1")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"tool_calls": [...]})
"""

from __future__ import annotations

from typing import Any as _Any

from simforge.env import Action, ActionError, SimforgeEnv, make
from simforge.env.gym_hook import register_when_imported as _register_when_imported
from simforge.errors import InfrastructureError, PluginError, SimforgeError, UserError
from simforge.scenario import Scenario, ScenarioError, ScenarioRegistry, load_pack, load_scenario
from simforge.scoring import Rubric, Score, Verdict, validator
from simforge.sim import Budgets, CallRequest, Session
from simforge.tools import (
    Constant,
    Empirical,
    ErrorModel,
    LogNormal,
    Pack,
    Tool,
    ToolContext,
    ToolError,
    ToolSpec,
    Uniform,
    crud_tools,
    tool,
)
from simforge.trace import Episode, ToolCall, Trajectory
from simforge.world import EntitySchema, World, entity, entity_base

__version__ = "0.1.0"

_LAZY = {
    "RunStore": "simforge.runs.store",
    "StoreError": "simforge.runs.store",
    "create_app": "simforge.serve.app",
    "synthesize": "simforge.synth.pipeline",
}
"""Public names whose modules are heavy (the serving stack, SQLAlchemy, the learners), imported
on first use so that ``import simforge`` stays what an environment needs."""


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simforge' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def _register_with_gymnasium() -> None:
    from simforge.env.gym_ids import register_scenarios

    register_scenarios()


# now if Gymnasium is imported, else when it is (importing it costs more than a tenth of a
# second that most processes, workers and servers, never need)
_register_when_imported(_register_with_gymnasium)

__all__ = [
    "Action",
    "ActionError",
    "Budgets",
    "CallRequest",
    "Constant",
    "Empirical",
    "EntitySchema",
    "Episode",
    "ErrorModel",
    "InfrastructureError",
    "LogNormal",
    "Pack",
    "PluginError",
    "Rubric",
    "RunStore",
    "Scenario",
    "ScenarioError",
    "ScenarioRegistry",
    "Score",
    "Session",
    "SimforgeEnv",
    "SimforgeError",
    "StoreError",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Trajectory",
    "Uniform",
    "UserError",
    "Verdict",
    "World",
    "__version__",
    "create_app",
    "crud_tools",
    "entity",
    "entity_base",
    "load_pack",
    "load_scenario",
    "make",
    "synthesize",
    "tool",
    "validator",
]
