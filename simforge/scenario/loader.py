"""Loading scenario YAML at the border: every error names the file, the line, the field path and
what is allowed, and nothing past this point sees an unchecked scenario."""

from __future__ import annotations

from pathlib import Path

from simforge.config import ConfigError, load_model, parse_model
from simforge.scenario.model import Scenario


class ScenarioError(ConfigError):
    """A scenario file that cannot be used; the message says where and what."""


def load_scenario(path: Path | str) -> Scenario:
    scenario: Scenario = load_model(Scenario, path, ScenarioError)
    return scenario


def parse_scenario(text: str, path: Path | str = "<string>") -> Scenario:
    scenario: Scenario = parse_model(Scenario, text, path, ScenarioError)
    return scenario
