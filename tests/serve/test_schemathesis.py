"""schemathesis against /openapi.json of a real server: whatever a client sends, the answer is
never a 500 (the fixture pack's ``explode`` tool, a deliberately broken backend, aside)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings

schemathesis = pytest.importorskip("schemathesis")

from simforge.serve.app import create_app  # noqa: E402

from .conftest import MINI, TOKEN, free_port  # noqa: E402


@pytest.fixture(scope="module")
def served_schema() -> Iterator[Any]:
    app = create_app(MINI, time_scale=0.0, token=TOKEN)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield schemathesis.openapi.from_url(f"http://127.0.0.1:{port}/openapi.json").exclude(
            path="/tools/explode"
        )
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.slow
def test_no_request_makes_a_server_error(served_schema: Any) -> None:
    # schemathesis' pytest plugin does not run under pytest 9 here; drive hypothesis directly.
    failures: list[str] = []
    sent: list[int] = []
    calls = 0
    operations = [result.ok() for result in served_schema.get_all_operations()]
    assert len(operations) > 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        def probe(case: Any) -> None:
            response = case.call(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
            sent.append(response.status_code)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} {case.body!r}: "
                    f"{response.status_code} {response.text[:200]}"
                )

        probe()
        calls += 1
    assert failures == []
    assert calls == len(operations)
    assert len(sent) > 5 * len(operations), "schemathesis sent too few requests"
    assert any(status == 200 for status in sent) and any(400 <= s < 500 for s in sent)
