"""The chat-completions agent, against fake endpoints that answer scripted tool calls: an
in-process httpx transport, and a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import simforge
from simforge.policies.llm import LLMError, LLMPolicy
from simforge.runs.episode import aplay_episode, play_episode

MINI = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "mini.yaml")


def _call(i: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


SCRIPT: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [   # two calls in parallel
        _call("call_a", "get_customer", {"customer_id": "C-0003"}),
        _call("call_b", "get_customer", {"customer_id": "C-0002"}),
    ]},
    {"role": "assistant", "content": None, "tool_calls": [
        _call("call_c", "upgrade_customer", {"customer_id": "C-0003"}),
    ]},
    {"role": "assistant", "content": "C-0003 is now on the gold tier."},
]


class FakeModel:
    """Answers the n-th assistant turn of a conversation from the script; records requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def complete(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        self.requests.append(body)
        self.headers.append(headers)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return {"id": f"cmpl-{turn}", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": SCRIPT[turn], "finish_reason": "stop"}]}

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            assert request.url.path.endswith("/chat/completions")
            return httpx.Response(200, json=self.complete(json.loads(request.content),
                                                          dict(request.headers)))

        return httpx.MockTransport(handle)


def check_conversation(model: FakeModel) -> None:
    first, second, third = model.requests
    assert first["model"] == "fake-1" and first["parallel_tool_calls"] is True
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_customer", "upgrade_customer"}
    assert first["messages"][1]["content"].startswith("Customer C-0003")
    tool_ids = [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"]
    assert tool_ids == ["call_a", "call_b"]
    assert json.loads(second["messages"][-1]["content"])["id"] == "C-0002"
    assert [m["tool_call_id"] for m in third["messages"] if m["role"] == "tool"][-1] == "call_c"


def test_the_agent_solves_a_task_from_scripted_completions():
    model = FakeModel()
    policy = LLMPolicy("fake-1", base_url="http://fake/v1", api_key="sk-test",
                       transport=model.transport())
    outcome = play_episode(simforge.make(MINI), policy, seed=0, task="upgrade")
    assert outcome.result.reward == 1.0
    assert outcome.result.steps == 2
    assert len(outcome.trajectory.messages[1].tool_call_ids) == 2  # one parallel step
    check_conversation(model)
    assert model.headers[0]["authorization"] == "Bearer sk-test"


def test_the_async_agent_awaits_the_endpoint():
    model = FakeModel()

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=model.complete(json.loads(request.content), {}))

    policy = LLMPolicy("fake-1", base_url="http://fake/v1",
                       async_transport=httpx.MockTransport(handle))
    outcome = asyncio.run(aplay_episode(simforge.make(MINI), policy, seed=0, task="upgrade"))
    assert outcome.result.reward == 1.0
    check_conversation(model)


def test_configuration_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-fallback/v1")
    monkeypatch.setenv("SIMFORGE_LLM_MODEL", "m-env")
    monkeypatch.setenv("SIMFORGE_LLM_API_KEY", "k-env")
    monkeypatch.setenv("SIMFORGE_LLM_MAX_TURNS", "7")
    policy = LLMPolicy()
    assert (policy.model, policy.base_url, policy.api_key, policy.max_turns) == (
        "m-env", "http://openai-fallback/v1", "k-env", 7)
    monkeypatch.delenv("SIMFORGE_LLM_MODEL")
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="needs a model"):
        LLMPolicy()


def test_a_failing_endpoint_is_an_error_not_an_answer():
    calls = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500, text="upstream exploded")

    policy = LLMPolicy("m", base_url="http://fake/v1", retries=1,
                       transport=httpx.MockTransport(handle))
    env = simforge.make(MINI)
    with pytest.raises(LLMError, match="500"):
        play_episode(env, policy, seed=0, task="upgrade")
    assert len(calls) == 2


def test_max_turns_ends_the_episode():
    looping = {"role": "assistant", "content": None,
               "tool_calls": [_call("x", "get_customer", {"customer_id": "C-0003"})]}

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"message": looping}]})

    policy = LLMPolicy("m", base_url="http://fake/v1", max_turns=3,
                       transport=httpx.MockTransport(handle))
    outcome = play_episode(simforge.make(MINI), policy, seed=0, task="upgrade")
    assert outcome.result.terminated and outcome.result.steps == 3


@pytest.fixture
def fake_server():
    """A real HTTP chat-completions endpoint: Starlette under uvicorn on an ephemeral port."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    model = FakeModel()

    async def complete(request):
        return JSONResponse(model.complete(await request.json(), dict(request.headers)))

    app = Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the fake endpoint did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield model, f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_agent_over_real_http_from_environment_settings(fake_server, monkeypatch):
    model, url = fake_server
    monkeypatch.setenv("SIMFORGE_LLM_BASE_URL", url)
    monkeypatch.setenv("SIMFORGE_LLM_MODEL", "fake-1")
    monkeypatch.setenv("SIMFORGE_LLM_API_KEY", "sk-http")
    from simforge.policies.specs import build_policy

    policy = build_policy("llm")
    outcome = play_episode(simforge.make(MINI), policy, seed=3, task="upgrade")
    policy.close()  # type: ignore[attr-defined]
    assert outcome.result.reward == 1.0
    check_conversation(model)
    assert model.headers[0]["authorization"] == "Bearer sk-http"
    assert model.requests[0]["seed"] == 3
