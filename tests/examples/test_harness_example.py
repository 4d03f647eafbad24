"""The example harness (``examples/harnesses/openai_agent.py``, written with the official
``openai`` SDK) solves a multi-turn task against a fake OpenAI-compatible model: run by simforge
as ``harness:``, with the scripted user and with an LLM user, and against ``simforge serve``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simforge.cli import app
from tests.fakes.dialogue import agent, user
from tests.fakes.openai_server import serve_fake
from tests.serve.conftest import live_server as live_server  # the fixture, shared

pytest.importorskip("openai", reason="the example needs the openai package")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "harnesses" / "openai_agent.py"
DIALOGUE = str(ROOT / "tests" / "fixtures" / "scenarios" / "mini_dialogue.yaml")
COMMAND = f"harness:{shlex.quote(sys.executable)} {shlex.quote(str(EXAMPLE))}"


@pytest.fixture
def model(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMFORGE_USER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("OPENAI_MODEL", "fake-agent")
    monkeypatch.delenv("SIMFORGE_USER", raising=False)
    with serve_fake([agent] * 40) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def _run(*extra: str) -> list[dict]:
    result = CliRunner().invoke(app, ["run", DIALOGUE, "--policy", COMMAND, "--task", "ask-id",
                                      "--seeds", "1", "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["episodes"]


def test_the_example_harness_talks_to_the_scripted_user_and_solves_the_task(model):
    (episode,) = _run()
    assert episode["reward"] == 1.0, episode
    first = model.requests[0].body
    assert "never guess it" in first["messages"][0]["content"]  # the policy file
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_customer", "upgrade_customer"}
    assert model.requests[1].body["messages"][-1]["content"] == "My customer id is C-0003."


def test_the_example_harness_with_an_llm_user(model, monkeypatch):
    with serve_fake([user] * 10) as fake_user:
        monkeypatch.setenv("SIMFORGE_USER_BASE_URL", fake_user.base_url)
        (episode,) = _run("--user", "llm:fake-user")
    assert episode["reward"] == 1.0, episode
    assert len(fake_user.requests) == 2
    assert model.requests[1].body["messages"][-1]["content"] == "It's C-0003."


def test_the_example_agent_against_simforge_serve(model, live_server):
    live = live_server(DIALOGUE)
    env = {**os.environ, "OPENAI_BASE_URL": model.base_url}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--serve", live.url, "--token", "test-token",
         "--task", "ask-id"], env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["reward"] == 1.0
