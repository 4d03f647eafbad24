"""An LLM playing the user: a model behind an OpenAI-compatible endpoint, given the task's user
scenario (persona, what the user wants, knows and does not know, how to behave) and nothing
more: not the expected outcome, not the tools, not the policy.

Configured like the llm policy, from ``SIMFORGE_USER_*`` (``BASE_URL``, ``MODEL``,
``API_KEY``, ``TEMPERATURE``, ``MAX_TOKENS``, ``EXTRA_BODY``, ``RETRIES``, ``TIMEOUT``,
``MAX_CONCURRENCY``; the first three fall back to ``SIMFORGE_LLM_*``, then ``OPENAI_*``), or
``--user llm:MODEL``. A task without a ``user`` block is played from what production showed of
the user: its first message and its later turns.

**The conversation ends** when the model's reply carries a stop signal (``###STOP###``; tau2's
``###TRANSFER###`` and ``###OUT-OF-SCOPE###`` count as well), stripped from the text the agent
hears. The user only ever speaks after the agent's message, and a message is answered after the
agent's calls of earlier steps have all answered (a step runs its calls to their answers; a
served session takes its lock behind calls in flight), so the user cannot stop before the
agent's last write has answered.

**Replies are cached** by a SHA-256 of everything the reply depends on (model, request options,
seed, the system prompt, the dialogue so far): a rerun with the same agent actions replays
byte-identically with the endpoint switched off. The cache is a folder of small JSON files,
each written atomically (``$SIMFORGE_USER_CACHE``, default ``~/.cache/simforge/users``;
``off`` disables it). Only what does not depend on wall time reaches the trajectory: the text
and the token usage, never the latency, so a cached reply and a fresh one record the same.

**A failing user is not the agent's failure**: an endpoint that is down, a reply that is not a
completion or has no text raises :class:`~simforge.users.base.SimulatedUserError`, and the
episode is invalid.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from simforge import atomic
from simforge.chat import ChatClient, ChatConfig, ChatError, Completion
from simforge.errors import UsageError
from simforge.scenario.model import Task, UserSpec
from simforge.users.base import SimulatedUserError, Turn, UserReply

STOP_SIGNALS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
CACHE_VERSION = 1

SYSTEM_PROMPT = """\
You are playing a user of a company's service, talking to one of its agents (who may be an AI).
Stay in your role for the whole conversation; the agent must never learn that you follow
instructions.

Rules:
- Write only what this user would say: one short, natural message at a time, in the first person.
- Give a fact you know only when the agent asks for it or needs it; never make up facts you were
  not given. If asked something you do not know, say you do not know.
- Pursue what you want; follow the instructions on how to behave, in order.
- Do not ask the agent to do anything beyond what you want, and do not solve the task yourself.
- When what you want is done, or the agent transfers you to a human, or it cannot go on, end the
  conversation: write a last short message (or nothing) followed by ###STOP###.
- Do not end the conversation before the agent has told you the outcome of what it did.
"""


def cache_dir() -> Path | None:
    raw = os.environ.get("SIMFORGE_USER_CACHE", "").strip()
    if raw.lower() in ("off", "none", "0", "false"):
        return None
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join("~", ".cache")
    return Path(base).expanduser() / "simforge" / "users"


def scenario_prompt(task: Task) -> str:
    """The system prompt of the user of ``task``: the rules, then who they are."""
    spec = task.user
    sections: list[tuple[str, str]] = []
    if spec is not None and _has_any(spec):
        if spec.persona:
            sections.append(("Who you are", spec.persona))
        if spec.wants:
            sections.append(("What you want", spec.wants))
        if spec.knows:
            knows = spec.knows
            if isinstance(knows, dict):
                knows = "\n".join(f"- {k}: {v}" for k, v in knows.items())
            sections.append(("What you know", str(knows)))
        if spec.unknown:
            sections.append(("What you do not know", spec.unknown))
        if spec.instructions:
            sections.append(("How to behave", spec.instructions))
    else:
        wants = f"You opened the conversation with: {task.instruction}"
        sections.append(("What you want", wants))
        if task.user_turns:
            said = "\n".join(f"{i}. {turn}" for i, turn in enumerate(task.user_turns, 1))
            sections.append((
                "How to behave",
                "In the conversation this is taken from, you went on to say, in this order "
                "(say the same things when the agent's messages call for them):\n" + said,
            ))
    body = "\n\n".join(f"## {title}\n{text.strip()}" for title, text in sections)
    return f"{SYSTEM_PROMPT}\n{body}\n"


def _has_any(spec: UserSpec) -> bool:
    return any(getattr(spec, name) for name in UserSpec.model_fields)


def split_stop(text: str | None) -> tuple[str | None, bool]:
    """``(text without stop signals, or None if nothing is left; whether one was there)``."""
    if not text:
        return None, False
    ended = False
    for signal in STOP_SIGNALS:
        if signal in text:
            ended = True
            text = text.replace(signal, "")
    text = text.strip()
    return (text or None), ended


class LLMUser:
    """A user simulator behind an OpenAI-compatible endpoint (see the module docstring)."""

    name = "llm"

    def __init__(
        self,
        model: str | None = None,
        *,
        config: ChatConfig | None = None,
        cache: Path | str | None = None,
        client: ChatClient | None = None,
    ) -> None:
        self.config = config or _config(model)
        self.spec = f"llm:{self.config.model}"
        self.cache = Path(cache) if cache is not None else cache_dir()
        self._client = client
        self._system = ""
        self._seed = 0

    def reset(self, task: Task, *, seed: int, scenario: str) -> None:
        self._system = scenario_prompt(task)
        self._seed = seed

    # -- one reply -----------------------------------------------------------------------------

    def messages(self, dialogue: list[Turn]) -> list[dict[str, Any]]:
        """The request's messages: the model plays the user, so the user's turns are its own
        (``assistant``) and the agent's are what it answers (``user``)."""
        out: list[dict[str, Any]] = [{"role": "system", "content": self._system}]
        for turn in dialogue:
            role = "assistant" if turn.speaker == "user" else "user"
            out.append({"role": role, "content": turn.text})
        return out

    def key(self, messages: list[dict[str, Any]]) -> str:
        config = self.config
        material = {
            "v": CACHE_VERSION,
            "model": config.model,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "extra_body": config.extra_body,
            "seed": self._seed,
            "messages": messages,
        }
        raw = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()

    def reply(self, dialogue: list[Turn]) -> UserReply:
        messages = self.messages(dialogue)
        key = self.key(messages)
        cached = self._read(key)
        if cached is None:
            try:
                completion = self._chat().complete(messages, seed=self._seed)
            except ChatError as exc:
                raise SimulatedUserError(f"the user's endpoint failed: {exc}") from None
            cached = self._store(key, completion)
        return self._reply(cached)

    async def areply(self, dialogue: list[Turn]) -> UserReply:
        messages = self.messages(dialogue)
        key = self.key(messages)
        cached = self._read(key)
        if cached is None:
            try:
                completion = await self._chat().acomplete(messages, seed=self._seed)
            except ChatError as exc:
                raise SimulatedUserError(f"the user's endpoint failed: {exc}") from None
            cached = self._store(key, completion)
        return self._reply(cached)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- internals -----------------------------------------------------------------------------

    def _chat(self) -> ChatClient:
        if self._client is None:
            self._client = ChatClient(self.config)
        return self._client

    def _reply(self, entry: dict[str, Any]) -> UserReply:
        text, ended = split_stop(entry.get("text"))
        if text is None and not ended:
            raise SimulatedUserError("the user's model replied with no text and no stop signal")
        meta: dict[str, Any] = {"model": entry.get("model")}
        if entry.get("usage"):
            meta["usage"] = entry["usage"]
        return UserReply(text, ended=ended, metadata={"llm": meta})

    def _path(self, key: str) -> Path | None:
        return None if self.cache is None else self.cache / key[:2] / f"{key}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent, or a torn file of a killed writer: ask the endpoint again
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def _store(self, key: str, completion: Completion) -> dict[str, Any]:
        entry = {
            "key": key,
            "text": completion.content,
            "usage": completion.usage,
            "model": completion.model or self.config.model,
        }
        text = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        path = self._path(key)
        if path is not None:
            _write_atomically(path, text)
        # what a rerun will read back, key order included: a fresh reply and a cached one must
        # leave the same bytes in the trajectory
        loaded: dict[str, Any] = json.loads(text)
        return loaded


def _config(model: str | None) -> ChatConfig:
    overrides: dict[str, Any] = {"model": model} if model else {}
    # SIMFORGE_USER_* first; the endpoint, model and key fall back to the agent's settings
    for name in ("BASE_URL", "MODEL", "API_KEY"):
        if not os.environ.get(f"SIMFORGE_USER_{name}") and name.lower() not in overrides:
            value = os.environ.get(f"SIMFORGE_LLM_{name}") or os.environ.get(f"OPENAI_{name}")
            if value:
                overrides[name.lower()] = value
    try:
        return ChatConfig.from_env("SIMFORGE_USER", fallback=None, **overrides)
    except ValueError as exc:
        raise UsageError(f"the llm user: {exc}") from None


def _write_atomically(path: Path, text: str) -> None:
    atomic.write_text(path, text)
