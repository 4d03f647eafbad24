"""verifiers over simforge: ``vf.load_environment`` finds ``load_environment`` in
``simforge.integrations.verifiers``, and verifiers' own rollout code (its client, its multi-turn
loop, its rubric) plays episodes against a fake OpenAI-compatible server and gets simforge's
reward."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers")

import simforge  # noqa: E402
from simforge.integrations.verifiers import SimforgeVerifiersEnv, load_environment  # noqa: E402
from tests.fakes import dialogue  # noqa: E402
from tests.fakes.openai_server import Reply, completion, serve_fake, tool_call  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
DIALOGUE = str(FIXTURES / "scenarios" / "mini_dialogue.yaml")
ENV_ID = "simforge.integrations.verifiers"
ANSWER = "C-0003 is now on the gold tier."


@pytest.fixture
def client_for(monkeypatch):
    monkeypatch.setenv("SIMFORGE_FAKE_KEY", "not-a-secret")

    def make(server) -> vf.ClientConfig:
        return vf.ClientConfig(
            api_base_url=server.base_url, api_key_var="SIMFORGE_FAKE_KEY", max_retries=0
        )

    return make


def run(env, inputs, client, **kwargs) -> list[dict]:
    out = env.generate_sync(
        inputs, client=client, model="fake-model", state_columns=["simforge"],
        on_progress=lambda *a, **k: None, **kwargs,
    )
    return out["outputs"]


def upgrade_agent():
    """Solves mini's upgrade task on the first conversation it sees, gives up on the second."""
    starts = itertools.count()

    def respond(body):
        last = body["messages"][-1]
        if last["role"] == "user":
            if next(starts) == 0:
                return Reply(body=completion(None, [tool_call("get_customer", {"customer_id": "C-0003"}, id="a")]))
            return Reply(body=completion("No."))
        if last["tool_call_id"] == "a":
            return Reply(body=completion(None, [tool_call("upgrade_customer", {"customer_id": "C-0003"}, id="b")]))
        return Reply(body=completion(ANSWER))

    return respond


def test_verifiers_rollout_plays_a_conversation_and_gets_simforges_reward(client_for):
    env = vf.load_environment(ENV_ID, scenario=DIALOGUE)
    assert isinstance(env, SimforgeVerifiersEnv) and isinstance(env, vf.MultiTurnEnv)
    rows = env.get_dataset()
    assert len(rows) == 1 and len(env.get_eval_dataset()) == 1  # train and eval splits
    with serve_fake([dialogue.agent] * 4) as server:
        [output] = run(env, rows, client_for(server))
    assert output["reward"] == 1.0 and output["error"] is None
    assert output["metrics"]["simforge_reward"] == 1.0
    assert output["metrics"]["simforge_passed"] == 1.0
    assert output["metrics"]["simforge_invalid"] == 0.0
    assert output["simforge"]["failed"] == [] and output["simforge"]["invalid"] is False
    # what the model was sent: the policy, the instruction, the task's tools as they are
    first = server.requests[0].body
    assert first["messages"][0]["role"] == "system" and "Ask for the customer id" in first[
        "messages"][0]["content"]
    assert first["messages"][1] == {
        "role": "user", "content": "Hi, I would like to be moved to the gold tier, please.",
    }
    sim = simforge.make(DIALOGUE)
    obs, _ = sim.reset(seed=0, options={"task": "ask-id"})
    sent = {t["function"]["name"]: t["function"]["parameters"] for t in first["tools"]}
    assert sent == {t["function"]["name"]: t["function"]["parameters"] for t in obs["tools"]}
    # the agent's question went to the simulated user, whose reply came back as the next turn
    second = server.requests[1].body["messages"]
    assert (second[-2]["role"], second[-2]["content"]) == (
        "assistant", "Sure. What is your customer id?",
    )
    assert second[-1] == {"role": "user", "content": "My customer id is C-0003."}


def test_a_group_is_scored_rollout_by_rollout(client_for):
    env = load_environment(MINI, task="upgrade")
    rows = env.get_dataset().repeat(2)
    with serve_fake([upgrade_agent()] * 6) as server:
        outputs = run(env, rows, client_for(server))
    assert sorted(o["reward"] for o in outputs) == [0.0, 1.0]
    failed = next(o for o in outputs if o["reward"] == 0.0)
    assert "state_matches" in failed["simforge"]["failed"]


def test_the_last_text_counts_when_max_turns_stops_the_rollout(client_for):
    env = load_environment(MINI, task="upgrade", max_turns=3)  # the third turn is the answer
    with serve_fake([upgrade_agent()] * 3) as server:
        [output] = run(env, env.get_dataset(), client_for(server))
    assert output["stop_condition"] == "max_turns_reached"
    assert output["reward"] == 1.0  # the answer, never handed to the env by the loop, counted


def test_an_invalid_episode_scores_zero_with_its_reason(client_for):
    env = load_environment(MINI, task="upgrade")
    replies = [
        Reply(body=completion(None, [tool_call("explode", {"customer_id": "C-0003"}, id="x")])),
        Reply(body=completion("Something broke.")),
    ]
    with serve_fake(replies) as server:
        [output] = run(env, env.get_dataset(), client_for(server))
    assert output["reward"] == 0.0 and output["metrics"]["simforge_invalid"] == 1.0
    assert "database connection lost" in output["simforge"]["invalid_reason"]


def test_a_failing_model_endpoint_is_invalid_not_the_agents_fault(client_for):
    env = load_environment(MINI, task="upgrade")
    with serve_fake([], default=Reply(400, body={"error": {"message": "bad request"}})) as server:
        [output] = run(env, env.get_dataset(), client_for(server))
    assert output["reward"] == 0.0
    reason = output["simforge"]["invalid_reason"]
    assert output["simforge"]["invalid"] and "model: ModelError" in reason and "400" in reason


def test_rows_sample_tasks_by_seed_pools_and_packs():
    env = load_environment([MINI, DIALOGUE], split="train", seeds=6)
    infos = [json.loads(r["info"])["simforge"] for r in env.get_dataset()]
    assert [i["seed"] for i in infos] == list(range(6))
    assert {(i["scenario"], i["task"]) for i in infos} == {
        ("mini/upgrade-v1", "upgrade"), ("mini/upgrade-v1", "note"),
        ("mini/dialogue-v1", "ask-id"),
    }
    sandbox = load_environment(pack=str(FIXTURES / "packs" / "mini"))
    [row] = sandbox.get_dataset()
    tools = {t["name"] for t in json.loads(row["info"])["tool_defs"]}
    assert {"explode", "upgrade_customer", "create_note"} <= tools
    with pytest.raises(ValueError, match="not both"):
        load_environment(MINI, pack="x")
