"""simforge's exceptions, one tree::

    SimforgeError
    ├── UserError             bad input: a scenario, a config file, an action, a trace, a plugin
    │   ├── ConfigError       (simforge.config) a file that cannot be used: file, line, field
    │   ├── NotFound          (simforge.config) a name that is not registered; says what is
    │   └── PluginError       a plugin (pack, validator, fault kind, format) that cannot be used
    └── InfrastructureError   what simforge depends on failed: a store, an endpoint, a worker

A command-line front end catches :class:`UserError` and prints its one line; anything else is a
bug or an infrastructure failure and is reported as such. Existing exceptions keep their
built-in bases (``ConfigError`` is still a ``ValueError``, ``NotFound`` a ``KeyError``) so code
that caught those keeps working.
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


__all__ = ["InfrastructureError", "PluginError", "SimforgeError", "UserError"]
