"""The Gymnasium-style API: reset gives the task and the tool catalog; step takes tool calls or a
final answer; same seed and actions, same trajectory; the agent never sees ground truth."""

from __future__ import annotations

import json

import pytest

import simforge
from simforge.env import ActionError, parse_action

UPGRADE = [
    {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0003"}}]},
    {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]},
    {"final_answer": "C-0003 is now gold."},
]


def test_reset_observation_carries_task_and_openai_tool_catalog(mini_env):
    obs, info = mini_env.reset(seed=7)
    assert obs["task"] == {"id": "upgrade", "instruction": mini_env.scenario.tasks[0].instruction}
    assert obs["time"] == 0.0 and obs["step"] == 0
    names = [t["function"]["name"] for t in obs["tools"]]
    assert "get_customer" in names and "upgrade_customer" in names
    assert all(
        t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
        for t in obs["tools"]
    )
    assert info == {
        "scenario": "mini/upgrade-v1",
        "task": "upgrade",
        "seed": 7,
        "time": 0.0,
        "step": 0,
        "truncation_reason": None,
        "faults": "none",
    }


def test_a_solved_task_is_rewarded_at_the_end_only(mini_env):
    mini_env.reset(seed=0)
    rewards = []
    for action in UPGRADE:
        obs, reward, terminated, truncated, info = mini_env.step(action)
        rewards.append(reward)
    assert rewards == [0.0, 0.0, 1.0]
    assert terminated and not truncated
    assert info["score"]["passed"] is True
    assert obs["time"] > 0


def test_results_carry_tool_output_and_simulated_time(mini_env):
    mini_env.reset(seed=0)
    obs, *_ = mini_env.step(UPGRADE[0])
    (result,) = obs["results"]
    assert result["ok"] and result["result"]["id"] == "C-0003" and result["name"] == "get_customer"
    assert obs["time"] == pytest.approx(1.1)  # 1 s think time + 0.1 s latency


def test_wrong_work_is_not_rewarded(mini_env):
    mini_env.reset(seed=0)
    mini_env.step(
        {"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0004"}}]}
    )
    *_, reward, terminated, _, info = mini_env.step({"final_answer": "C-0003 is now gold."})
    assert reward == 0.0
    assert set(info["score"]["failed"]) == {"state_matches", "no_collateral_damage"}


def test_stating_the_answer_without_acting_earns_nothing(mini_env):
    mini_env.reset(seed=0)
    _, reward, *_ = mini_env.step("C-0003 gold")
    assert reward == 0.0


def test_budgets_truncate_with_reward(mini_env):
    mini_env.reset(seed=0)
    for _ in range(6):
        obs, reward, terminated, truncated, info = mini_env.step(UPGRADE[0])
    assert truncated and not terminated and info["truncation_reason"] == "max_steps"
    assert reward == 0.0 and "score" in info


def test_tasks_are_chosen_by_option(mini_env):
    obs, info = mini_env.reset(seed=0, options={"task": "note"})
    assert obs["task"]["id"] == "note"
    mini_env.step(
        {
            "tool_calls": [
                {
                    "name": "create_note",
                    "arguments": {"customer_id": "C-0002", "text": "called back"},
                }
            ]
        }
    )
    assert mini_env.step("Done.")[1] == 1.0
    with pytest.raises(KeyError, match="no task 'nope'"):
        mini_env.reset(options={"task": "nope"})
    with pytest.raises(ValueError, match="unknown keys"):
        mini_env.reset(options={"tsk": "note"})


def test_reset_starts_from_the_initial_world_every_time(mini_env):
    mini_env.reset(seed=0)
    for action in UPGRADE:
        mini_env.step(action)
    obs, _ = mini_env.reset(seed=0)
    assert mini_env.session.world.get("Customer", "C-0003")["tier"] == "standard"
    assert mini_env.session.world.get("Customer", "C-0003")["name"] == "Zed Canary"  # task override


def test_same_seed_same_actions_same_trajectory(mini_env):
    def play(seed: int) -> str:
        mini_env.reset(seed=seed)
        for action in UPGRADE:
            mini_env.step(action)
        return mini_env.trajectory().model_dump_json()

    assert play(3) == play(3)


def test_openai_assistant_messages_are_actions():
    action = parse_action(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_customer", "arguments": '{"customer_id": "C-1"}'},
                }
            ],
        }
    )
    assert action.tool_calls[0].name == "get_customer"
    assert action.tool_calls[0].arguments == {"customer_id": "C-1"}
    assert action.tool_calls[0].id == "call_9"
    # a reply without calls is a message to the user (the final answer once the user is done)
    reply = parse_action({"role": "assistant", "content": "all done", "refusal": None})
    assert reply.message == "all done" and reply.final_answer is None
    assert parse_action("all done").message == "all done"


def test_invalid_json_arguments_reach_the_tool_as_a_422(mini_env):
    mini_env.reset(seed=0)
    obs, *_ = mini_env.step([{"name": "get_customer", "arguments": '{"customer_id": '}])
    (result,) = obs["results"]
    assert not result["ok"] and result["error"]["status"] == 422


def test_malformed_actions_are_named():
    with pytest.raises(ActionError, match=r"tool_calls.0.name"):
        parse_action({"tool_calls": [{"arguments": {}}]})
    with pytest.raises(ActionError, match="not both"):
        parse_action({"tool_calls": [{"name": "x"}], "final_answer": "y"})
    with pytest.raises(ActionError, match="expected an object"):
        parse_action(42)


def test_multi_turn_messages_get_the_next_scripted_user_turn(tmp_path):
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    text = (fixtures / "scenarios" / "mini.yaml").read_text()
    text = text.replace("pack: ../packs/mini", f"pack: {fixtures / 'packs' / 'mini'}")
    text = text.replace(
        "  - id: upgrade\n", '  - id: upgrade\n    user_turns: ["Yes, go ahead."]\n'
    )
    path = tmp_path / "multi.yaml"
    path.write_text(text)
    env = simforge.make(str(path), task="upgrade")
    env.reset(seed=0)
    obs, *_ = env.step({"message": "Shall I upgrade C-0003 to gold?"})
    assert obs["user"] == "Yes, go ahead."
    # the scripted user has said everything: the conversation ends, this text is the answer
    obs, reward, terminated, truncated, info = env.step({"message": "Done: C-0003 is gold."})
    assert obs["user"] is None and terminated and not truncated
    trajectory = env.trajectory()
    assert trajectory.simulation.final_answer == "Done: C-0003 is gold."
    roles = [m.role for m in trajectory.messages]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_no_observation_reveals_ground_truth(tmp_path):
    """Canary strings planted in the expected outputs and in the oracle's answer never appear in
    any observation or info the agent can see, whatever it calls."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    text = (fixtures / "scenarios" / "mini.yaml").read_text()
    text = text.replace("pack: ../packs/mini", f"pack: {fixtures / 'packs' / 'mini'}")
    text = text.replace('outputs: ["C-0003", "gold"]', 'outputs: ["C-0003", "gold", "CANARY-7f3a"]')
    text = text.replace("answer: C-0003 is now on the gold tier.", "answer: CANARY-91bd")
    path = tmp_path / "canary.yaml"
    path.write_text(text)
    env = simforge.make(str(path))
    seen = []
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        seen += [json.dumps(obs), json.dumps(info)]
        names = [t["function"]["name"] for t in obs["tools"]]
        for name in names:
            o, *_ = env.step([{"name": name, "arguments": {"customer_id": "C-0003"}}])
            seen.append(json.dumps(o))
            if env.session.done:
                break
    blob = "\n".join(seen)
    assert "CANARY" not in blob


def test_strict_tools_offers_strict_schemas_and_takes_the_nulls_a_strict_client_sends():
    """``make(..., strict_tools=True)``: a trainer with OpenAI's strict mode gets the catalog as
    strict functions, and the ``null`` its model sends for each optional parameter it leaves out
    is read as not given (a plain env refuses ``limit: null`` as not an integer)."""
    call = {
        "name": "list_contacts",
        "arguments": {"customer_id": "C-9412", "name": None, "email": None, "phone": None,
                      "role": None, "is_primary": None, "limit": None, "offset": None},
    }
    results = {}
    for strict in (False, True):
        env = simforge.make("acme/contact-update-v1", strict_tools=strict)
        obs, _ = env.reset(seed=0)
        flags = {t["function"].get("strict", False) for t in obs["tools"]}
        assert flags == {strict}
        if strict:
            listed = next(t for t in obs["tools"] if t["function"]["name"] == "list_contacts")
            params = listed["function"]["parameters"]
            assert set(params["required"]) == set(params["properties"])
            assert params["additionalProperties"] is False
        obs, *_ = env.step({"tool_calls": [call]})
        results[strict] = obs["results"][0]
    assert results[False]["ok"] is False and "limit" in json.dumps(results[False])
    assert results[True]["ok"] is True
    listed = results[True]["result"]
    rows = listed["items"] if isinstance(listed, dict) else listed
    assert {c["id"] for c in rows} == {"CT-9401", "CT-9402"}


def _task_of_seed(ids: list[str], seed: int) -> str:
    """The reset seed's task as sample_task chose it before its permutations were kept: a
    generator seeded from the block's string, shuffled, per reset."""
    import random

    n = len(ids)
    if n == 1:
        return ids[0]
    block, position = divmod(seed, n)
    order = list(range(n))
    random.Random(f"simforge-tasks:{n}:{block}").shuffle(order)
    return ids[order[position]]


def test_a_reset_seed_picks_the_task_it_always_picked():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from simforge.env.core import sample_task

    @settings(max_examples=300, deadline=None)
    @given(st.integers(1, 7), st.integers(0, 10**12) | st.integers(0, 40))
    def check(n, seed):
        ids = [f"t{k}" for k in range(n)]
        assert sample_task(ids, seed) == _task_of_seed(ids, seed)
        assert sample_task(ids, seed) == _task_of_seed(ids, seed)  # kept: the same again

    check()
