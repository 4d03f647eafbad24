"""TRL's GRPOTrainer over simforge: the environment factory as GRPOTrainer builds it (one instance
per rollout, its public methods as tools, their schemas through transformers' own extraction and
the chat template the model is prompted with), played by a scripted "model" that stands in for
generation, scored by TRL's own reward path. No weights are loaded: the model is a one-layer
Qwen3 from a config, the tokenizer a byte-level one made here with TRL's Qwen3 chat template."""

from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path

import pytest

trl = pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")

from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import simforge  # noqa: E402
from simforge.integrations.signatures import parameters_types  # noqa: E402
from simforge.integrations.trl import (  # noqa: E402
    SimforgeTRLEnv,
    dataset,
    environment_factory,
    simforge_reward,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
DIALOGUE = str(FIXTURES / "scenarios" / "mini_dialogue.yaml")
ANSWER = "C-0003 is now on the gold tier."


# -- a tokenizer and a model that need no download ------------------------------------------


def make_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import add_response_schema, qwen3_chat_template

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = qwen3_chat_template
    return add_response_schema(tokenizer)


def make_trainer(env_class, rows, tmp_path, monkeypatch, **config):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = make_tokenizer()
    model = Qwen3ForCausalLM(Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=32768,
    ))
    args = GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
        max_completion_length=8192, max_steps=1, report_to="none", use_cpu=True, beta=0.0,
        logging_steps=1, save_strategy="no", **config,
    )
    return GRPOTrainer(
        model=model, processing_class=tokenizer, reward_funcs=[simforge_reward], args=args,
        train_dataset=rows, environment_factory=env_class,
    )


class ScriptedModel:
    """Stands in for generation (``GRPOTrainer._generate_single_turn``): reads the prompt TRL
    built (chat template, tools and all), and answers with ``script(prompt_text, index)``
    tokenized as Qwen3 writes it. Everything around it is TRL's: tokenizing prompts, parsing
    tool calls out of the completion, calling the environment's methods, appending results."""

    def __init__(self, trainer, script):
        self.trainer, self.script, self.prompts = trainer, script, []
        real = type(trainer)._generate_single_turn
        self.returns_extra = len(inspect.signature(real).parameters) == 4  # TRL 0.x

    def __call__(self, prompt_ids, *args, **kwargs):
        tokenizer = self.trainer.processing_class
        completions, logprobs = [], []
        for index, ids in enumerate(prompt_ids):
            text = tokenizer.decode(ids, skip_special_tokens=False)
            self.prompts.append(text)
            reply = self.script(text, index) + "<|im_end|>"
            out = tokenizer(reply, add_special_tokens=False)["input_ids"]
            completions.append(out)
            logprobs.append([0.0] * len(out))
        if self.returns_extra:
            return completions, logprobs, {}
        return completions, logprobs


def tool_call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def play(trainer, rows, script):
    model = ScriptedModel(trainer, script)
    trainer._generate_single_turn = model
    batch = [copy.deepcopy(row) for row in rows for _ in range(trainer.num_generations)]
    out = trainer._generate_and_score_completions(batch)
    return model, out


def rendered_tools(prompt: str) -> dict[str, dict]:
    block = re.search(r"<tools>\n(.*?)\n</tools>", prompt, re.DOTALL)
    assert block, "the prompt carries no tools"
    tools = [json.loads(line) for line in block.group(1).splitlines() if line.strip()]
    return {t["function"]["name"]: t["function"] for t in tools}


# -- GRPOTrainer itself ---------------------------------------------------------------------


def test_grpo_trainer_plays_a_group_and_scores_it_with_simforges_reward(tmp_path, monkeypatch):
    Env = environment_factory(MINI, task="upgrade")
    rows = dataset(Env, seeds=[1])
    assert rows[0]["task"] == "upgrade" and rows[0]["seed"] == 1
    trainer = make_trainer(Env, rows, tmp_path, monkeypatch)

    def script(prompt: str, index: int) -> str:
        results = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", prompt, re.DOTALL)
        if not results:  # the first turn: one rollout works, the other gives up
            return tool_call("get_customer", customer_id="C-0003") if index == 0 else "No."
        last = json.loads(results[-1])
        if last.get("tier") == "standard":
            return tool_call("upgrade_customer", customer_id="C-0003")
        return ANSWER

    model, out = play(trainer, rows, script)
    first = model.prompts[0]
    assert "Customer C-0003 asked to be moved to the gold tier." in first  # what reset returned
    assert set(rendered_tools(first)) == {t["function"]["name"] for t in Env.tool_schemas}

    envs = trainer.environments
    assert [e.outcome.reward for e in envs] == [1.0, 0.0]
    assert envs[0].env.session.final_answer == ANSWER  # the plain last text, delivered
    assert [c.tool for c in envs[0].env.trajectory().tool_calls] == [
        "get_customer", "upgrade_customer",
    ]
    assert trainer._metrics["train"]["reward"][-1] == pytest.approx(0.5)
    advantages = out["advantages"].tolist()
    assert advantages[0] > 0 > advantages[1]
    assert [e.get_reward() for e in envs] == [None, None]  # reported once, by simforge_reward


def test_the_model_sees_each_offered_tool_with_its_schema(tmp_path, monkeypatch):
    """What TRL renders into the prompt from the methods is the tool's JSON schema: names,
    types, required, enums and descriptions (bounds and defaults ride in the description)."""
    Env = environment_factory("acme/refund-damaged-order-v1", split="train")
    rows = dataset(Env, seeds=1)
    trainer = make_trainer(Env, rows, tmp_path, monkeypatch)
    model, _ = play(trainer, rows, lambda prompt, index: "I cannot help with that.")
    seen = rendered_tools(model.prompts[0])
    env = simforge.make("acme/refund-damaged-order-v1", split="train")
    obs, _ = env.reset(seed=rows[0]["seed"], options={"task": rows[0]["task"]})
    offered = {t["function"]["name"]: t["function"] for t in obs["tools"]}
    assert set(seen) == {*offered, "message_user"}
    for name, original in offered.items():
        got = copy.deepcopy(seen[name])
        assert got["description"] == original["description"].strip()
        params = got["parameters"]
        descriptions = {p: s.pop("description") for p, s in params["properties"].items()}
        assert params == parameters_types(original["parameters"]), name
        for prop, schema in original["parameters"]["properties"].items():
            if schema.get("description"):
                assert descriptions[prop].startswith(" ".join(schema["description"].split()))


# -- the environment class as TRL lists it --------------------------------------------------


def trl_tools(instance) -> dict[str, object]:
    """The methods GRPOTrainer offers, by both of its rules: TRL 0.x lists the instance's public
    bound methods except ``reset``; TRL 1.x the class's public functions except ``reset`` and
    ``get_reward`` (which it calls for the reward)."""
    old = {n: m for n, m in inspect.getmembers(instance, predicate=inspect.ismethod)
           if n != "reset" and not n.startswith("_")}
    new = {n: getattr(instance, n)
           for n, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
           if n not in ("reset", "get_reward") and not n.startswith("_")}
    assert old.keys() == new.keys()
    return new


def test_every_shipped_tool_comes_back_from_transformers_schema_extraction():
    from transformers.utils import get_json_schema

    from simforge.scenario.registry import default_registry

    checked = 0
    for sid in default_registry.ids():
        Env = environment_factory(sid)
        tools = trl_tools(Env())
        offered = {t["function"]["name"]: t["function"] for t in Env.tool_schemas}
        assert set(tools) == set(offered), sid
        for name, method in tools.items():
            got = get_json_schema(method)["function"]
            want = offered[name]
            assert got["name"] == name and got["description"] == want["description"].strip()
            for schema in got["parameters"]["properties"].values():
                schema.pop("description")
            assert got["parameters"] == parameters_types(want["parameters"]), (sid, name)
            checked += 1
    assert checked > 1000


def test_a_conversation_through_message_user():
    Env = environment_factory(DIALOGUE, split="train")
    env = Env()
    assert env.reset(task="ask-id", seed=0) == "Hi, I would like to be moved to the gold tier, please."
    assert "Ask for the customer id" in env.policy
    tools = trl_tools(env)
    reply = json.loads(tools["message_user"](content="Which customer id is yours?"))
    assert reply == {"user": "My customer id is C-0003.", "ended": False}
    assert json.loads(tools["get_customer"](customer_id="C-0003"))["tier"] == "standard"
    assert json.loads(tools["upgrade_customer"](customer_id="C-0003"))["tier"] == "gold"
    reply = json.loads(tools["message_user"](content="Done, C-0003 is now on the gold tier."))
    assert reply["ended"] is True  # the scripted user had nothing more to say
    assert env.outcome.reward == 1.0 and env.get_reward() == 1.0
    assert env.get_reward() is None  # reported once
    over = json.loads(tools["get_customer"](customer_id="C-0003"))
    assert "the episode is over" in over["error"]


def test_errors_are_answers_and_an_invalid_episode_scores_zero_with_its_reason():
    env = environment_factory(MINI, task="upgrade")()
    env.reset(seed=0)
    tools = trl_tools(env)
    bad = json.loads(tools["get_customer"](customer_id=3))
    assert bad["error"]["status"] == 422
    assert json.loads(tools["get_customer"](nope="x"))["error"]["status"] == 422
    assert json.loads(tools["message_user"](content=7))["error"]["status"] == 422
    broken = json.loads(tools["explode"](customer_id="C-0003"))
    assert broken["error"]["status"] == 500
    assert simforge_reward([[{"role": "assistant", "content": "Sorry."}]], [env]) == [0.0]
    assert env.outcome.invalid and "database connection lost" in env.outcome.invalid_reason


def test_a_rollout_cut_off_mid_call_ends_with_the_last_text_said():
    env = environment_factory(DIALOGUE, split="train")()
    env.reset(task="ask-id", seed=0)
    env.message_user(content="Which customer id is yours?")
    completion = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_customer", "arguments": {}}}]}]
    assert simforge_reward([completion], [env]) == [0.0]
    assert env.env.session.final_answer == "Which customer id is yours?"


def test_resets_sample_tasks_by_seed_and_pools_name_them():
    Env = environment_factory([MINI, DIALOGUE])
    assert Env._episodes.tasks == [
        "mini/upgrade-v1#upgrade", "mini/upgrade-v1#note",
        "mini/dialogue-v1#ask-id", "mini/dialogue-v1#note",
    ]
    rows = dataset(Env)
    assert sorted(rows["task"]) == sorted(Env._episodes.tasks)  # one block: every task once
    assert rows[0]["prompt"][-1] == {"role": "user", "content": ""}
    env = Env()
    for row in rows:
        instruction = env.reset(**row)
        assert env.env.scenario.id == row["scenario"] and env.env.task.id in row["task"]
        assert instruction == env.env.task.instruction
    dialogue = [r for r in rows if r["scenario"] == "mini/dialogue-v1"]
    assert all(r["prompt"][0]["role"] == "system" for r in dialogue)  # its policy
    # without a row: the instance's own seeds, upward, each sampling its task
    fresh = Env()
    fresh.reset()
    fresh.reset()
    assert fresh.env.session.seed == 1


def test_a_pack_served_as_a_sandbox():
    from simforge.scenario import load_pack

    Env = environment_factory(load_pack(str(FIXTURES / "packs" / "mini")))
    env = Env()
    assert env.reset().startswith("Use the mini tools")
    assert "explode" in trl_tools(env) and "upgrade_customer" in trl_tools(env)
    assert json.loads(env.get_customer(customer_id="C-0001"))["id"] == "C-0001"
    assert simforge_reward(["Done."], [env]) == [env.outcome.reward]


def test_the_reward_function_needs_environments():
    with pytest.raises(ValueError, match="environment_factory"):
        simforge_reward([[{"role": "assistant", "content": "x"}]])
    assert simforge_reward(["x"], [object()]) == [None]
    assert issubclass(environment_factory(MINI), SimforgeTRLEnv)
