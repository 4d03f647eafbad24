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
    "simforge.synth.learn.text_state._Unexplained": "a fit's fallback signal, caught by the fit",
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
    ("simforge.sim.background.BackgroundError", UserError, ValueError),
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


BUILTIN_RAISES_ALLOWED = {
    ("simforge/__init__.py", "__getattr__"): "the module protocol: AttributeError",
    ("simforge/trace/__init__.py", "__getattr__"): "the module protocol: AttributeError",
    ("simforge/env/pool.py", "__getattr__"): "the attribute protocol: AttributeError",
    ("simforge/atomic.py", "replacing"): "a caller's bug: the block wrote nothing",
    ("simforge/sim/session.py", "run_until"): "simpy's own error for an empty schedule",
    ("simforge/world/frozen.py", "_refuse"): "a frozen row refuses edits as a tuple does",
    ("simforge/scoring/registry.py", "_refuse"): "orjson's default hook: refuse to encode",
    ("simforge/synth/runtime/compiled.py", "_compile_condition"): "caught beside it: fall back",
    ("simforge/synth/runtime/compiled.py", "place"): "caught beside it: the path is not there",
    ("simforge/synth/runtime/error_rules.py", "holds"): "pack files are validated when they load",
    ("simforge/synth/expr/language.py", "evaluate"): "pack files are validated when they load",
    ("simforge/synth/expr/language.py", "_compile"): "pack files are validated when they load",
    ("simforge/synth/runtime/interpreter.py", "_run"): "pack files are validated when they load",
    ("simforge/synth/runtime/interpreter.py", "ev"): "caught by the learner: not arithmetic",
    ("simforge/trace/formats/otlp.py", "attributes"): "inside a record: becomes a TraceError",
    ("simforge/trace/formats/otlp.py", "_spans_of_resource"):
        "inside a record: becomes a TraceError",
    ("simforge/runs/harness.py", "act"): "a caller's bug: the loop plays it by episode",
    ("simforge/keyed.py", "getrandbits"): "random.Random's protocol: what the stdlib raises",
    ("simforge/keyed.py", "seed"): "random.Random's protocol: what the stdlib raises",
    ("simforge/keyed.py", "setstate"): "random.Random's protocol: what the stdlib raises",
}
"""Where simforge raises a built-in exception itself, with the reason. Everywhere else, an error
a caller can meet is one of the tree's, so the CLI's ``except UserError`` sees bad input and a
bare ``ValueError`` is a bug."""


def _builtin_raises() -> list[tuple[str, str, int, str]]:
    """Every ``raise <built-in exception>`` in simforge's source: (file, function, line,
    exception), leaving out pydantic validators (where ``ValueError`` is the protocol) and
    ``NotImplementedError`` (an abstract method)."""
    import ast
    import builtins
    from pathlib import Path

    root = Path(simforge.__file__).parent
    names = {n for n, v in vars(builtins).items()
             if isinstance(v, type) and issubclass(v, BaseException)}
    found = []

    def visit(node: ast.AST, fn: str, validator: bool, path: str) -> None:
        for child in ast.iter_child_nodes(node):
            f, v = fn, validator
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                f = child.name
                v = any("validator" in ast.unparse(d) for d in child.decorator_list)
            if isinstance(child, ast.Raise) and child.exc is not None and not v:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if (isinstance(exc, ast.Name) and exc.id in names
                        and exc.id != "NotImplementedError"):
                    found.append((path, f, child.lineno, exc.id))
            visit(child, f, v, path)

    for file in sorted(root.rglob("*.py")):
        rel = f"simforge/{file.relative_to(root).as_posix()}"
        visit(ast.parse(file.read_text(encoding="utf-8")), "<module>", False, rel)
    return found


def test_simforge_raises_its_own_errors_not_bare_builtins():
    found = _builtin_raises()
    stray = [f"{p}:{line} {exc} in {fn}" for p, fn, line, exc in found
             if (p, fn) not in BUILTIN_RAISES_ALLOWED]
    assert stray == []
    assert {(p, fn) for p, fn, _, _ in found} >= set(BUILTIN_RAISES_ALLOWED), \
        "an allowed site no longer raises a built-in: drop it from the list"


@pytest.mark.parametrize("path, builtin", [
    ("simforge.errors.UsageError", ValueError),
    ("simforge.errors.NotReady", RuntimeError),
    ("simforge.errors.WrongType", TypeError),
    ("simforge.world.schema.EntityDefinitionError", TypeError),
])
def test_usage_errors_are_user_errors_with_their_old_bases(path, builtin):
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, UserError) and issubclass(cls, builtin)


def test_a_step_before_reset_is_a_user_error_naming_reset():
    from simforge.errors import NotReady

    env = simforge.make("acme/refund-damaged-order-v1")
    with pytest.raises(NotReady, match=r"reset\(\)"):
        env.step({"tool_calls": []})
    with pytest.raises(RuntimeError):  # what callers caught before the tree
        env.step({"tool_calls": []})
