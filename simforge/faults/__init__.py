"""Faults: the perturbation kinds, rules and profiles, seeded fault plans, background load and
drift."""

from simforge.faults.effects import Wrapper
from simforge.faults.kinds import FaultKind
from simforge.faults.library import (
    FaultConfigError,
    builtin_profiles,
    describe_kinds,
    resolve_profile,
)
from simforge.faults.plan import FaultPlan
from simforge.faults.registry import KINDS, Fault
from simforge.faults.rules import NONE, BackgroundLoad, Drift, FaultProfile, FaultRule, Target, When

__all__ = [
    "KINDS",
    "NONE",
    "BackgroundLoad",
    "Drift",
    "Fault",
    "FaultConfigError",
    "FaultKind",
    "FaultPlan",
    "FaultProfile",
    "FaultRule",
    "Target",
    "When",
    "Wrapper",
    "builtin_profiles",
    "describe_kinds",
    "resolve_profile",
]
