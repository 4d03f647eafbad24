"""What a real agent and a trainer get from the env: the conversation contract, the tools a task
offers and the policy it follows, tasks sampled by seed, splits, pools of scenarios, and every
scenario as a Gymnasium id."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import simforge
from simforge.config import NotFound
from simforge.env.core import sample_task
from simforge.scenario.loader import ScenarioError
from simforge.scenario.offer import MAX_TOOLS
from simforge.scenario.registry import ScenarioRegistry, default_registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
DIALOGUE = str(FIXTURES / "scenarios" / "mini_dialogue.yaml")


def _variant(tmp_path: Path, old: str, new: str, source: str = MINI) -> str:
    text = Path(source).read_text().replace("pack: ../packs/mini",
                                            f"pack: {FIXTURES / 'packs' / 'mini'}")
    assert old in text
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


# -- tasks for trainers -------------------------------------------------------------------------


def test_resets_over_seeds_visit_every_task_evenly():
    env = simforge.make("acme/refund-damaged-order-v1")
    seen = Counter(env.reset(seed=s)[1]["task"] for s in range(100))
    assert set(seen) == set(env.tasks) and len(env.tasks) == 2
    assert max(seen.values()) - min(seen.values()) <= 1
    # the same seed, the same task, in any process (seeded from a string, not hash())
    assert env.reset(seed=41)[1]["task"] == env.reset(seed=41)[1]["task"]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 40), block=st.integers(0, 10**12))
def test_each_block_of_n_seeds_is_a_permutation_of_the_tasks(n, block):
    ids = [f"t{i}" for i in range(n)]
    assert sorted(sample_task(ids, block * n + i) for i in range(n)) == sorted(ids)


def test_splits_keep_their_tasks_and_say_what_is_missing():
    train = simforge.make(DIALOGUE, split="train")
    evaluation = simforge.make(DIALOGUE, split="eval")
    assert train.tasks == ["ask-id"] and evaluation.tasks == ["note"]
    assert {evaluation.reset(seed=s)[1]["task"] for s in range(5)} == {"note"}
    with pytest.raises(ValueError, match="no task in the 'eval' split"):
        simforge.make(MINI, split="eval")
    with pytest.raises(ValueError, match="expected one of"):
        simforge.make(MINI, split="test")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="in the 'eval' split"):
        simforge.make(DIALOGUE, split="train", task="note")


def test_a_pool_of_scenarios_is_one_task_pool():
    pool = simforge.make([MINI, "acme/refund-damaged-order-v1"])
    assert len(pool.tasks) == 4 and "mini/upgrade-v1#note" in pool.tasks
    seen = Counter(pool.reset(seed=s)[0]["task"]["scenario"] for s in range(8))
    assert seen == {"mini/upgrade-v1": 4, "acme/refund-damaged-order-v1": 4}
    obs, info = pool.reset(seed=0, options={"task": "mini/upgrade-v1#upgrade"})
    assert obs["task"]["scenario"] == "mini/upgrade-v1" and info["task"] == "upgrade"
    pool.step({"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]})
    *_, terminated, _, info = pool.step({"final_answer": "C-0003 is now gold."})
    assert terminated and info["score"]["reward"] == 1.0
    assert pool.trajectory().simulation.scenario == "mini/upgrade-v1"
    with pytest.raises(NotFound, match="scenario#task"):
        pool.reset(options={"task": "nope#x"})


def test_every_registered_scenario_is_a_gymnasium_id_after_import():
    ids = set(default_registry.ids())
    assert ids <= set(gymnasium.envs.registration.registry)
    env = gymnasium.make("acme/refund-damaged-order-v1")
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert info["task"] in {"within-window", "outside-window"}
    env.close()
    eval_env = gymnasium.make("acme/refund-damaged-order-v1", task="outside-window")
    assert eval_env.reset(seed=0)[1]["task"] == "outside-window"


# -- the tools a task offers, the policy it follows ---------------------------------------------


def test_every_shipped_task_offers_at_most_128_tools_and_its_oracles_need():
    for loaded in default_registry.all():
        for task in loaded.scenario.tasks:
            offered = loaded.tools(task.id)
            assert 0 < len(offered) <= MAX_TOOLS, (loaded.scenario.id, task.id)
            needed = {c.tool for step in task.oracle for c in step.calls}
            assert needed <= set(offered), (loaded.scenario.id, task.id)


def test_a_tool_the_task_does_not_offer_is_unknown_to_the_agent(tmp_path):
    path = _variant(tmp_path, "seeds: [0, 1]\n",
                    "seeds: [0, 1]\ntools: [get_customer, upgrade_*, create_note]\n")
    env = simforge.make(path, task="upgrade")
    obs, _ = env.reset(seed=0)
    assert [t["function"]["name"] for t in obs["tools"]] == [
        "get_customer", "create_note", "upgrade_customer"]
    obs, *_ = env.step({"tool_calls": [{"name": "delete_customer",
                                        "arguments": {"customer_id": "C-0003"}}]})
    (result,) = obs["results"]
    assert result["error"]["status"] == 404 and "no tool named" in result["error"]["message"]
    assert env.session.world.get("Customer", "C-0003") is not None


def test_tools_entries_that_match_nothing_or_hide_an_oracle_tool_fail_at_load(tmp_path):
    typo = _variant(tmp_path, "seeds: [0, 1]\n", "seeds: [0, 1]\ntools: [get_customer, upgrad_*]\n")
    with pytest.raises(ScenarioError, match=r"line \d+.*'upgrad_\*' matches no tool"):
        ScenarioRegistry.load_path(Path(typo))
    hidden = _variant(tmp_path, "seeds: [0, 1]\n", "seeds: [0, 1]\ntools: [get_customer]\n")
    with pytest.raises(ScenarioError, match=r"calls 'upgrade_customer'.*does not offer"):
        ScenarioRegistry.load_path(Path(hidden))


def test_the_default_offer_is_the_scenarios_tools_and_their_systems():
    loaded = default_registry.get("acme/refund-damaged-order-v1")
    offered = loaded.tools("within-window")
    systems = {t.spec.system for t in offered.values()}
    assert {"get_order", "refund_order", "create_customer", "cancel_order"} <= set(offered)
    assert systems <= {"orders", "billing", "crm", "support", "shipping", "inventory", "kb",
                       "comms"} and "hr" not in systems
    # per scenario, not per task: which tools are there says nothing of the solution
    assert loaded.offered["within-window"] == loaded.offered["outside-window"]


def test_the_policy_is_in_the_observation():
    env = simforge.make(DIALOGUE, task="ask-id")
    obs, _ = env.reset(seed=0)
    assert obs["policy"].startswith("# Tiers")
    acme = simforge.make("acme/refund-damaged-order-v1")
    assert isinstance(acme.reset(seed=0)[0]["policy"], str)


# -- the conversation contract ------------------------------------------------------------------


def test_a_text_is_a_message_while_the_user_has_more_to_say(tmp_path):
    env = simforge.make(DIALOGUE, task="ask-id")
    env.reset(seed=0)
    obs, reward, terminated, *_ = env.step("Which customer id is yours?")  # free text
    assert obs["user"] == "My customer id is C-0003." and not terminated
    env.step({"tool_calls": [{"name": "upgrade_customer", "arguments": {"customer_id": "C-0003"}}]})
    obs, reward, terminated, truncated, info = env.step("C-0003 is on the gold tier now.")
    assert terminated and not truncated and reward == 1.0 and obs["user"] is None
    assert env.trajectory().simulation.final_answer == "C-0003 is on the gold tier now."


def test_an_explicit_final_answer_ends_the_conversation_at_once():
    env = simforge.make(DIALOGUE, task="ask-id")
    env.reset(seed=0)
    *_, terminated, _, info = env.step({"final_answer": "I cannot help."})
    assert terminated and info["score"]["reward"] == 0.0


def test_a_tool_that_ends_the_conversation_ends_the_episode(tmp_path):
    from simforge.tools.spec import ToolSpec

    env = simforge.make(DIALOGUE, task="ask-id")
    spec = env.pack.catalog["create_note"].spec
    tool = env.pack.catalog["create_note"]
    object.__setattr__(tool, "spec", ToolSpec(**{**spec.model_dump(), "ends_conversation": True}))
    try:
        env.reset(seed=0)
        env.step({"message": "Let me hand you over."})
        obs, _, terminated, *_ = env.step({"message": "Transferring you.", "tool_calls": [
            {"name": "create_note", "arguments": {"customer_id": "C-0003", "text": "handoff"}}]})
        assert terminated
        assert env.trajectory().simulation.final_answer == "Transferring you."
    finally:
        object.__setattr__(tool, "spec", spec)


def test_a_failing_user_makes_the_episode_invalid():
    class Broken:
        name = "broken"

        def reset(self, task, *, seed, scenario):
            pass

        def reply(self, dialogue):
            raise ConnectionError("user endpoint down")

    env = simforge.make(DIALOGUE, task="ask-id", user=Broken())
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"message": "Which id?"})
    assert truncated and info["invalid"] is True and reward == 0.0
    assert "user simulator: ConnectionError: user endpoint down" in info["score"]["invalid_reason"]
