"""Shared fixtures. Real-world traces live outside the project in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINI_SCENARIO = FIXTURES / "scenarios" / "mini.yaml"


def pytest_configure(config: pytest.Config) -> None:
    """The suite's derived-data cache (``simforge.cache``) is its own, fresh each session, and
    not the user's ``~/.cache/simforge``; subprocesses the tests start inherit it."""
    if "SIMFORGE_CACHE" not in os.environ:
        import tempfile

        os.environ["SIMFORGE_CACHE"] = tempfile.mkdtemp(prefix="simforge-test-cache-")


def shared_data_dir() -> Path:
    """Where the recorded traces of others live (``SIMFORGE_SHARED_DATA`` overrides)."""
    env = os.environ.get("SIMFORGE_SHARED_DATA")
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data")


@pytest.fixture
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real-world traces not present at {path} (set SIMFORGE_SHARED_DATA)")
    return path


@pytest.fixture
def mini_pack():
    from simforge.scenario import load_pack

    return load_pack(str(FIXTURES / "packs" / "mini"))


@pytest.fixture
def mini_env():
    import simforge

    return simforge.make(str(MINI_SCENARIO), task="upgrade")
