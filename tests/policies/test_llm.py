"""The chat-completions agent, against fake OpenAI-compatible servers (FastAPI under uvicorn on
127.0.0.1, scripted replies): the real client code runs, only the model is scripted.

The conversation contract: the model asks the user a question, receives the scripted user's
turn (or an LLM user's reply, from a second fake endpoint), acts, answers; a rerun from the user
cache with the user's endpoint stopped replays the same trajectory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import simforge
from simforge.policies.llm import LLMPolicy, parse_spec
from simforge.runs.episode import aplay_episode, play_episode
from simforge.runs.specs import build_policy
from tests.fakes.dialogue import agent
from tests.fakes.dialogue import user as user_model
from tests.fakes.openai_server import Reply, completion, serve_fake, tool_call

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
MINI = str(FIXTURES / "mini.yaml")
DIALOGUE = str(FIXTURES / "mini_dialogue.yaml")


def replies(fn, n: int = 30) -> list:
    return [fn] * n


@pytest.fixture
def endpoints(monkeypatch, tmp_path):
    """Point the agent at a fake model; the user's cache at a folder of this test's own."""
    monkeypatch.setenv("SIMFORGE_USER_CACHE", str(tmp_path / "user-cache"))
    monkeypatch.setenv("SIMFORGE_LLM_RETRIES", "0")
    monkeypatch.setenv("SIMFORGE_USER_RETRIES", "0")
    for name in ("SIMFORGE_USER", "SIMFORGE_LLM_SYSTEM_PROMPT", "SIMFORGE_LLM_EXTRA_BODY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_model_asks_the_user_hears_the_scripted_turn_acts_and_answers(endpoints):
    with serve_fake(replies(agent)) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        endpoints.setenv("SIMFORGE_LLM_API_KEY", "sk-test")
        policy = build_policy("llm:fake-agent")
        outcome = play_episode(simforge.make(DIALOGUE), policy, seed=0, task="ask-id")
        policy.close()
    assert outcome.result.reward == 1.0, outcome.result.failed
    messages = outcome.trajectory.messages
    assert [m.role for m in messages] == [
        "user", "assistant", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert messages[2].content == "My customer id is C-0003."
    assert outcome.trajectory.simulation.final_answer == "Done: C-0003 is now on the gold tier."
    first, second = model.requests[0], model.requests[1]
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.body["seed"] == 0 and first.body["model"] == "fake-agent"
    # the policy the scenario gives is in the system prompt; the user's reply came back
    assert "Ask for the customer id; never guess it." in first.body["messages"][0]["content"]
    assert second.body["messages"][-1] == {"role": "user", "content": "My customer id is C-0003."}
    # token usage and latency of each request are in the trajectory
    llm = messages[-1].metadata["llm"]
    assert llm["usage"]["total_tokens"] == 129 and llm["latency_s"] >= 0
    assert llm["attempts"] == 1 and llm["model"] == "fake-model"


def _without_latency(trajectory: str) -> str:
    data = json.loads(trajectory)
    for message in data["messages"]:
        message.get("metadata", {}).get("llm", {}).pop("latency_s", None)
    return json.dumps(data)


def test_an_llm_user_plays_the_scenario_and_reruns_come_from_its_cache(endpoints):
    with serve_fake(replies(agent, 60)) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        with serve_fake(replies(user_model)) as user:
            endpoints.setenv("SIMFORGE_USER_BASE_URL", user.base_url)
            env = simforge.make(DIALOGUE, user="llm:fake-user")
            first = play_episode(env, build_policy("llm:fake-agent"), seed=1, task="ask-id")
            asked = len(user.requests)
        # the user's endpoint is gone: the same agent actions replay from the cache
        again = play_episode(env, build_policy("llm:fake-agent"), seed=1, task="ask-id")
    assert first.result.reward == again.result.reward == 1.0
    said = [m.content for m in first.trajectory.messages if m.role == "user"]
    assert said == ["Hi, I would like to be moved to the gold tier, please.", "It's C-0003.",
                    "Great, thank you!"]
    assert first.trajectory.simulation.final_answer == "Done: C-0003 is now on the gold tier."
    assert first.trajectory.metadata["user"] == "llm"
    assert asked == 2
    # the user was told its scenario, never the expected state or the policy
    system = user.requests[0].body["messages"][0]["content"]
    assert "Zed Canary" in system and "C-0003" in system
    assert "tier: gold" not in system and "never guess" not in system
    assert _without_latency(first.trajectory.model_dump_json()) == _without_latency(
        again.trajectory.model_dump_json())


def test_a_rerun_of_the_same_actions_from_the_user_cache_is_byte_identical(endpoints):
    actions = [
        {"message": "What is your customer id?"},
        {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]},
        {"message": "Done: you are on the gold tier now."},
    ]

    def play(env) -> str:
        env.reset(seed=4, options={"task": "ask-id"})
        for action in actions:
            *_, terminated, truncated, info = env.step(action)
        assert terminated and info["score"]["reward"] == 1.0
        return env.trajectory().model_dump_json()

    with serve_fake(replies(user_model)) as user:
        endpoints.setenv("SIMFORGE_USER_BASE_URL", user.base_url)
        env = simforge.make(DIALOGUE, user="llm:fake-user")
        first = play(env)
    assert play(simforge.make(DIALOGUE, user="llm:fake-user")) == first


def test_the_async_agent_and_user_await_their_endpoints(endpoints):
    with serve_fake(replies(agent)) as model, serve_fake(replies(user_model)) as user:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        endpoints.setenv("SIMFORGE_USER_BASE_URL", user.base_url)
        env = simforge.make(DIALOGUE, user="llm:fake-user")
        outcome = asyncio.run(aplay_episode(env, build_policy("llm:m"), seed=0, task="ask-id"))
    assert outcome.result.reward == 1.0


def test_single_turn_tasks_end_at_the_first_text(endpoints):
    def solver(body):
        last = body["messages"][-1]
        if last["role"] == "user":
            return Reply(body=completion(None, [tool_call("upgrade_customer",
                                                          {"customer_id": "C-0003"})]))
        return Reply(body=completion("C-0003 is now on the gold tier."))

    with serve_fake(replies(solver)) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        outcome = play_episode(simforge.make(MINI), build_policy("llm:m"), seed=0,
                               task="upgrade")
    assert outcome.result.reward == 1.0 and outcome.result.terminated
    assert len(model.requests) == 2


def test_request_options_from_the_spec_and_the_environment(endpoints, tmp_path):
    template = tmp_path / "prompt.j2"
    template.write_text("You work for {{ scenario or 'us' }} on {{ task_id }}.\n{{ policy }}")
    endpoints.setenv("SIMFORGE_LLM_SYSTEM_PROMPT", str(template))
    endpoints.setenv("SIMFORGE_LLM_EXTRA_BODY", '{"user": "simforge-ci"}')
    with serve_fake([Reply(body=completion("Which id?")), Reply(body=completion("Gold."))]) as m:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", m.base_url)
        spec = ("llm:fake?temperature=0&max_tokens=64&tool_choice=auto"
                "&parallel_tool_calls=false&reasoning_effort=low")
        play_episode(simforge.make(DIALOGUE), build_policy(spec), seed=0, task="ask-id")
    body = m.requests[0].body
    assert body["temperature"] == 0 and body["max_tokens"] == 64
    assert body["tool_choice"] == "auto" and body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "low" and body["user"] == "simforge-ci"
    assert body["messages"][0]["content"].startswith("You work for us on ask-id.\n# Tiers")
    assert parse_spec("m:8b?temperature=1") == ("m:8b", {"temperature": "1"})


def test_bad_settings_are_one_clear_error(endpoints, tmp_path):
    endpoints.setenv("SIMFORGE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="max_tokens"):
        build_policy("llm:m?max_tokens=lots")
    with pytest.raises(ValueError, match="SIMFORGE_LLM_TEMPERATURE"):
        endpoints.setenv("SIMFORGE_LLM_TEMPERATURE", "warm")
        LLMPolicy("m")
    endpoints.delenv("SIMFORGE_LLM_TEMPERATURE")
    bad = tmp_path / "bad.j2"
    bad.write_text("{{ polcy }}")
    with pytest.raises(ValueError, match="polcy"):
        LLMPolicy("m", system_prompt=bad.read_text())
    endpoints.delenv("SIMFORGE_LLM_MODEL", raising=False)
    endpoints.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="SIMFORGE_LLM_MODEL"):
        LLMPolicy()


@pytest.mark.parametrize("case", ["malformed", "down", "user-down", "user-empty"])
def test_a_failing_model_or_user_makes_the_episode_invalid_not_zero(endpoints, case):
    """The episode is invalid with a clear reason, the next one runs, nothing else is lost."""
    good = replies(agent)
    bad_agent = [Reply(body={"choices": []}), *good]  # not a completion, then all is well
    with serve_fake(bad_agent if case == "malformed" else good) as model, \
            serve_fake([Reply(body=completion(""))] if case == "user-empty" else
                       replies(user_model)) as user:
        url = "http://127.0.0.1:9/v1"
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", url if case == "down" else model.base_url)
        endpoints.setenv("SIMFORGE_USER_BASE_URL", url if case == "user-down" else user.base_url)
        user_spec = "llm:u" if case.startswith("user") else None
        env = simforge.make(DIALOGUE, user=user_spec)
        policy = build_policy("llm:m")
        failed = play_episode(env, policy, seed=0, task="ask-id")
        if case != "down":  # the endpoint is back: the next episode is scored as usual
            endpoints.setenv("SIMFORGE_USER_BASE_URL", user.base_url)
            user.add(*replies(user_model))
            env = simforge.make(DIALOGUE, user=user_spec)
            fine = play_episode(env, policy, seed=1, task="ask-id")
            assert fine.result.reward == 1.0
    assert failed.result.reward is None
    reason = failed.result.invalid_reason
    expected = {"malformed": "not a chat completion", "down": "127.0.0.1:9",
                "user-down": "user simulator", "user-empty": "no text"}[case]
    assert expected in reason, reason
    assert failed.trajectory.messages[0].content.startswith("Hi, I would like")


def test_every_request_for_every_shipped_scenario_carries_at_most_128_tools(endpoints):
    from simforge.scenario.registry import default_registry

    with serve_fake(default=Reply(body=completion("I can't help with that."))) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        policy = build_policy("llm:m")
        for loaded in default_registry.all():
            env = simforge.SimforgeEnv(loaded)
            for task in loaded.scenario.tasks:
                play_episode(env, policy, seed=0, task=task.id)
    assert model.requests and all(
        0 < len(r.body.get("tools", [])) <= 128 for r in model.requests
    )
    assert max(len(r.body["tools"]) for r in model.requests) < 167


def test_max_turns_ends_the_episode_with_the_last_text(endpoints):
    looping = completion("Still checking.", [tool_call("get_customer", {"customer_id": "C-0003"})])
    with serve_fake(default=Reply(body=looping)) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        outcome = play_episode(simforge.make(MINI), build_policy("llm:m?max_turns=3"), seed=0,
                               task="upgrade")
    assert outcome.result.terminated and outcome.result.steps == 3
    assert outcome.trajectory.simulation.final_answer == "Still checking."


def _run(runner: str, env, policy, **kwargs):
    if runner == "sync":
        return play_episode(env, policy, **kwargs)
    return asyncio.run(aplay_episode(env, policy, **kwargs))


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_429_and_5xx_are_retried_over_the_policy_s_one_connection(endpoints, runner):
    endpoints.setenv("SIMFORGE_LLM_RETRIES", "2")
    again = {"retry-after": "0"}
    script = [Reply(429, body={"error": "slow down"}, headers=again), agent,
              Reply(503, headers=again), Reply(502, text="bad gateway", headers=again),
              *replies(agent)]
    with serve_fake(script) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        policy = build_policy("llm:m")
        outcome = _run(runner, simforge.make(DIALOGUE), policy, seed=0, task="ask-id")
        policy.close()
    assert outcome.result.reward == 1.0, outcome.result.failed
    attempts = [m.metadata["llm"]["attempts"] for m in outcome.trajectory.messages
                if m.role == "assistant"]
    assert attempts == [2, 3, 1, 1]
    # one client per policy: every request, retries included, over one kept-alive connection
    assert len({r.peer for r in model.requests}) == 1 and len(model.requests) == 7


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_an_endpoint_that_keeps_failing_is_given_up_on_after_the_retries(endpoints, runner):
    endpoints.setenv("SIMFORGE_LLM_RETRIES", "1")
    with serve_fake(default=Reply(500, text="overloaded", headers={"retry-after": "0"})) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        policy = build_policy("llm:m")
        outcome = _run(runner, simforge.make(DIALOGUE), policy, seed=0, task="ask-id")
        policy.close()
        assert len(model.requests) == 2
    assert outcome.result.reward is None
    assert "answered 500 after 2 attempt(s): overloaded" in outcome.result.invalid_reason


def test_the_async_agent_keeps_one_client_across_its_episodes(endpoints):
    with serve_fake(replies(agent, 60)) as model:
        endpoints.setenv("SIMFORGE_LLM_BASE_URL", model.base_url)
        policy = build_policy("llm:m")

        async def main():
            outcomes = [await aplay_episode(simforge.make(DIALOGUE), policy, seed=seed,
                                            task="ask-id") for seed in (0, 1)]
            await policy.aclose()
            return outcomes

        outcomes = asyncio.run(main())
        assert [o.result.reward for o in outcomes] == [1.0, 1.0]
        assert len(model.requests) == 8 and len({r.peer for r in model.requests}) == 1
