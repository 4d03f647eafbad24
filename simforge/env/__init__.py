"""The Gymnasium-style environment API."""

from simforge.env.action import Action, ActionCall, ActionError, parse_action
from simforge.env.core import SimforgeEnv, make

__all__ = ["Action", "ActionCall", "ActionError", "SimforgeEnv", "make", "parse_action"]
