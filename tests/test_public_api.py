"""The public API is what ``simforge.__all__`` says: every public name of the package and
nothing else (as httpx's own test holds its ``__all__``), all of it importable."""

from __future__ import annotations
import __future__ as future

import subprocess
import sys
import types

import simforge


def _public_names() -> set[str]:
    """What ``import simforge`` puts in the namespace (minus submodules and ``from __future__``)
    plus the names it resolves lazily on first use."""
    eager = {
        name
        for name, value in vars(simforge).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType | future._Feature)
    }
    return eager | set(simforge._LAZY) | {"__version__"}


def test_all_is_exactly_the_public_names():
    assert sorted(simforge.__all__) == simforge.__all__
    assert set(simforge.__all__) == _public_names()


def test_every_name_in_all_resolves():
    for name in simforge.__all__:
        assert getattr(simforge, name) is not None, name
    assert {"make", "SimforgeEnv", "Session", "World", "tool", "ToolSpec", "Episode",
            "Scenario", "synthesize", "create_app", "RunStore", "SimforgeError", "UserError",
            "InfrastructureError"} <= set(simforge.__all__)


def test_an_unknown_name_is_an_attribute_error():
    try:
        simforge.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("an unknown attribute resolved")


def test_lazy_names_stay_lazy():
    """``import simforge`` alone must not import the serving stack or the learners."""
    code = ("import sys, simforge; "
            "print(sorted(m for m in ('simforge.serve.app', 'simforge.synth.pipeline', "
            "'simforge.runs.store', 'fastapi') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_no_private_names_leak_into_all():
    assert not [n for n in simforge.__all__ if n.startswith("_") and n != "__version__"]
