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
from simforge.plugins import PLUGINS as _PLUGINS
from simforge.scenario import Scenario, ScenarioError, ScenarioRegistry, load_pack, load_scenario
from simforge.scoring import Rubric, Score, Verdict, validator
from simforge.scoring.plugins import load_validator_plugins as _load_validator_plugins
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
from simforge.version import __version__ as __version__
from simforge.world import EntitySchema, World, entity, entity_base

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


def _load_synthesized_pack(folder: _Any) -> _Any:
    """A pack that ``simforge synth`` wrote (``pack.yaml`` and plain files); the synth layer
    is imported on the first such pack, not with the package."""
    from simforge.synth.pack.loader import load_synth_pack

    return load_synth_pack(folder)


# The default plugin registry's wiring (simforge.plugins): the layers that load scenarios and
# packs cannot import the synth layer or the scorer's plugin loading, so the package root, which
# sits above every layer, hands them over.
_PLUGINS.pack_formats.register("pack.yaml", _load_synthesized_pack)
_PLUGINS.add_source("validator plugins", _load_validator_plugins)


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
