"""Shared fixtures. Real-world traces live outside the project in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


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
