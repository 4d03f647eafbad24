"""verifiers: ``load_environment(...)``, a multi-turn tool environment whose rubric is simforge's
reward.

::

    import verifiers as vf

    env = vf.load_environment(
        "simforge.integrations.verifiers", scenario="acme/refund-damaged-order-v1", seeds=32
    )
    client = vf.ClientConfig(api_base_url="http://127.0.0.1:8001/v1", api_key_var="OPENAI_API_KEY")
    results = env.evaluate_sync(client=client, model="gpt-4.1", num_examples=8)
    results["outputs"][0]["reward"]          # simforge's reward

``vf.load_environment`` imports the module its id names (``simforge.integrations.verifiers``) and
calls its ``load_environment`` with the arguments (``vf-eval simforge.integrations.verifiers -a
'{"scenario": "..."}'`` the same), or call :func:`load_environment` directly.

**A row is a task and a seed.** One row per seed (the task the seed samples, as ``reset``
without a task would; every task once by default): the prompt is the policy (a system message)
and the task's instruction (the user's first message); ``info`` holds the scenario, task, seed
and the tools that task offers (``info["tool_defs"]``, their JSON schemas as they are), so each
rollout is offered exactly its task's tools. Without ``split``, a scenario with ``eval`` tasks
gives them as the ``eval_dataset`` and trains on the rest.

**The conversation is simforge's.** Each rollout plays its own episode. The model's tool calls
of one turn run concurrently in simulated time and come back as tool messages (the result's
JSON, or ``{"error": ...}``); a text is a message to the simulated user, whose reply is the next
user message; the rollout ends when the episode does (the user ends the conversation, a tool
ends it, the budgets run out) or at ``max_turns``, and the agent's last text is its final
answer. The rubric's reward is simforge's (``simforge_reward``), with ``simforge_passed`` and
``simforge_invalid`` as metrics; ``state["simforge"]`` has the outcome (failed validators, the
invalid reason) and ``state["simforge_score"]`` every verdict. An invalid episode (a tool
backend, the user simulator or the model endpoint failed) scores 0 with its reason.
"""

from __future__ import annotations

import json
from typing import Any, cast

import verifiers as vf
from verifiers.types import Messages, State, ToolMessage, UserMessage

from simforge.env.core import SimforgeEnv, Split
from simforge.env.gym import PackRef
from simforge.errors import UsageError
from simforge.integrations.episodes import (
    Episodes,
    Outcome,
    UserSpec,
    content_text,
    dump,
    last_text,
    result_text,
)

__all__ = ["SimforgeRubric", "SimforgeVerifiersEnv", "load_environment"]


class SimforgeRubric(vf.Rubric):
    """simforge's reward (weight 1), and whether the episode passed or was invalid (metrics)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_reward_func(self.simforge_reward, weight=1.0)
        self.add_metric(self.simforge_passed)
        self.add_metric(self.simforge_invalid)

    async def simforge_reward(self, state: State, **kwargs: Any) -> float:
        outcome = state.get("simforge")
        return float(outcome["reward"]) if outcome else 0.0

    async def simforge_passed(self, state: State, **kwargs: Any) -> float:
        outcome = state.get("simforge")
        return 1.0 if outcome and outcome["passed"] else 0.0

    async def simforge_invalid(self, state: State, **kwargs: Any) -> float:
        outcome = state.get("simforge")
        return 1.0 if not outcome or outcome["invalid"] else 0.0


class SimforgeVerifiersEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn tool environment over simforge episodes (see the module)."""

    def __init__(self, episodes: Episodes, **kwargs: Any) -> None:
        self.simforge_episodes = episodes
        kwargs.setdefault("rubric", SimforgeRubric())
        super().__init__(**kwargs)

    async def setup_state(self, state: State) -> State:
        info = state.get("info") or {}
        row = info.get("simforge") or {}  # not info["task"]: verifiers reads that itself
        episodes = self.simforge_episodes
        seed = int(row.get("seed", episodes.first_seed))
        sid, task = episodes.resolve(row.get("task"), seed, row.get("scenario"))
        env = episodes.env(sid)
        options: dict[str, Any] = {"task": task}
        if row.get("faults"):
            options["faults"] = row["faults"]
        env.reset(seed=seed, options=options)
        state["simforge_env"] = env
        state["simforge_heard"] = 0  # model turns the episode has been told of
        return state

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        env: SimforgeEnv = state["simforge_env"]
        state["simforge_heard"] = len(state["trajectory"])
        last = messages[-1]
        calls = list(getattr(last, "tool_calls", None) or [])
        text = content_text(getattr(last, "content", None))
        action: dict[str, Any]
        if calls:
            action = {"role": "assistant", "content": text, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ]}
        else:
            action = {"message": text or ""}
        obs, _, terminated, truncated, _ = await env.astep(action)
        done = bool(terminated or truncated)
        reply: list[Any] = []
        if calls:
            results = list(obs["results"])
            for i, call in enumerate(calls):
                content = result_text(results[i]) if i < len(results) else dump(
                    {"error": "the episode is over; the call did not run"}
                )
                reply.append(ToolMessage(tool_call_id=call.id, content=content))
        elif not done:
            reply.append(UserMessage(content=obs.get("user") or ""))
        if done:
            state["final_env_response"] = reply
        return cast(Messages, reply)

    @vf.cleanup
    async def simforge_finish(self, state: State) -> None:
        """End the episode if the rollout stopped first (``max_turns``, the model's last text
        never handed over, a model error), then record its outcome for the rubric."""
        env: SimforgeEnv | None = state.get("simforge_env")
        if env is None or env.session is None:
            return
        session = env.session
        if not session.done:
            error = state.get("error")
            if error is not None:  # the model endpoint failed: never the agent's fault
                cause = error.__cause__ or error.__context__
                detail = str(error) or (f"{type(cause).__name__}: {cause}" if cause else "")
                session.abort(f"model: {type(error).__name__}: {detail}"[:1000])
            else:
                text = None
                trajectory = state.get("trajectory") or []
                if len(trajectory) > state.get("simforge_heard", 0):
                    text = last_text(trajectory[-1]["completion"])
                await env.astep({"final_answer": text or env.last_text or ""})
        outcome = Outcome.of(env)
        state["simforge"] = outcome.metrics()
        state["simforge_score"] = outcome.score


def _rows(episodes: Episodes, seeds: Any, policy: bool) -> list[dict[str, Any]]:
    rows = []
    probes: dict[str, SimforgeEnv] = {}
    for seed in episodes.seeds(seeds):
        sid, task = episodes.resolve(None, seed)
        env = probes.get(sid) or probes.setdefault(sid, episodes.env(sid))
        obs, _ = env.reset(seed=seed, options={"task": task})
        prompt = []
        if policy and obs["policy"]:
            prompt.append({"role": "system", "content": obs["policy"]})
        prompt.append({"role": "user", "content": obs["task"]["instruction"]})
        tools = [
            {"name": t["function"]["name"], "description": t["function"].get("description") or "",
             "parameters": t["function"].get("parameters") or {"type": "object"}}
            for t in obs["tools"]
        ]
        row: dict[str, Any] = {"scenario": sid, "task": task, "seed": seed}
        if episodes.faults:
            row["faults"] = episodes.faults
        info = {"simforge": row, "tool_defs": tools}
        # info as JSON text: Arrow would merge the tools' schemas into one struct type
        rows.append({"prompt": prompt, "info": json.dumps(info), "answer": ""})
    return rows


def load_environment(
    scenario: Any = None,
    *,
    pack: str | None = None,
    split: Split | None = None,
    faults: str | None = None,
    user: UserSpec = None,
    task: str | None = None,
    seeds: int | list[int] | None = None,
    eval_seeds: int | list[int] | None = None,
    policy: bool = True,
    max_turns: int = 50,
    **kwargs: Any,
) -> SimforgeVerifiersEnv:
    """The verifiers environment of ``scenario`` (an id, a YAML path, a list of them: one pool)
    or of ``pack`` (a pack folder served as a sandbox). ``split``, ``faults``, ``user`` and
    ``task`` are ``simforge.make``'s; ``seeds`` the dataset's seeds (``None``: every task once;
    ``n``: ``n`` seeds; or a list) and ``eval_seeds`` the eval dataset's; ``policy=False``
    leaves the policy out of the prompt; other keywords go to ``vf.MultiTurnEnv``."""
    if (scenario is None) == (pack is None):
        raise UsageError("load_environment: give a scenario or a pack, not both")
    source = PackRef(pack) if pack is not None else scenario
    common: dict[str, Any] = {"faults": faults, "user": user, "task": task}
    episodes = Episodes(source, split=split, **common)  # plays every row
    datasets: dict[str, Any] = {}
    if split is not None:
        key = "eval_dataset" if split == "eval" else "dataset"
        datasets[key] = _rows(episodes, seeds if split == "train" else eval_seeds or seeds,
                              policy)
    else:
        held_out = None
        if task is None:
            try:
                train = Episodes(source, split="train", **common)
                held_out = Episodes(source, split="eval", **common)
            except ValueError:  # a split has no task: one dataset of all
                held_out = None
        if held_out is not None:
            datasets["dataset"] = _rows(train, seeds, policy)
            datasets["eval_dataset"] = _rows(held_out, eval_seeds, policy)
        else:
            datasets["dataset"] = _rows(episodes, seeds, policy)
    from datasets import Dataset

    built = {k: Dataset.from_list(v) for k, v in datasets.items()}
    env_args = {k: v for k, v in {
        "scenario": scenario if isinstance(scenario, str | list) else None, "pack": pack,
        "split": split, "faults": faults, "task": task,
    }.items() if v is not None}
    kwargs.setdefault("env_id", "simforge.integrations.verifiers")
    kwargs.setdefault("env_args", env_args)
    return SimforgeVerifiersEnv(episodes, max_turns=max_turns, **built, **kwargs)
