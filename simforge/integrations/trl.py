"""TRL: an ``environment_factory`` for ``GRPOTrainer`` over any simforge scenario, pool or pack.

::

    from trl import GRPOConfig, GRPOTrainer
    from simforge.integrations.trl import dataset, environment_factory, simforge_reward

    Env = environment_factory("acme/refund-damaged-order-v1", split="train")
    trainer = GRPOTrainer(
        model="Qwen/Qwen3-0.6B",
        args=GRPOConfig(num_generations=8, max_completion_length=1024),
        train_dataset=dataset(Env, seeds=256),   # rows: task and seed (a group shares both)
        environment_factory=Env,                 # one instance per rollout
        reward_funcs=simforge_reward,            # simforge's reward, the final text included
    )

What TRL sees (``GRPOTrainer`` builds one instance per rollout and lists its public methods):

- ``reset(**row)`` starts the row's episode (``task`` and ``seed`` columns, else the task the
  instance's next seed samples) and returns the task's instruction, the user's first message,
  which TRL appends to the prompt's last user message;
- one method per tool the task offers (``env.tools`` / ``obs["tools"]``), with a typed
  signature and a Google-style docstring built from the tool's JSON input schema, so that
  TRL's schema extraction (``transformers.utils.get_json_schema``) gives the schema back; a
  call runs in simulated time and returns the result's JSON, or ``{"error": ...}``;
- ``message_user(content)``: a message to the user, answered with ``{"user": reply, "ended":
  bool}`` (TRL's loop has no other way to let the user answer; ``simforge_message_user`` when
  the pack has a tool of that name, as in MCP);
- ``get_reward()``: simforge's reward once the episode is over (TRL >= 1.0 calls it by itself).

**The final answer.** The agent's last text is its final answer. A rollout ends with a plain
completion that the environment never sees; :func:`simforge_reward` (for ``reward_funcs``)
hands each rollout's last text to its episode as the final answer, then reports the reward.
``get_reward()`` alone scores the episode as the environment saw it (its final answer is the
last message sent with ``message_user``). Each episode's reward is reported once: under TRL >=
1.0, which calls both, ``get_reward`` returns ``None`` for an episode ``simforge_reward``
reported (TRL ignores ``None``), so the reward is not counted twice.

**Invalid episodes** (a tool backend or the user simulator failed, never the agent) score 0;
``outcome.invalid_reason`` says why. No rollout raises: calls after the end, bad arguments and
unknown tools are answers.

**Tools are fixed per class.** TRL renders one tool list per environment class. A scenario
offers the same tools to every task by default; where tasks differ (a task's own ``tools:``,
or a pool of scenarios), the class offers their union, and a tool the current task does not
offer answers 404 as on every path (and the ``unlisted_tools`` check sees the call): give such
tasks an environment class each (TRL >= 1.0 takes ``environment_factory={name: class}`` with an
``environment`` column).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any, ClassVar

from simforge.env.core import SimforgeEnv, Split
from simforge.errors import NotReady, UsageError
from simforge.integrations.episodes import (
    MESSAGE_DESCRIPTION,
    MESSAGE_SCHEMA,
    Episodes,
    Outcome,
    UserSpec,
    dump,
    last_text,
    message_tool_name,
    result_text,
)
from simforge.integrations.signatures import tool_method

__all__ = ["SimforgeTRLEnv", "dataset", "environment_factory", "simforge_reward"]


class _EnvironmentMethod:
    """A method TRL must not offer as a tool: on the class it is the plain function (TRL >= 1.0
    finds ``get_reward`` there by name and calls it for the reward), on an instance a partial,
    which is not a bound method, so TRL 0.x, which offers every public bound method as a tool,
    does not hand the model the scorer."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = "get_reward"

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self._fn
        return functools.partial(self._fn, obj)


class SimforgeTRLEnv:
    """One rollout's environment (see the module's docstring); :func:`environment_factory`
    makes the class of a scenario, with its tools as methods. ``env`` is the current episode's
    :class:`~simforge.env.core.SimforgeEnv` (its trajectory, its score), ``outcome`` how it
    ended (an :class:`~simforge.integrations.episodes.Outcome`, once it has), ``policy`` the
    policy the agent follows, ``tool_schemas`` the tools offered in OpenAI form."""

    _episodes: ClassVar[Episodes]
    _message_tool: ClassVar[str]
    tool_schemas: ClassVar[list[dict[str, Any]]] = []

    def __init__(self) -> None:
        self.env: SimforgeEnv | None = None
        self.outcome: Outcome | None = None
        self.policy: str = ""
        self._envs: dict[str, SimforgeEnv] = {}
        self._next_seed = self._episodes.first_seed
        self._counted = False

    def reset(self, **kwargs: Any) -> str:
        """Start an episode: the row's ``task`` (``scenario#task`` in a pool) and ``seed``, and
        optionally ``faults``; without a task, the one the seed samples; without a seed, this
        instance's next. Other columns (``prompt`` ...) are ignored. Returns the task's
        instruction (the user's first message)."""
        seed = kwargs.get("seed")
        seed = self._next_seed if seed is None else int(seed)
        self._next_seed = seed + 1
        episodes = self._episodes
        sid, task = episodes.resolve(kwargs.get("task"), seed, kwargs.get("scenario"))
        env = self._envs.get(sid)
        if env is None:
            env = self._envs[sid] = episodes.env(sid)
        options: dict[str, Any] = {"task": task}
        if kwargs.get("faults"):
            options["faults"] = kwargs["faults"]
        obs, _ = env.reset(seed=seed, options=options)
        self.env, self.outcome, self._counted = env, None, False
        self.policy = obs["policy"]
        return str(obs["task"]["instruction"])

    def _get_reward(self) -> float | None:
        """simforge's reward for this rollout (0.0 for an invalid episode: ``outcome`` says
        why). An episode still open ends here, its final answer being the last text the agent
        said. ``None`` once :func:`simforge_reward` has reported this episode's reward."""
        self._finish(None)
        return self._report()

    get_reward = _EnvironmentMethod(_get_reward)

    # -- what the generated methods call -------------------------------------------------------

    def _live(self) -> SimforgeEnv:
        if self.env is None or self.env.session is None:
            raise NotReady("call reset() before the tools")
        return self.env

    def _ended(self, env: SimforgeEnv) -> str | None:
        session = env.session
        if session is not None and session.done:
            how = "the conversation ended" if session.terminated else (
                f"it was cut off ({session.truncation_reason})"
            )
            return dump({"error": f"the episode is over ({how}); nothing more can be done"})
        return None

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        env = self._live()
        over = self._ended(env)
        if over is not None:
            return over
        obs, *_ = env.step({"tool_calls": [{"name": name, "arguments": dict(arguments)}]})
        self._settle()
        if not obs["results"]:
            return self._ended(env) or dump({"error": "the call did not run"})
        return result_text(obs["results"][0])

    def _message(self, content: Any) -> str:
        env = self._live()
        if not isinstance(content, str):
            return dump({"error": {"status": 422, "message": "content: expected a string"}})
        over = self._ended(env)
        if over is not None:
            return over
        obs, _, terminated, truncated, _ = env.step({"message": content})
        self._settle()
        return dump({"user": obs["user"], "ended": bool(terminated or truncated)})

    def _settle(self) -> None:
        env = self.env
        done = env is not None and env.session is not None and env.session.done
        if done and self.outcome is None:
            assert env is not None
            self.outcome = Outcome.of(env)

    def _finish(self, text: str | None) -> None:
        """End the episode if it is still open, ``text`` (else the last text said) being the
        final answer."""
        env = self._live()
        session = env.session
        assert session is not None
        if not session.done:
            env.step({"final_answer": text or env.last_text or ""})
        self._settle()

    def _report(self) -> float | None:
        if self._counted:
            return None
        self._counted = True
        assert self.outcome is not None
        return self.outcome.reward


def _invoke_tool(self: SimforgeTRLEnv, name: str, arguments: dict[str, Any]) -> str:
    return self._call_tool(name, arguments)


def _invoke_message(self: SimforgeTRLEnv, name: str, arguments: dict[str, Any]) -> str:
    extra = set(arguments) - {"content"}
    if extra:
        return dump({"error": {"status": 422, "message": f"unknown arguments {sorted(extra)}"}})
    return self._message(arguments.get("content"))


_RESERVED = frozenset({"reset", "get_reward", "env", "outcome", "policy", "tool_schemas"})


def environment_factory(
    scenario: Any,
    *,
    split: Split | None = None,
    faults: str | None = None,
    user: UserSpec = None,
    task: str | None = None,
    message_tool: bool = True,
    name: str | None = None,
) -> type[SimforgeTRLEnv]:
    """The environment class of ``scenario`` (an id, a YAML path, a Pack or ``PackRef``, or a
    list of them: one pool), for ``GRPOTrainer(environment_factory=...)``: each instance plays
    one rollout. ``split``, ``faults``, ``user`` and ``task`` are ``simforge.make``'s;
    ``message_tool=False`` leaves out ``message_user`` (single-turn tasks only)."""
    episodes = Episodes(scenario, split=split, faults=faults, user=user, task=task)
    offered = episodes.offered()
    message = message_tool_name(offered)
    label = name or "Simforge_" + re.sub(r"\W+", "_", "_".join(episodes.loaded)).strip("_")
    attrs: dict[str, Any] = {"__module__": __name__, "_episodes": episodes,
                             "_message_tool": message}
    schemas = []
    for tool_name, tool in offered.items():
        if tool_name.startswith("_") or tool_name in _RESERVED:
            raise UsageError(
                f"tool {tool_name!r} cannot be a method of a TRL environment (TRL offers the "
                f"public methods by name; reserved: {sorted(_RESERVED)})"
            )
        fn = tool["function"]
        attrs[tool_name] = tool_method(
            tool_name, fn.get("description") or "", fn.get("parameters") or {}, _invoke_tool,
            qualname=f"{label}.{tool_name}",
        )
        schemas.append(tool)
    if message_tool:
        attrs[message] = tool_method(
            message, MESSAGE_DESCRIPTION, MESSAGE_SCHEMA, _invoke_message,
            qualname=f"{label}.{message}",
        )
        schemas.append({"type": "function", "function": {
            "name": message, "description": MESSAGE_DESCRIPTION, "parameters": MESSAGE_SCHEMA,
        }})
    attrs["tool_schemas"] = schemas
    attrs["__doc__"] = (
        f"TRL environment over {', '.join(episodes.loaded)}: one instance per rollout; tools "
        f"{', '.join(s['function']['name'] for s in schemas)}."
    )
    return type(label, (SimforgeTRLEnv,), attrs)


def dataset(
    environment: type[SimforgeTRLEnv] | SimforgeTRLEnv,
    seeds: int | Iterable[int] | None = None,
    *,
    policy: bool = True,
) -> Any:
    """A ``datasets.Dataset`` of rollouts for ``GRPOTrainer(train_dataset=...)``: one row per
    seed (``None``: one block of seeds, every task once; ``n``: ``n`` seeds; or the seeds
    given) with the task that seed samples, as ``reset`` without a task would. Columns:
    ``prompt`` (the policy as a system message when ``policy``, then an empty user message,
    which ``reset`` fills with the instruction), ``scenario``, ``task`` and ``seed``. TRL
    repeats each row ``num_generations`` times, so a group shares its task, seed and faults."""
    from datasets import Dataset

    episodes = environment._episodes
    rows = []
    for seed in episodes.seeds(seeds):
        sid, task = episodes.resolve(None, seed)
        prompt = []
        text = episodes.loaded[sid].policy
        if policy and text:
            prompt.append({"role": "system", "content": text})
        prompt.append({"role": "user", "content": ""})
        rows.append({
            "prompt": prompt, "scenario": sid, "task": episodes.task_name(sid, task),
            "seed": seed,
        })
    return Dataset.from_list(rows)


def simforge_reward(
    completions: list[Any], environments: list[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """A reward function for ``GRPOTrainer(reward_funcs=...)``: each rollout's last text (its
    completion's final assistant message, when that calls no tool) becomes its episode's final
    answer, and simforge's reward is reported (0.0 for an invalid episode; ``None`` for a
    rollout of another environment, or one whose reward ``get_reward`` already reported)."""
    if environments is None:
        raise UsageError(
            "simforge_reward scores TRL environments: use GRPOTrainer(environment_factory=...)"
        )
    rewards: list[float | None] = []
    for completion, env in zip(completions, environments, strict=True):
        if not isinstance(env, SimforgeTRLEnv) or env.env is None:
            rewards.append(None)
            continue
        env._finish(last_text(completion))
        rewards.append(env._report())
    return rewards
