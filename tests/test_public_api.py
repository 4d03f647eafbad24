"""The public API is what ``simforge.__all__`` says, and all of it is importable."""

from __future__ import annotations

import simforge


def test_all_is_curated_and_importable():
    assert sorted(simforge.__all__) == simforge.__all__
    for name in simforge.__all__:
        assert getattr(simforge, name) is not None, name
    assert {
        "make",
        "SimforgeEnv",
        "Session",
        "World",
        "tool",
        "ToolSpec",
        "Episode",
        "Scenario",
    } <= set(simforge.__all__)


def test_no_private_names_leak_into_all():
    assert not [n for n in simforge.__all__ if n.startswith("_") and n != "__version__"]
