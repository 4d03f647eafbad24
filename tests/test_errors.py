"""One error tree: every exception simforge raises is a ``SimforgeError``, bad input is a
``UserError`` (what the CLI prints as one line), what simforge depends on failing is an
``InfrastructureError``, and each keeps the built-in base that code catching it relied on."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import simforge
from simforge.errors import InfrastructureError, PluginError, SimforgeError, UserError

INTERNAL = {
    "simforge.trace.reader._NotOne": "control flow inside the reader, never escapes it",
    "simforge.trace.reader._TooDeep": "control flow inside the reader, never escapes it",
    "simforge.synth.expr.language.Unresolved": "a learner's 'no value here', caught by the learner",
    "simforge.serve.jsonrpc.RpcError": "becomes a JSON-RPC error answer, never leaves the server",
    "simforge.serve.problems.Problem": "becomes an HTTP problem answer, never leaves the server",
    "simforge.serve.tool_plane.SimulatedReset": "a simulated connection reset: the fault itself",
}
"""Exceptions outside the tree, each with the reason."""

OPTIONAL = ("simforge.runs.ray_backend",)  # imports ray at import time only when it is used


def _classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(simforge.__path__, "simforge."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and not issubclass(value, Warning)
                    and value.__module__ == info.name):
                found[f"{info.name}.{value.__qualname__}"] = value
    return found


def test_every_exception_simforge_defines_is_in_the_tree():
    outside = sorted(name for name, cls in _classes().items()
                     if not issubclass(cls, SimforgeError) and name not in INTERNAL)
    assert outside == []
    assert set(INTERNAL) <= set(_classes()), "an allowed exception no longer exists"


@pytest.mark.parametrize("path, root, builtin", [
    ("simforge.config.ConfigError", UserError, ValueError),
    ("simforge.config.NotFound", UserError, KeyError),
    ("simforge.scenario.loader.ScenarioError", UserError, ValueError),
    ("simforge.env.action.ActionError", UserError, ValueError),
    ("simforge.trace.errors.TraceFormatError", UserError, Exception),
    ("simforge.trace.errors.FormatPluginError", PluginError, Exception),
    ("simforge.world.schema.SeedDataError", UserError, ValueError),
    ("simforge.faults.background.BackgroundError", UserError, ValueError),
    ("simforge.jsonio.DepthError", UserError, ValueError),
    ("simforge.sim.session.SessionClosed", UserError, RuntimeError),
    ("simforge.tools.errors.ToolDefinitionError", PluginError, TypeError),
    ("simforge.synth.read.snapshot.SnapshotError", UserError, ValueError),
    ("simforge.runs.store.StoreError", InfrastructureError, Exception),
    ("simforge.policies.base.PolicyUnavailable", InfrastructureError, RuntimeError),
    ("simforge.chat.ChatError", InfrastructureError, RuntimeError),
    ("simforge.users.base.SimulatedUserError", InfrastructureError, RuntimeError),
])
def test_each_exception_has_its_place_and_keeps_its_builtin_base(path, root, builtin):
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, root) and issubclass(cls, builtin)
    assert not (issubclass(cls, UserError) and issubclass(cls, InfrastructureError))


def test_the_tree_is_public():
    for name in ("SimforgeError", "UserError", "InfrastructureError", "PluginError",
                 "StoreError"):
        assert name in simforge.__all__
        assert issubclass(getattr(simforge, name), SimforgeError)


def test_the_cli_prints_any_user_error_as_one_line_and_exits_2(capsys):
    import typer

    from simforge.cli import user_errors
    from simforge.sim.session import SessionClosed

    with pytest.raises(typer.Exit) as stopped, user_errors():
        raise SessionClosed("the episode has already ended")
    assert stopped.value.exit_code == 2
    err = capsys.readouterr().err
    assert "the episode has already ended" in err and "Traceback" not in err


def test_the_cli_lets_an_infrastructure_error_keep_its_traceback():
    from simforge.cli import user_errors

    with pytest.raises(InfrastructureError), user_errors():
        raise InfrastructureError("the store is down")
