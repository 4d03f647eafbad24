"""One client for OpenAI-compatible chat-completions endpoints, shared by the LLM agent policy
and the LLM user simulator.

It speaks plain httpx rather than the ``openai`` SDK: a completion is one POST with a JSON body,
httpx already is a dependency (``pip install simforge`` pulls in nothing more), and httpx
transports make a fake endpoint trivial in tests. httpx itself is imported only when a
:class:`ChatClient` is built, so importing this module (for :class:`ChatError`, say) is cheap.

What it adds over a bare POST:

* **Configuration** in one frozen :class:`ChatConfig`, from code or from the environment
  (:meth:`ChatConfig.from_env`: ``SIMFORGE_LLM_*``, falling back to ``OPENAI_*`` for the base
  URL, model and key).
* **Retries** of transport errors and of 408/409/429/500/502/503/504, with exponential backoff
  and full jitter drawn from a ``random.Random`` seeded from ``(seed, attempt)`` (reproducible
  when the request has a seed), honouring ``retry-after-ms`` and ``Retry-After`` (seconds or an
  HTTP date), capped: one retry policy on ``tenacity`` for sync and async requests alike. The
  sleeping function is injectable.
* **One error type**, :class:`ChatError` (a :class:`~simforge.errors.PolicyUnavailable`),
  for everything that is the endpoint's fault, in one line naming the endpoint, what happened
  and at most 200 characters of the body. A stress run records such an episode as invalid,
  never as the agent's failure.
* **Normalised replies**: :class:`Completion` carries the assistant message with every tool
  call given an ``id``, ``type: "function"`` and ``arguments`` as a JSON string.
* **A concurrency bound per machine**: with ``max_concurrency=N`` every request first takes one
  of ``N`` lock files (``fcntl.flock``) in ``concurrency_dir``, which by default is derived from
  the base URL, so every process and thread on this machine that talks to one endpoint shares
  the same ``N`` slots (forked stress workers, Ray tasks on one node). It bounds a machine, not
  a cluster: ten nodes with ``N = 4`` may have forty requests in flight. POSIX only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from simforge.errors import InfrastructureError, PolicyUnavailable, UsageError, WrongType

if TYPE_CHECKING:
    import httpx
    import tenacity

__all__ = [
    "RETRY_STATUSES",
    "ChatClient",
    "ChatConfig",
    "ChatError",
    "Completion",
    "parse_retry_after",
]

log = logging.getLogger("simforge.chat")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
EXCERPT = 200
_PATH = "/chat/completions"
_TOOL_CHOICES = ("auto", "none", "required")
_TRUE, _FALSE = ("true", "1"), ("false", "0")
_private_random = random.Random()  # slot scan order and unseeded jitter; never the global one


class ChatError(PolicyUnavailable):
    """The chat-completions endpoint failed, or answered something that is not a completion.

    ``str(error)`` is one line: endpoint, what happened, an excerpt of the body. ``endpoint``,
    ``status`` (the HTTP status, when there was an answer) and ``attempts`` are attributes.
    Picklable (it crosses process boundaries in a stress run)."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        status: int | None = None,
        attempts: int | None = None,
    ) -> None:
        super().__init__(" ".join(message.split()))
        self.endpoint = endpoint
        self.status = status
        self.attempts = attempts


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


def _fail(
    endpoint: str,
    what: str,
    body: str | None = None,
    *,
    status: int | None = None,
    attempts: int | None = None,
) -> ChatError:
    message = f"{endpoint}: {what}" + (f": {_excerpt(body)}" if body else "")
    return ChatError(message, endpoint=endpoint, status=status, attempts=attempts)


# -- configuration ---------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True)
class ChatConfig:
    """Where to send requests, how to retry them, and the request options.

    ``timeout`` is httpx's per-phase timeout (connect, write, each read; pool) in seconds, and
    also bounds the wait for a concurrency slot. ``retries`` is the number of retries after the
    first request. Backoff before retry ``k`` (1-based) is uniform in ``[0, min(backoff_cap,
    backoff_base * 2**(k-1))]`` unless the answer said when to come back (``retry-after-ms`` or
    ``Retry-After``, capped at ``retry_after_cap``).

    ``tool_choice`` and ``parallel_tool_calls`` are sent only with tools, and only when set
    (``None`` leaves the endpoint's default, which for OpenAI is ``"auto"`` and parallel calls).
    ``temperature`` and ``max_tokens`` are sent when set. ``extra_body`` is merged into the
    request body last, overriding anything above: the place for provider fields such as
    ``reasoning_effort`` or ``max_completion_tokens``.
    """

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 120.0
    retries: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    retry_after_cap: float = 60.0
    max_concurrency: int | None = None
    concurrency_dir: str | Path | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | dict[str, Any] | None = field(default=None, hash=False)
    parallel_tool_calls: bool | None = None
    extra_body: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        def bad(name: str, expected: str) -> ValueError:
            return ValueError(
                f"ChatConfig.{name}: got {getattr(self, name)!r}, expected {expected}"
            )

        if not isinstance(self.model, str) or not self.model.strip():
            raise bad("model", "a non-empty model name")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise bad("base_url", "an http:// or https:// URL")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        if not _is_number(self.timeout) or self.timeout <= 0:
            raise bad("timeout", "a number of seconds > 0")
        if not _is_int(self.retries) or self.retries < 0:
            raise bad("retries", "an integer >= 0")
        for name in ("backoff_base", "backoff_cap", "retry_after_cap"):
            if not _is_number(getattr(self, name)) or getattr(self, name) < 0:
                raise bad(name, "a number of seconds >= 0")
        if self.max_concurrency is not None and (
            not _is_int(self.max_concurrency) or self.max_concurrency < 1
        ):
            raise bad("max_concurrency", "an integer >= 1, or None for unbounded")
        if self.concurrency_dir is not None and not isinstance(self.concurrency_dir, str | Path):
            raise bad("concurrency_dir", "a path")
        if self.temperature is not None and (
            not _is_number(self.temperature) or self.temperature < 0
        ):
            raise bad("temperature", "a number >= 0")
        if self.max_tokens is not None and (not _is_int(self.max_tokens) or self.max_tokens < 1):
            raise bad("max_tokens", "an integer >= 1")
        if self.tool_choice is not None and not isinstance(self.tool_choice, str | dict):
            raise bad("tool_choice", f"one of {_TOOL_CHOICES} or a JSON object")
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise bad("parallel_tool_calls", "true or false")
        if self.extra_body is not None:
            if not isinstance(self.extra_body, Mapping):
                raise bad("extra_body", "a mapping of request-body fields")
            object.__setattr__(self, "extra_body", dict(self.extra_body))

    @property
    def endpoint(self) -> str:
        return self.base_url + _PATH

    def slot_dir(self) -> Path:
        """The folder of concurrency slots: ``concurrency_dir``, or one per endpoint (and user)
        under the system temporary folder."""
        if self.concurrency_dir is not None:
            return Path(self.concurrency_dir)
        digest = hashlib.sha256(self.base_url.encode()).hexdigest()[:16]
        uid = os.getuid() if hasattr(os, "getuid") else 0
        return Path(tempfile.gettempdir()) / f"simforge-chat-{uid}-{digest}"

    @classmethod
    def from_env(
        cls, prefix: str = "SIMFORGE_LLM", fallback: str | None = "OPENAI", **overrides: Any
    ) -> ChatConfig:
        """A config from ``{prefix}_*`` variables: ``BASE_URL``, ``MODEL``, ``API_KEY`` (these
        three falling back to ``{fallback}_*``), ``TIMEOUT``, ``RETRIES``, ``TEMPERATURE``,
        ``MAX_TOKENS``, ``TOOL_CHOICE`` (auto/none/required or a JSON object),
        ``PARALLEL_TOOL_CALLS`` (true/false/1/0), ``EXTRA_BODY`` (a JSON object),
        ``MAX_CONCURRENCY`` and ``CONCURRENCY_DIR``. Empty variables count as unset. Keyword
        ``overrides`` (field names) win over the environment; ``None`` ones are ignored. A bad
        value raises ValueError naming the variable, the value and what is allowed."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise WrongType(f"unknown ChatConfig field(s) {unknown}; fields: {sorted(fields)}")
        values: dict[str, Any] = {}

        def get(name: str, *, fallback_too: bool = False) -> tuple[str, str] | None:
            names = [f"{prefix}_{name}"]
            if fallback_too and fallback:
                names.append(f"{fallback}_{name}")
            for var in names:
                raw = os.environ.get(var, "").strip()
                if raw:
                    return var, raw
            return None

        for key in ("base_url", "model", "api_key"):
            found = get(key.upper(), fallback_too=True)
            if found:
                values[key] = found[1]
        parsers: dict[str, Callable[[str, str], Any]] = {
            "timeout": _env_positive_float,
            "retries": _env_int(0),
            "temperature": _env_temperature,
            "max_tokens": _env_int(1),
            "tool_choice": _env_tool_choice,
            "parallel_tool_calls": _env_bool,
            "extra_body": _env_json_object,
            "max_concurrency": _env_int(1),
            "concurrency_dir": lambda var, raw: raw,
        }
        for key, parse in parsers.items():
            found = get(key.upper())
            if found:
                values[key] = parse(*found)
        if found := get("BASE_URL", fallback_too=True):
            var, raw = found
            if not raw.startswith(("http://", "https://")):
                raise UsageError(f"{var}={raw!r}: expected an http:// or https:// URL")
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values.get("model"):
            names = f"${prefix}_MODEL" + (f" (or ${fallback}_MODEL)" if fallback else "")
            raise UsageError(f"no chat model configured: set {names} or pass model=")
        return cls(**values)


def _env_error(var: str, raw: str, expected: str) -> ValueError:
    return ValueError(f"{var}={raw!r}: expected {expected}")


def _env_positive_float(var: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise _env_error(var, raw, "a number of seconds > 0")
    return value


def _env_temperature(var: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise _env_error(var, raw, "a number >= 0")
    return value


def _env_int(minimum: int) -> Callable[[str, str], int]:
    def parse(var: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise _env_error(var, raw, f"an integer >= {minimum}")
        return value

    return parse


def _env_bool(var: str, raw: str) -> bool:
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise _env_error(var, raw, "one of true, false, 1, 0")


def _env_json_object(var: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise _env_error(var, raw, "a JSON object")
    return value


def _env_tool_choice(var: str, raw: str) -> str | dict[str, Any]:
    if raw in _TOOL_CHOICES:
        return raw
    if raw.startswith("{"):
        return _env_json_object(var, raw)
    raise _env_error(var, raw, f"one of {', '.join(_TOOL_CHOICES)} or a JSON object")


# -- retry timing ----------------------------------------------------------------------------


def parse_retry_after(
    headers: Mapping[str, str], *, cap: float = 60.0, now: datetime | None = None
) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` (preferred) or
    ``Retry-After`` (seconds, or an HTTP date relative to ``now``); clamped to ``[0, cap]``.
    ``None`` when neither header is there or parses to a finite number."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    seconds: float | None = None
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        seconds = _finite(raw_ms)
        if seconds is not None:
            seconds /= 1000.0
    raw = lowered.get("retry-after")
    if seconds is None and raw is not None:
        seconds = _finite(raw)
        if seconds is None:
            seconds = _seconds_until(raw, now)
    if seconds is None:
        return None
    return min(max(seconds, 0.0), max(cap, 0.0))


def _finite(raw: str) -> float | None:
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _seconds_until(raw: str, now: datetime | None) -> float | None:
    try:
        when = parsedate_to_datetime(raw.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) else None


def _backoff(config: ChatConfig, seed: int | None, attempt: int) -> float:
    """Full-jitter exponential backoff before retry number ``attempt`` (1-based)."""
    ceiling = min(config.backoff_cap, config.backoff_base * 2.0 ** min(attempt - 1, 60))
    rng = _private_random if seed is None else random.Random(f"simforge.chat:{seed}:{attempt}")
    return rng.uniform(0.0, ceiling)


# -- completions -----------------------------------------------------------------------------


@dataclass
class Completion:
    """A successful answer. ``message`` is the assistant message as returned (other fields kept),
    with ``tool_calls`` normalised (each has ``id``, ``type: "function"`` and ``function:
    {name, arguments}`` with arguments a JSON string) and dropped when empty, so it can be
    appended to the conversation as it is. ``latency_s`` is the wall time of the successful
    request alone; ``attempts`` counts the requests made, that one included."""

    message: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, Any] | None
    latency_s: float
    attempts: int
    model: str | None

    @property
    def content(self) -> str | None:
        content = self.message.get("content")
        return content if isinstance(content, str) else None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


def _parse_completion(
    config: ChatConfig,
    response: httpx.Response,
    *,
    latency: float,
    attempts: int,
    turn: int,
) -> Completion:
    endpoint = config.endpoint
    try:
        data = response.json()
    except ValueError:
        raise _fail(
            endpoint, f"answered {response.status_code} with a non-JSON body", response.text,
            status=response.status_code, attempts=attempts,
        ) from None
    choice = None
    if isinstance(data, dict) and isinstance(data.get("choices"), list) and data["choices"]:
        choice = data["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _fail(
            endpoint, "answered something that is not a chat completion (no choices[0].message)",
            response.text, status=response.status_code, attempts=attempts,
        )
    assert isinstance(choice, dict)
    message = dict(message)
    message.setdefault("role", "assistant")
    calls = message.pop("tool_calls", None)
    if calls:
        if not isinstance(calls, list):
            raise _fail(endpoint, "answered tool_calls that are not a list", response.text,
                        status=response.status_code, attempts=attempts)
        message["tool_calls"] = [
            _normalise_call(config, call, i, turn, response.text, attempts)
            for i, call in enumerate(calls)
        ]
    usage = data.get("usage")
    model = data.get("model")
    finish = choice.get("finish_reason")
    return Completion(
        message=message,
        finish_reason=finish if isinstance(finish, str) else None,
        usage=usage if isinstance(usage, dict) else None,
        latency_s=latency,
        attempts=attempts,
        model=model if isinstance(model, str) else None,
    )


def _normalise_call(
    config: ChatConfig, call: Any, index: int, turn: int, text: str, attempts: int
) -> dict[str, Any]:
    def bad(what: str) -> ChatError:
        return _fail(config.endpoint, f"answered a malformed tool call #{index}: {what}", text,
                     status=200, attempts=attempts)

    if not isinstance(call, dict):
        raise bad("not an object")
    function = call.get("function")
    if not isinstance(function, dict):
        raise bad("no function object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise bad("function.name missing or not a string")
    kind = call.get("type", "function")
    if kind not in (None, "function"):
        raise bad(f"type {kind!r} is not 'function'")
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        arguments = "{}"
    elif not isinstance(arguments, str):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        digest = hashlib.sha256(f"{turn}:{index}:{name}:{arguments}".encode()).hexdigest()[:12]
        call_id = f"call_{index}_{digest}"
    return {
        **call,
        "id": call_id,
        "type": "function",
        "function": {**function, "name": name, "arguments": arguments},
    }


# -- the concurrency bound -------------------------------------------------------------------


class _Slots:
    """``n`` lock files; holding an exclusive ``flock`` on one is holding a slot. ``flock``
    locks belong to open file descriptions, so threads of one process exclude each other too;
    the kernel drops a dead process's locks."""

    def __init__(self, directory: Path, n: int) -> None:
        self.directory = directory
        self.n = n
        self._ready = False

    def try_acquire(self) -> int | None:
        import fcntl

        if not self._ready:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._ready = True
        start = _private_random.randrange(self.n)
        for k in range(self.n):
            path = self.directory / f"slot-{(start + k) % self.n}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return fd
        return None

    @staticmethod
    def release(fd: int) -> None:
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _timeout(self, config: ChatConfig, waited: float) -> ChatError:
        return _fail(
            config.endpoint,
            f"no free concurrency slot of {self.n} in {self.directory} after {waited:.1f} s",
        )

    def acquire(self, config: ChatConfig) -> int:
        start = time.monotonic()
        pause = 0.005
        while (fd := self.try_acquire()) is None:
            waited = time.monotonic() - start
            if waited >= config.timeout:
                raise self._timeout(config, waited)
            time.sleep(min(pause, config.timeout - waited))
            pause = min(0.05, pause * 2)
        return fd

    async def aacquire(self, config: ChatConfig) -> int:
        start = time.monotonic()
        pause = 0.005
        while (fd := self.try_acquire()) is None:
            waited = time.monotonic() - start
            if waited >= config.timeout:
                raise self._timeout(config, waited)
            await asyncio.sleep(min(pause, config.timeout - waited))
            pause = min(0.05, pause * 2)
        return fd


# -- the client ------------------------------------------------------------------------------


class _Retry(InfrastructureError):
    """An attempt's outcome that is worth another attempt after ``delay`` seconds; ``error``
    is what the request fails with if it was the last one allowed (the retry policy raises
    that instead: a ``_Retry`` never leaves :class:`ChatClient`)."""

    def __init__(self, delay: float, reason: str, error: ChatError) -> None:
        super().__init__(reason)
        self.delay = delay
        self.reason = reason
        self.error = error


def _wait_asked(state: tenacity.RetryCallState) -> float:
    """tenacity's wait: the delay the failed attempt asked for (backoff or Retry-After)."""
    assert state.outcome is not None
    retry = state.outcome.exception()
    assert isinstance(retry, _Retry)
    return retry.delay


def _spent(state: tenacity.RetryCallState) -> ChatError:
    """What a request whose retries are spent fails with: its last attempt's ChatError."""
    assert state.outcome is not None
    retry = state.outcome.exception()
    assert isinstance(retry, _Retry)
    return retry.error


class _Sent:
    """One attempt's request, sync or async alike: ``with`` it around the POST, which sets
    ``outcome``; leaving it times the request, releases the concurrency slot the attempt took,
    and keeps a transport error (``httpx.RequestError``) as the outcome instead of raising it."""

    def __init__(self, slot: int | None, transport_error: type[Exception]) -> None:
        self.slot = slot
        self.transport_error = transport_error
        self.outcome: httpx.Response | Exception | None = None
        self.latency = 0.0
        self.started = 0.0

    def __enter__(self) -> _Sent:
        self.started = time.perf_counter()
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> bool:
        self.latency = time.perf_counter() - self.started
        if self.slot is not None:
            _Slots.release(self.slot)
        if isinstance(exc, self.transport_error):
            self.outcome = exc
            return True
        return False


class ChatClient:
    """Chat completions against ``config``'s endpoint, sync (:meth:`complete`) or async
    (:meth:`acomplete`). ``transport``/``async_transport`` replace httpx's network transports
    (tests); ``sleep``/``async_sleep`` replace ``time.sleep``/``asyncio.sleep`` for the backoff
    between retries (not for the short polls while waiting for a concurrency slot).

    One client may be shared by threads. The async httpx client is made on first use in a
    running event loop and remade if a later call runs in another loop; :meth:`aclose` (or
    ``async with``) closes it, :meth:`close` (or ``with``) closes the sync one. A client left
    behind by a finished event loop is dropped, not closed (its loop can no longer run it).

    Retries and timing: attempt ``k`` failing with a transport error or a retried status
    (:data:`RETRY_STATUSES`) sleeps, then tries again, at most ``config.retries`` times; each
    attempt takes its own concurrency slot, released before the sleep. One retry policy
    (:meth:`_retrying`, built on ``tenacity``) drives both the sync and the async attempts."""

    def __init__(
        self,
        config: ChatConfig,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        *,
        sleep: Callable[[float], object] | None = None,
        async_sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> None:
        import httpx
        import tenacity

        self.config = config
        self._httpx = httpx
        self._tenacity = tenacity
        self._transport = transport
        self._async_transport = async_transport
        # what they return is ignored
        self._sleep = cast(Callable[[float], None], sleep or time.sleep)
        self._async_sleep = cast(Callable[[float], Awaitable[None]], async_sleep or asyncio.sleep)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._slots = (
            _Slots(config.slot_dir(), config.max_concurrency) if config.max_concurrency else None
        )
        headers = {"content-type": "application/json", "accept": "application/json"}
        if config.api_key:
            headers["authorization"] = f"Bearer {config.api_key}"
        self.headers = headers

    # -- the request -----------------------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` sends."""
        config = self.config
        body: dict[str, Any] = {"model": config.model, "messages": [dict(m) for m in messages]}
        if seed is not None:
            body["seed"] = seed
        if tools:
            body["tools"] = [dict(t) for t in tools]
            if config.tool_choice is not None:
                body["tool_choice"] = config.tool_choice
            if config.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = config.parallel_tool_calls
        if config.temperature is not None:
            body["temperature"] = config.temperature
        if config.max_tokens is not None:
            body["max_tokens"] = config.max_tokens
        body.update(config.extra_body or {})
        return body

    def _encode(self, body: dict[str, Any]) -> bytes:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()

    def _judge(self, sent: _Sent, *, attempt: int, seed: int | None, turn: int) -> Completion:
        """What one request's outcome means: a completion, or (raised) a :class:`_Retry` that
        the retry policy retries or gives up on, or a ChatError that is never retried."""
        config = self.config
        outcome, latency = sent.outcome, sent.latency
        assert outcome is not None
        if isinstance(outcome, Exception):
            name = type(outcome).__name__
            detail = f"{name}: {outcome}" if str(outcome) else name
            if isinstance(outcome, self._httpx.TimeoutException):
                what = "timed out"
            elif isinstance(outcome, self._httpx.ConnectError):
                what = "unreachable"
            else:
                what = "request failed"
            error = _fail(config.endpoint, f"{what} after {attempt} attempt(s): {detail}",
                          attempts=attempt)
            error.__cause__ = outcome
            if not isinstance(outcome, self._httpx.TransportError):
                raise error
            raise _Retry(_backoff(config, seed, attempt), detail, error)
        status = outcome.status_code
        if status in RETRY_STATUSES:
            error = _fail(
                config.endpoint, f"answered {status} after {attempt} attempt(s)",
                outcome.text, status=status, attempts=attempt,
            )
            delay = parse_retry_after(outcome.headers, cap=config.retry_after_cap)
            raise _Retry(_backoff(config, seed, attempt) if delay is None else delay,
                         f"status {status}", error)
        if not 200 <= status < 300:
            raise _fail(
                config.endpoint, f"answered {status} (not retried)", outcome.text,
                status=status, attempts=attempt,
            )
        return _parse_completion(config, outcome, latency=latency, attempts=attempt, turn=turn)

    def _retrying(self) -> dict[str, Any]:
        """The retry policy, for ``tenacity.Retrying`` and ``AsyncRetrying`` alike: at most
        ``config.retries`` more attempts after the first, each after the delay the failed
        attempt asked for; then that attempt's ChatError."""
        tenacity = self._tenacity
        return {
            "stop": tenacity.stop_after_attempt(self.config.retries + 1),
            "retry": tenacity.retry_if_exception_type(_Retry),
            "wait": _wait_asked,
            "before_sleep": self._log_retry,
            "retry_error_callback": lambda state: None,  # the caller raises _spent(state)
        }

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None
        log.info(
            "%s: %s; retry %d/%d in %.2f s",
            self.config.endpoint, state.outcome.exception(), state.attempt_number,
            self.config.retries, _wait_asked(state),
        )

    # -- sync ------------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        """One chat completion, retried as configured; raises :class:`ChatError`."""
        with self._lock:
            if self._client is None:
                self._client = self._httpx.Client(
                    base_url=self.config.base_url, timeout=self.config.timeout,
                    transport=self._transport,
                )
            client = self._client
        content = self._encode(self.request_body(messages, tools, seed))
        for attempt in self._tenacity.Retrying(sleep=self._sleep, **self._retrying()):
            with attempt:
                slot = self._slots.acquire(self.config) if self._slots else None
                with _Sent(slot, self._httpx.RequestError) as sent:
                    sent.outcome = client.post(_PATH, content=content, headers=self.headers)
                return self._judge(sent, attempt=attempt.retry_state.attempt_number, seed=seed,
                                   turn=len(messages))
        error = _spent(attempt.retry_state)
        raise error from error.__cause__

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async -----------------------------------------------------------------------------

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient = self._httpx.AsyncClient(
                base_url=self.config.base_url, timeout=self.config.timeout,
                transport=self._async_transport,
            )
            self._aloop = loop
        return self._aclient

    async def acomplete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        """:meth:`complete` without blocking the event loop."""
        client = self._async_client()
        content = self._encode(self.request_body(messages, tools, seed))
        retrying = self._tenacity.AsyncRetrying(sleep=self._async_sleep, **self._retrying())
        async for attempt in retrying:
            with attempt:
                slot = await self._slots.aacquire(self.config) if self._slots else None
                with _Sent(slot, self._httpx.RequestError) as sent:
                    sent.outcome = await client.post(_PATH, content=content, headers=self.headers)
                return self._judge(sent, attempt=attempt.retry_state.attempt_number, seed=seed,
                                   turn=len(messages))
        error = _spent(attempt.retry_state)
        raise error from error.__cause__

    async def aclose(self) -> None:
        self.close()
        if self._aclient is not None:
            client, loop = self._aclient, self._aloop
            self._aclient = self._aloop = None
            if loop is asyncio.get_running_loop():
                await client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
