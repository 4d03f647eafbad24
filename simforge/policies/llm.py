"""An agent behind any OpenAI-compatible chat-completions endpoint, spoken to over httpx.

Configuration comes from the environment so that a worker process, a Ray task or a CI job can
be pointed at a model without code: ``SIMFORGE_LLM_BASE_URL`` / ``SIMFORGE_LLM_MODEL`` /
``SIMFORGE_LLM_API_KEY`` (falling back to ``OPENAI_BASE_URL`` / ``OPENAI_MODEL`` /
``OPENAI_API_KEY``), ``SIMFORGE_LLM_MAX_TURNS`` and ``SIMFORGE_LLM_TEMPERATURE``. The catalog is
sent as it is (it already is OpenAI function format); parallel tool calls come back as one
action whose calls run concurrently in simulated time.

httpx directly rather than the ``openai`` SDK: one POST is all this needs, httpx is already a
dependency, and its transports make a fake endpoint trivial in tests. An endpoint that keeps
failing raises :class:`LLMError`; the runner records the episode as invalid (an infrastructure
failure), never as the agent's failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any, ClassVar

import httpx

from simforge.policies.base import PolicyBase, PolicyUnavailable
from simforge.policies.scripted import NOOP_ANSWER
from simforge.scenario.model import Task

SYSTEM_PROMPT = (
    "You are a customer-operations agent with access to the company's tools. Use the tools to "
    "look things up and to act; follow company policy; when the request is handled (or cannot "
    "be), reply to the customer with a final message and no tool calls."
)
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class LLMError(PolicyUnavailable):
    """The chat-completions endpoint failed or answered something that is not a completion."""


def _env(*names: str, default: str | None = None) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


class LLMPolicy(PolicyBase):
    """A chat-completions agent: one request per step, tool results fed back as ``tool``
    messages, the first answer without tool calls is the final answer."""

    name: ClassVar[str] = "llm"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_turns: int | None = None,
        temperature: float | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        system_prompt: str = SYSTEM_PROMPT,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model or _env("SIMFORGE_LLM_MODEL", "OPENAI_MODEL")
        if not self.model:
            raise ValueError("the llm policy needs a model: 'llm:MODEL' or $SIMFORGE_LLM_MODEL")
        self.base_url = (
            base_url
            or _env("SIMFORGE_LLM_BASE_URL", "OPENAI_BASE_URL", default="https://api.openai.com/v1")
            or ""
        ).rstrip("/")
        self.api_key = api_key or _env("SIMFORGE_LLM_API_KEY", "OPENAI_API_KEY")
        self.max_turns = max_turns or int(_env("SIMFORGE_LLM_MAX_TURNS", default="20") or 20)
        raw_temperature = _env("SIMFORGE_LLM_TEMPERATURE")
        self.temperature = temperature if temperature is not None else (
            float(raw_temperature) if raw_temperature else None
        )
        self.timeout = timeout
        self.retries = retries
        self.system_prompt = system_prompt
        self._transport = transport
        self._async_transport = async_transport
        self._client: httpx.Client | None = None
        self.messages: list[dict[str, Any]] = []
        self._tools: list[dict[str, Any]] = []
        self._pending: list[str] = []
        self._turns = 0
        self._seed = 0

    # -- conversation state, shared by the sync and async paths --------------------------------

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        instruction = (observation.get("task") or {}).get("instruction") or ""
        self.messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": instruction},
        ]
        self._tools = list(observation.get("tools") or [])
        self._pending = []
        self._turns = 0
        self._seed = seed

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
            return {"final_answer": NOOP_ANSWER}
        self._turns += 1
        return None

    def request_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self.messages, "seed": self._seed}
        if self._tools:
            body["tools"] = self._tools
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = True
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _absorb_completion(self, data: Any) -> dict[str, Any]:
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"not a chat completion: {str(data)[:200]}") from None
        calls = message.get("tool_calls") or []
        content = message.get("content")
        if not calls:
            self.messages.append({"role": "assistant", "content": content or ""})
            return {"final_answer": content or ""}
        self.messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        self._pending = [c.get("id") or f"call_{self._turns}_{i}" for i, c in enumerate(calls)]
        action: dict[str, Any] = {
            "tool_calls": [
                {
                    "id": self._pending[i],
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments") or "{}",
                }
                for i, c in enumerate(calls)
            ]
        }
        if content:
            action["message"] = content
        return action

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    # -- sync ----------------------------------------------------------------------------------

    def act(self, observation: dict[str, Any]) -> Any:
        done = self._absorb_observation(observation)
        if done is not None:
            return done
        if self._client is None:
            self._client = httpx.Client(
                base_url=self.base_url, timeout=self.timeout, transport=self._transport
            )
        body = self.request_body()
        for attempt in range(self.retries + 1):
            try:
                response = self._client.post(
                    "/chat/completions", json=body, headers=self._headers()
                )
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise LLMError(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc
                time.sleep(0.5 * 2**attempt)
                continue
            if response.status_code in RETRY_STATUSES and attempt < self.retries:
                time.sleep(_retry_after(response, attempt))
                continue
            return self._absorb_completion(_json(response))
        raise AssertionError("unreachable")

    # -- async ---------------------------------------------------------------------------------

    async def aact(self, observation: dict[str, Any]) -> Any:
        done = self._absorb_observation(observation)
        if done is not None:
            return done
        body = self.request_body()
        async with httpx.AsyncClient(
            base_url=self.base_url, timeout=self.timeout, transport=self._async_transport
        ) as client:
            for attempt in range(self.retries + 1):
                try:
                    response = await client.post(
                        "/chat/completions", json=body, headers=self._headers()
                    )
                except httpx.TransportError as exc:
                    if attempt == self.retries:
                        raise LLMError(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc
                    await asyncio.sleep(0.5 * 2**attempt)
                    continue
                if response.status_code in RETRY_STATUSES and attempt < self.retries:
                    await asyncio.sleep(_retry_after(response, attempt))
                    continue
                return self._absorb_completion(_json(response))
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        return min(30.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return 0.5 * 2**attempt


def _json(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise LLMError(f"chat completions answered {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError:
        raise LLMError(f"chat completions answered non-JSON: {response.text[:200]}") from None
