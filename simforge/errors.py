"""simforge's exceptions, one tree::

    SimforgeError
    ├── UserError                 bad input; the message says where and what, in one line
    │   ├── ConfigError           (config) a file that cannot be used: file, line, field
    │   │   ├── ScenarioError     (scenario.loader) a scenario that cannot be loaded
    │   │   └── FaultConfigError  (faults.library) a fault profile that cannot be used
    │   ├── NotFound              (config) a name that is not registered; says what is
    │   ├── PluginError           a plugin (pack, validator, fault kind, format) that cannot
    │   │   │                     be used, named
    │   │   ├── FormatPluginError (trace.errors) a trace-format plugin
    │   │   └── ToolDefinitionError (tools.errors) a tool a pack defines wrongly
    │   ├── TraceError            (trace.errors) a trace that cannot be read; TraceFormatError
    │   ├── UsageError            an argument or call the API refuses (a ValueError)
    │   │   ├── NotReady          a call out of order: a step before reset (RuntimeError)
    │   │   └── WrongType         an argument of a type the API cannot use (TypeError)
    │   ├── ActionError           (env.action) an agent's action that is not one
    │   ├── SessionClosed         (sim.session) a step after the episode ended
    │   ├── SeedDataError         (world.schema) seed rows that do not fit their entity
    │   ├── BackgroundError       (sim.background) background load that cannot run
    │   ├── OfferError            (scenario.offer) a tool offer that names no tool
    │   ├── StrictSchemaError     (tools.spec) a schema strict mode cannot express
    │   ├── DepthError            (jsonio) JSON nested deeper than the limit
    │   ├── ReferenceReplayError  (scoring.replay) a reference solution that does not replay
    │   ├── ValidatorParamsError  (scoring.registry) a validator's settings
    │   └── NothingToLearn, PackFormatError, SnapshotError, ExprError   (synth) inputs, pack files
    ├── InfrastructureError       what simforge depends on failed
    │   ├── StoreError            (runs.store) a run store that cannot be reached or used
    │   ├── PolicyUnavailable     what a policy depends on (a model endpoint); ChatError (chat)
    │   ├── SimulatedUserError    (users.base) the simulated user's endpoint
    │   └── RayUnavailable        (runs.ray_backend)
    ├── ToolError                 (tools.errors) a tool's error answer inside the simulation
    └── WorldError                (world.store) EntityNotFound and other world lookups

A command-line front end catches :class:`UserError` and prints its one line; anything else is a
bug or an infrastructure failure and is reported as such. Existing exceptions keep their
built-in bases (``ConfigError`` is still a ``ValueError``, ``NotFound`` a ``KeyError``) so code
that caught those keeps working. ``tests/test_errors.py`` holds every exception simforge
defines to this tree (the few internal ones that never leave their module are listed there).
"""

from __future__ import annotations


class SimforgeError(Exception):
    """The root of simforge's own exceptions."""


class UserError(SimforgeError):
    """The input was wrong; the message says where and what, in one line."""


class InfrastructureError(SimforgeError):
    """Something outside the input failed (a store, an endpoint, a worker)."""


class PluginError(UserError):
    """A plugin that cannot be used; the message names the plugin and what is wrong."""


class UsageError(UserError, ValueError):
    """An argument or a call the API refuses: an unknown option, a split with no task, a policy
    spec that cannot be built, two scenarios under one id. The message says which and what is
    allowed. A ``ValueError``, as these were before the tree."""


class NotReady(UsageError, RuntimeError):
    """A call out of order, such as a step before ``reset()``."""


class WrongType(UsageError, TypeError):
    """An argument of a type the API cannot use (``scenario=`` given neither an id, a path nor a
    pack)."""


__all__ = [
    "InfrastructureError",
    "NotReady",
    "PluginError",
    "SimforgeError",
    "UsageError",
    "UserError",
    "WrongType",
]


class PolicyUnavailable(InfrastructureError, RuntimeError):
    """What a policy depends on failed (an LLM endpoint, a harness's tool server): not the
    agent's fault, so a stress run records the episode as invalid, and ``simforge run`` stops
    with the reason in one line. (Defined here, not with the policies, because the chat client
    below them raises it too.)"""
