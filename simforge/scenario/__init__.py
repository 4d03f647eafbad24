"""Scenarios: the YAML model, its loader, the registry, and plugin loading by path."""

from simforge.scenario.loader import ScenarioError, load_scenario, parse_scenario
from simforge.scenario.model import CallSpec, Expected, OracleStep, Scenario, Task
from simforge.scenario.plugins import PluginError, load_pack
from simforge.scenario.registry import LoadedScenario, ScenarioRegistry, default_registry

__all__ = [
    "CallSpec",
    "Expected",
    "LoadedScenario",
    "OracleStep",
    "PluginError",
    "Scenario",
    "ScenarioError",
    "ScenarioRegistry",
    "Task",
    "default_registry",
    "load_pack",
    "load_scenario",
    "parse_scenario",
]
