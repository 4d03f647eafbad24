"""An agent behind any OpenAI-compatible chat-completions endpoint.

The conversation contract of :mod:`simforge.env.core`: the instruction is the user's first
message; a reply with tool calls is a step of calls (parallel calls run concurrently in simulated
time; text beside them rides along); a reply without calls is a message to the user, whose
answer comes back as the next ``user`` message, until the user ends the conversation (the
environment then ends the episode, and that reply was the final answer).

Configuration, as people run it: ``llm:MODEL`` or ``llm:MODEL?key=value&...`` (the spec string a
worker process or a Ray task rebuilds the policy from), over ``SIMFORGE_LLM_*`` variables
(:meth:`simforge.chat.ChatConfig.from_env`: ``BASE_URL``, ``API_KEY``, ``TEMPERATURE``,
``MAX_TOKENS``, ``TOOL_CHOICE``, ``PARALLEL_TOOL_CALLS``, ``EXTRA_BODY``, ``RETRIES``,
``TIMEOUT``, ``MAX_CONCURRENCY``, ...), plus ``SIMFORGE_LLM_SYSTEM_PROMPT`` (a template file)
and ``SIMFORGE_LLM_MAX_TURNS``. Spec keys: the same names in lower case, ``system_prompt`` (a
template file) and ``max_turns``; ``reasoning_effort`` and any other key not listed goes into
the request body as it is (``extra_body``).

The system prompt is a Jinja2 template (sandboxed, undefined names are errors) with
``policy`` (the policy the environment gives, markdown), ``scenario``, ``task_id`` and
``tool_names``; the default one puts the policy in. Every assistant turn records its token usage,
the request's latency, attempts and finish reason in the trajectory (``metadata.llm``).

Requests go through one :class:`simforge.chat.ChatClient` per policy (its connections kept
alive across steps, sync or async): 429 and 5xx retried with backoff that honours
``Retry-After`` (one retry policy for both, on ``tenacity``), a bound on concurrent requests
across the worker processes of one machine. An endpoint that fails, or answers something that
is not a completion, raises
:class:`~simforge.chat.ChatError` (a :class:`~simforge.policies.base.PolicyUnavailable`): the
episode is recorded as invalid, never as the agent's failure.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl

from simforge.chat import ChatClient, ChatConfig, ChatError, Completion
from simforge.errors import UsageError
from simforge.policies.base import PolicyBase
from simforge.policies.scripted import NOOP_ANSWER
from simforge.scenario.model import Task

SYSTEM_PROMPT = """\
You are a customer-operations agent of the company, with access to its tools. Use the tools to
look things up and to act, and follow the company policy{% if policy %} below{% endif %}. Talk
with the user in plain messages: ask for what you need, and confirm before you act where the
policy asks for it. When the request is handled (or cannot be), tell the user the outcome.
{%- if policy %}

# Policy

{{ policy }}
{%- endif %}
"""

_CONFIG_KEYS = {
    "base_url": str,
    "api_key": str,
    "timeout": float,
    "retries": int,
    "temperature": float,
    "max_tokens": int,
    "max_concurrency": int,
}

LLMError = ChatError
"""The endpoint failed or answered something that is not a completion (kept by its old name)."""


def parse_spec(arg: str) -> tuple[str, dict[str, str]]:
    """``MODEL`` or ``MODEL?key=value&...`` -> ``(model, options)``."""
    model, sep, query = arg.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False)) if sep else {}
    return model, options


def render_prompt(template: str, **values: Any) -> str:
    """The system prompt from a Jinja2 template (sandboxed; an unknown name is an error)."""
    from jinja2 import StrictUndefined, TemplateError
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True,
                               autoescape=False)
    try:
        return env.from_string(template).render(**values).strip()
    except TemplateError as exc:
        raise UsageError(f"the llm policy's system prompt template: {exc}") from None


def _read_template(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"system prompt template {path!r}: {exc}") from None


class LLMPolicy(PolicyBase):
    """A chat-completions agent: one request per step, tool results fed back as ``tool``
    messages, user replies as ``user`` messages (see the module docstring)."""

    name: ClassVar[str] = "llm"

    def __init__(
        self,
        model: str | None = None,
        *,
        config: ChatConfig | None = None,
        system_prompt: str | None = None,
        max_turns: int | None = None,
        client: ChatClient | None = None,
        **options: Any,
    ) -> None:
        spec_options: dict[str, str] = {}
        if model and "?" in model:
            model, spec_options = parse_spec(model)
        template = system_prompt
        raw_template = spec_options.pop("system_prompt", None) or os.environ.get(
            "SIMFORGE_LLM_SYSTEM_PROMPT"
        )
        if template is None and raw_template:
            template = _read_template(raw_template)
        self.template = template or SYSTEM_PROMPT
        render_prompt(self.template, policy="", scenario="", task_id="", tool_names=[])
        raw_turns = spec_options.pop("max_turns", None) or os.environ.get(
            "SIMFORGE_LLM_MAX_TURNS"
        )
        self.max_turns = max_turns or _positive_int("max_turns", raw_turns, 30)
        if config is None:
            overrides, extra = _config_overrides(model, spec_options, options)
            config = ChatConfig.from_env("SIMFORGE_LLM", "OPENAI", **overrides)
            if extra:  # the spec's body fields go on top of $SIMFORGE_LLM_EXTRA_BODY's
                config = dataclasses.replace(
                    config, extra_body={**(config.extra_body or {}), **extra}
                )
        self.config = config
        self.model = config.model
        self._client = client
        self.messages: list[dict[str, Any]] = []
        self._tools: list[dict[str, Any]] = []
        self._pending: list[str] = []
        self._turns = 0
        self._seed = 0
        self._last_text: str | None = None

    # -- conversation state, shared by the sync and async paths --------------------------------

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        task_info = observation.get("task") or {}
        self._tools = list(observation.get("tools") or [])
        prompt = render_prompt(
            self.template,
            policy=observation.get("policy") or "",
            scenario=task_info.get("scenario", ""),
            task_id=task_info.get("id", ""),
            tool_names=[(t.get("function") or {}).get("name") for t in self._tools],
        )
        self.messages = [
            {"role": "system", "content": prompt},
            {"role": "user", "content": task_info.get("instruction") or ""},
        ]
        self._pending = []
        self._turns = 0
        self._seed = seed
        self._last_text = None

    def _absorb_observation(self, observation: dict[str, Any]) -> dict[str, Any] | None:
        """Feed results and user replies into the dialogue; an action when the turns ran out."""
        results = observation.get("results") or []
        for i, result in enumerate(results):
            call_id = self._pending[i] if i < len(self._pending) else result.get("call_id")
            body = result.get("result") if result.get("ok") else {"error": result.get("error")}
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps(body, default=str)}
            )
        self._pending = []
        if observation.get("user"):
            self.messages.append({"role": "user", "content": observation["user"]})
        if self._turns >= self.max_turns:
            return {"final_answer": self._last_text or NOOP_ANSWER}
        self._turns += 1
        return None

    def _absorb_completion(self, completion: Completion) -> dict[str, Any]:
        calls = completion.tool_calls
        content = completion.content
        meta = {"llm": {
            "model": completion.model,
            "usage": completion.usage,
            "latency_s": round(completion.latency_s, 6),
            "attempts": completion.attempts,
            "finish_reason": completion.finish_reason,
        }}
        if not calls:
            self.messages.append({"role": "assistant", "content": content or ""})
            self._last_text = content or ""
            return {"message": content or "", "metadata": meta}
        self.messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        self._pending = [c["id"] for c in calls]
        action: dict[str, Any] = {
            "tool_calls": [
                {"id": c["id"], "name": c["function"]["name"],
                 "arguments": c["function"]["arguments"] or "{}"}
                for c in calls
            ],
            "metadata": meta,
        }
        if content:
            action["message"] = content
            self._last_text = content
        return action

    def _chat(self) -> ChatClient:
        if self._client is None:
            self._client = ChatClient(self.config)
        return self._client

    # -- sync and async ------------------------------------------------------------------------

    def act(self, observation: dict[str, Any]) -> Any:
        done = self._absorb_observation(observation)
        if done is not None:
            return done
        completion = self._chat().complete(self.messages, tools=self._tools, seed=self._seed)
        return self._absorb_completion(completion)

    async def aact(self, observation: dict[str, Any]) -> Any:
        done = self._absorb_observation(observation)
        if done is not None:
            return done
        completion = await self._chat().acomplete(
            self.messages, tools=self._tools, seed=self._seed
        )
        return self._absorb_completion(completion)

    def request_body(self) -> dict[str, Any]:
        """The body the next request sends (for inspection and tests)."""
        return self._chat().request_body(self.messages, tools=self._tools, seed=self._seed)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """:meth:`close`, and the async connections too (call it in the loop that played:
        the policy keeps one client, whose async connections serve every episode played in
        one event loop)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _positive_int(name: str, raw: Any, default: int) -> int:
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise UsageError(f"the llm policy's {name}: {raw!r}, expected an integer >= 1")
    return value


def _config_overrides(
    model: str | None, spec: dict[str, str], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """ChatConfig fields, and request-body fields, from the spec's query (strings) and keyword
    options (values)."""
    out: dict[str, Any] = {"model": model or None}
    extra: dict[str, Any] = {}
    for key, raw in spec.items():
        if key in _CONFIG_KEYS:
            try:
                out[key] = _CONFIG_KEYS[key](raw)
            except ValueError:
                raise UsageError(
                    f"llm spec option {key}={raw!r}: expected {_CONFIG_KEYS[key].__name__}"
                ) from None
        elif key == "tool_choice":
            out[key] = json.loads(raw) if raw.startswith("{") else raw
        elif key == "parallel_tool_calls":
            if raw.lower() not in ("true", "false", "1", "0"):
                raise UsageError(f"llm spec option {key}={raw!r}: expected true or false")
            out[key] = raw.lower() in ("true", "1")
        else:
            extra[key] = _scalar(raw)
    for key, value in options.items():
        if key == "extra_body":
            extra.update(value or {})
        else:
            out[key] = value
    return out, extra


def _scalar(raw: str) -> Any:
    """A spec value for the request body: JSON when it parses (numbers, booleans), else text."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
