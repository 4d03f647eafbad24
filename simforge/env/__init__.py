"""The Gymnasium-style environment API."""

from simforge.env.action import Action, ActionCall, ActionError, parse_action
from simforge.env.core import SimforgeEnv
from simforge.env.pool import TaskPool, make

__all__ = ["Action", "ActionCall", "ActionError", "SimforgeEnv", "TaskPool", "make", "parse_action"]
