"""The code base stays lint- and type-clean: ruff and mypy as configured in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_clean():
    result = _run("ruff", "check", "simforge", "tests", "benchmarks", "tools_mock", "validators")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_is_clean():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
