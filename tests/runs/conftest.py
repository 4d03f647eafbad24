"""Fixtures of the runs tests: stores (SQLite always, PostgreSQL when CI provides one), the mini
scenario, and a fault profile harsh enough that retrying matters."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
PG_ENV = "SIMFORGE_TEST_PG_URL"

HARSH = """\
name: harsh
description: Half the calls fail with a 503; retries succeed.
rules:
  - id: gateway
    fault: {kind: error_status, status: 503}
    probability: 0.5
"""


@pytest.fixture
def mini() -> str:
    return MINI


@pytest.fixture
def harsh_profile(tmp_path: Path) -> str:
    path = tmp_path / "harsh.yaml"
    path.write_text(HARSH)
    return str(path)


def pg_url() -> str | None:
    return os.environ.get(PG_ENV) or None


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs on SQLite and on PostgreSQL (a fresh schema per test)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url = pg_url()
    if url is None:
        pytest.skip(f"PostgreSQL tests need ${PG_ENV} (.ci/run sets it up)")
    return _fresh_schema(url, request)


def _fresh_schema(url: str, request: pytest.FixtureRequest) -> str:
    import sqlalchemy as sa

    schema = f"t_{secrets.token_hex(6)}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))

    def drop() -> None:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()

    request.addfinalizer(drop)
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"
