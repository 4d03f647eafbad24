"""simforge: production agent traces in; perturbed, scored, reproducible environments out.

The public API is what ``__all__`` lists; everything else is an implementation detail that may
change. Start with :func:`make`::

    env = simforge.make("acme/refund-damaged-order-v1")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"tool_calls": [...]})
"""

from __future__ import annotations

from simforge.env import Action, ActionError, SimforgeEnv, make
from simforge.env.gym_hook import register_when_imported
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


def _register_with_gymnasium() -> None:
    from simforge.env.gym import register_scenarios

    register_scenarios()


# now if Gymnasium is imported, else when it is (importing it costs more than a tenth of a
# second that most processes, workers and servers, never need)
register_when_imported(_register_with_gymnasium)

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
    "LogNormal",
    "Pack",
    "Rubric",
    "Scenario",
    "ScenarioError",
    "ScenarioRegistry",
    "Score",
    "Session",
    "SimforgeEnv",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Trajectory",
    "Uniform",
    "Verdict",
    "World",
    "__version__",
    "crud_tools",
    "entity",
    "entity_base",
    "load_pack",
    "load_scenario",
    "make",
    "tool",
    "validator",
]
