"""The chat-completions client against a real fake endpoint (uvicorn on 127.0.0.1): bodies,
normalised replies, retries and their timing, errors, configuration from the environment, and
the per-machine concurrency bound across threads, processes and coroutines."""

from __future__ import annotations

import asyncio
import fcntl
import json
import multiprocessing
import os
import pickle
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simforge.chat import (
    RETRY_STATUSES,
    ChatClient,
    ChatConfig,
    ChatError,
    Completion,
    parse_retry_after,
)
from simforge.policies.base import PolicyUnavailable
from tests.fakes.openai_server import Reply, completion, serve_fake, tool_call

USER = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def client_for(base_url: str, sleeps: list[float] | None = None, **config: Any) -> ChatClient:
    config.setdefault("model", "test-model")
    return ChatClient(
        ChatConfig(base_url=base_url, **config),
        sleep=(sleeps.append if sleeps is not None else _no_sleep),
    )


def _no_sleep(seconds: float) -> None:
    raise AssertionError(f"unexpected backoff sleep of {seconds} s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- completions and request bodies ----------------------------------------------------------


def test_plain_completion_and_what_was_sent() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    with serve_fake([Reply(body=completion("hi there", usage=usage, model="served-model"))]) as s:
        with client_for(s.base_url) as client:
            result = client.complete(USER)
        (request,) = s.requests
    assert isinstance(result, Completion)
    assert result.message == {"role": "assistant", "content": "hi there"}
    assert result.content == "hi there" and result.tool_calls == []
    assert result.finish_reason == "stop" and result.model == "served-model"
    assert result.usage == usage and result.attempts == 1 and result.latency_s > 0
    assert request.body == {"model": "test-model", "messages": USER}
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers


def test_tool_calls_are_normalised() -> None:
    calls = [
        tool_call("lookup", {"id": 1}, id="call_given"),
        {"function": {"name": "lookup", "arguments": {"id": 2}}, "extra_content": {"x": 1}},
        {"type": "function", "function": {"name": "ping"}},
    ]
    with serve_fake([Reply(body=completion(None, calls))]) as s, client_for(s.base_url) as client:
        result = client.complete(USER, tools=TOOLS)
    first, second, third = result.tool_calls
    assert result.finish_reason == "tool_calls" and result.message["content"] is None
    assert first == {"id": "call_given", "type": "function",
                     "function": {"name": "lookup", "arguments": '{"id": 1}'}}
    assert second["type"] == "function" and second["extra_content"] == {"x": 1}
    assert json.loads(second["function"]["arguments"]) == {"id": 2}
    assert third["function"]["arguments"] == "{}"
    ids = [c["id"] for c in result.tool_calls]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 3


def test_request_body_options_and_headers() -> None:
    replies = [Reply(body=completion("a")), Reply(body=completion("b"))]
    with serve_fake(replies) as s:
        client = client_for(
            s.base_url, api_key="sk-test", temperature=0.2, max_tokens=50,
            tool_choice="required", parallel_tool_calls=False,
            extra_body={"reasoning_effort": "low", "temperature": 0.7},
        )
        client.complete(USER, tools=TOOLS, seed=7)
        client.complete(USER, tools=[])
        client.close()
        with_tools, without = s.requests
    assert with_tools.body == {
        "model": "test-model", "messages": USER, "seed": 7, "tools": TOOLS,
        "tool_choice": "required", "parallel_tool_calls": False, "temperature": 0.7,
        "max_tokens": 50, "reasoning_effort": "low",
    }
    assert with_tools.headers["authorization"] == "Bearer sk-test"
    for absent in ("tools", "tool_choice", "parallel_tool_calls", "seed"):
        assert absent not in without.body
    assert without.body["reasoning_effort"] == "low"


# -- retries ---------------------------------------------------------------------------------


def test_429_retry_after_seconds_is_honoured_and_capped() -> None:
    replies = [
        Reply(429, body={"error": "slow down"}, headers={"retry-after": "2"}),
        Reply(429, body={"error": "slow down"}, headers={"retry-after": "3600"}),
        Reply(body=completion("ok")),
    ]
    sleeps: list[float] = []
    with serve_fake(replies) as s, client_for(s.base_url, sleeps, retry_after_cap=45) as client:
        result = client.complete(USER, seed=1)
    assert sleeps == [2.0, 45.0]
    assert result.attempts == 3 and len(s.requests) == 3 and result.content == "ok"


def test_retry_after_ms_wins_over_retry_after() -> None:
    replies = [Reply(503, headers={"retry-after-ms": "250", "retry-after": "9"}),
               Reply(body=completion("ok"))]
    sleeps: list[float] = []
    with serve_fake(replies) as s, client_for(s.base_url, sleeps) as client:
        client.complete(USER)
    assert sleeps == [0.25]


def test_5xx_then_success_backs_off_reproducibly_within_the_caps() -> None:
    def run(seed: int) -> list[float]:
        replies = [Reply(503), Reply(502), Reply(500, text="oops"), Reply(body=completion("ok"))]
        sleeps: list[float] = []
        with serve_fake(replies) as s:
            client = client_for(s.base_url, sleeps, backoff_base=1.0, backoff_cap=1.5)
            assert client.complete(USER, seed=seed).attempts == 4
            client.close()
        return sleeps

    first = run(seed=11)
    assert first == run(seed=11)
    assert len(first) == 3 and 0 <= first[0] <= 1.0 and all(0 <= d <= 1.5 for d in first[1:])


def test_retry_after_as_an_http_date() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    replies = [Reply(429, headers={"retry-after": later}),
               Reply(429, headers={"retry-after": earlier}), Reply(body=completion("ok"))]
    sleeps: list[float] = []
    with serve_fake(replies) as s, client_for(s.base_url, sleeps) as client:
        client.complete(USER)
    assert 20 <= sleeps[0] <= 30 and sleeps[1] == 0.0


def test_a_400_is_not_retried_and_the_error_names_status_and_body() -> None:
    body = {"error": {"message": "bad tool schema\n" + "x" * 1000}}
    with serve_fake([Reply(400, body=body)]) as s, client_for(s.base_url) as client:
        with pytest.raises(ChatError) as caught:
            client.complete(USER)
        assert len(s.requests) == 1
    text = str(caught.value)
    assert "\n" not in text and f"{s.base_url}/chat/completions" in text
    assert "400" in text and "bad tool schema" in text and len(text) < 400
    assert caught.value.status == 400 and caught.value.attempts == 1
    assert isinstance(caught.value, PolicyUnavailable)


def test_retried_statuses_give_up_after_the_retries() -> None:
    replies = [Reply(503, text="overloaded")] * 3
    sleeps: list[float] = []
    with (
        serve_fake(replies) as s,
        client_for(s.base_url, sleeps, retries=2) as client,
        pytest.raises(ChatError, match=r"answered 503 after 3 attempt\(s\): overloaded"),
    ):
        client.complete(USER)
    assert len(sleeps) == 2


def test_endpoint_down_fails_after_the_retries() -> None:
    sleeps: list[float] = []
    client = client_for(f"http://127.0.0.1:{free_port()}/v1", sleeps, retries=3)
    with pytest.raises(ChatError, match=r"unreachable after 4 attempt\(s\): ConnectError") as e:
        client.complete(USER)
    assert len(sleeps) == 3 and e.value.attempts == 4 and e.value.status is None


def test_timeouts_are_retried_then_reported() -> None:
    replies = [Reply(body=completion("late"), delay=0.6)] * 2
    sleeps: list[float] = []
    with (
        serve_fake(replies) as s,
        client_for(s.base_url, sleeps, retries=1, timeout=0.15) as client,
        pytest.raises(ChatError, match=r"timed out after 2 attempt\(s\): ReadTimeout"),
    ):
        client.complete(USER)
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(text="<html>gateway says oops</html>"), "non-JSON body: <html>gateway says oops"),
        (Reply(body={"object": "error"}), r"not a chat completion"),
        (Reply(body={"choices": []}), r"not a chat completion"),
        (Reply(body={"choices": [{"finish_reason": "stop"}]}), r"no choices\[0\]\.message"),
        (Reply(body=completion(None, [{"type": "function", "function": {"arguments": "{}"}}])),
         r"malformed tool call #0: function\.name missing"),
        (Reply(body=completion(None, [{"function": {"name": 3}}])), r"function\.name missing"),
        (Reply(body=completion(None, [{"id": "c"}])), r"no function object"),
    ],
    ids=["non-json", "no-choices", "empty-choices", "no-message", "no-name", "name-not-str",
         "no-function"],
)
def test_answers_that_are_not_completions(reply: Reply, message: str) -> None:
    with serve_fake([reply]) as s, client_for(s.base_url) as client:
        with pytest.raises(ChatError, match=message) as caught:
            client.complete(USER)
        assert len(s.requests) == 1
    assert "\n" not in str(caught.value)


def test_chat_error_survives_pickling() -> None:
    error = ChatError("http://x/v1/chat/completions: answered 400", endpoint="http://x",
                      status=400, attempts=1)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and (copy.endpoint, copy.status, copy.attempts) == (
        "http://x", 400, 1)


def test_importing_the_module_does_not_import_httpx() -> None:
    code = (
        "import sys, simforge; before = 'httpx' in sys.modules; import simforge.chat; "
        "assert before or 'httpx' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- Retry-After parsing ---------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    seconds=st.one_of(st.none(), st.text(max_size=40), st.floats().map(repr),
                      st.datetimes(timezones=st.just(UTC)).map(format_datetime)),
    millis=st.one_of(st.none(), st.text(max_size=20), st.floats().map(repr)),
    cap=st.floats(0, 120),
)
def test_retry_after_is_never_negative_nor_above_the_cap(
    seconds: str | None, millis: str | None, cap: float
) -> None:
    headers = {k: v for k, v in (("Retry-After", seconds), ("retry-after-ms", millis)) if v}
    delay = parse_retry_after(headers, cap=cap)
    assert delay is None or 0.0 <= delay <= cap


def test_retry_after_values() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=now) == 10.0
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "4"}) == 4.0


# -- configuration ---------------------------------------------------------------------------

ALL_VARS = [
    "BASE_URL", "MODEL", "API_KEY", "TIMEOUT", "RETRIES", "TEMPERATURE", "MAX_TOKENS",
    "TOOL_CHOICE", "PARALLEL_TOOL_CALLS", "EXTRA_BODY", "MAX_CONCURRENCY", "CONCURRENCY_DIR",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ALL_VARS:
        monkeypatch.delenv(f"SIMFORGE_LLM_{name}", raising=False)
        monkeypatch.delenv(f"OPENAI_{name}", raising=False)
    return monkeypatch


def test_from_env_reads_every_variable(clean_env: pytest.MonkeyPatch) -> None:
    values = {
        "BASE_URL": "http://llm.local:8000/v1/", "MODEL": "qwen", "API_KEY": "sk-1",
        "TIMEOUT": "30", "RETRIES": "2", "TEMPERATURE": "0.5", "MAX_TOKENS": "256",
        "TOOL_CHOICE": "required", "PARALLEL_TOOL_CALLS": "false",
        "EXTRA_BODY": '{"reasoning_effort": "high"}', "MAX_CONCURRENCY": "8",
        "CONCURRENCY_DIR": "/tmp/slots",
    }
    for name, value in values.items():
        clean_env.setenv(f"SIMFORGE_LLM_{name}", value)
    config = ChatConfig.from_env()
    assert config == ChatConfig(
        base_url="http://llm.local:8000/v1", model="qwen", api_key="sk-1", timeout=30.0,
        retries=2, temperature=0.5, max_tokens=256, tool_choice="required",
        parallel_tool_calls=False, extra_body={"reasoning_effort": "high"}, max_concurrency=8,
        concurrency_dir="/tmp/slots",
    )
    assert "sk-1" not in repr(config)
    clean_env.setenv("SIMFORGE_LLM_TOOL_CHOICE", '{"type": "function", "function": {"name": "f"}}')
    clean_env.setenv("SIMFORGE_LLM_PARALLEL_TOOL_CALLS", "1")
    config = ChatConfig.from_env()
    assert config.tool_choice == {"type": "function", "function": {"name": "f"}}
    assert config.parallel_tool_calls is True


def test_from_env_falls_back_and_overrides_win(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://fallback/v1")
    clean_env.setenv("OPENAI_MODEL", "gpt-fallback")
    clean_env.setenv("OPENAI_API_KEY", "sk-fallback")
    clean_env.setenv("OPENAI_TIMEOUT", "nonsense: only the first three fall back")
    clean_env.setenv("SIMFORGE_LLM_MODEL", "preferred")
    clean_env.setenv("SIMFORGE_LLM_RETRIES", "1")
    config = ChatConfig.from_env(retries=None, temperature=0.0, max_concurrency=3)
    assert (config.base_url, config.model, config.api_key) == (
        "http://fallback/v1", "preferred", "sk-fallback")
    assert (config.retries, config.temperature, config.max_concurrency) == (1, 0.0, 3)
    assert config.timeout == 120.0
    assert ChatConfig.from_env(model="explicit").model == "explicit"
    assert ChatConfig.from_env(fallback=None, model="m").base_url == "https://api.openai.com/v1"
    with pytest.raises(TypeError, match="modle"):
        ChatConfig.from_env(modle="typo")


def test_from_env_without_a_model(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"SIMFORGE_LLM_MODEL.*OPENAI_MODEL"):
        ChatConfig.from_env()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BASE_URL", "llm.local:8000"), ("TIMEOUT", "soon"), ("TIMEOUT", "0"),
        ("RETRIES", "-1"), ("RETRIES", "2.5"), ("TEMPERATURE", "hot"), ("TEMPERATURE", "-1"),
        ("MAX_TOKENS", "0"), ("TOOL_CHOICE", "sometimes"), ("TOOL_CHOICE", "{oops"),
        ("PARALLEL_TOOL_CALLS", "yes please"), ("EXTRA_BODY", "[1, 2]"),
        ("EXTRA_BODY", "not json"), ("MAX_CONCURRENCY", "0"), ("MAX_CONCURRENCY", "many"),
    ],
)
def test_from_env_bad_values_name_the_variable(
    clean_env: pytest.MonkeyPatch, name: str, value: str
) -> None:
    clean_env.setenv("SIMFORGE_LLM_MODEL", "m")
    clean_env.setenv(f"SIMFORGE_LLM_{name}", value)
    with pytest.raises(ValueError) as caught:
        ChatConfig.from_env()
    text = str(caught.value)
    assert f"SIMFORGE_LLM_{name}" in text and repr(value) in text and "expected" in text


@pytest.mark.parametrize(
    "bad", [{"timeout": 0}, {"retries": -1}, {"max_concurrency": 0}, {"base_url": "ftp://x"},
            {"model": ""}, {"extra_body": [1]}, {"parallel_tool_calls": "yes"}],
)
def test_config_rejects_bad_fields(bad: dict[str, Any]) -> None:
    field = next(iter(bad))
    with pytest.raises(ValueError, match=f"ChatConfig.{field}"):
        ChatConfig(**{"model": "m", **bad})


def test_default_slot_folder_is_shared_per_endpoint() -> None:
    a = ChatConfig(model="m", base_url="http://a/v1/").slot_dir()
    assert a == ChatConfig(model="other", base_url="http://a/v1").slot_dir()
    assert a != ChatConfig(model="m", base_url="http://b/v1").slot_dir()
    assert ChatConfig(model="m", concurrency_dir="/x").slot_dir() == Path("/x")


# -- the concurrency bound -------------------------------------------------------------------


def _fire_from_threads(client: ChatClient, n: int) -> list[Completion]:
    barrier = threading.Barrier(n)
    results: list[Completion] = []
    errors: list[BaseException] = []

    def one(i: int) -> None:
        barrier.wait()
        try:
            results.append(client.complete([{"role": "user", "content": f"#{i}"}]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    return results


def test_unbounded_threads_do_overlap_at_the_server() -> None:
    """The control for the tests below: without a bound the fake does see overlap."""
    with serve_fake(default=Reply(body=completion("ok"), delay=0.5)) as s:
        with client_for(s.base_url) as client:
            assert len(_fire_from_threads(client, 6)) == 6
        assert s.max_in_flight > 2


def test_max_concurrency_bounds_threads(tmp_path: Path) -> None:
    with serve_fake(default=Reply(body=completion("ok"), delay=0.15)) as s:
        with client_for(s.base_url, max_concurrency=2, concurrency_dir=tmp_path) as client:
            assert len(_fire_from_threads(client, 6)) == 6
        assert len(s.requests) == 6 and 1 <= s.max_in_flight <= 2


def _child(base_url: str, slots: str) -> None:
    with client_for(base_url, max_concurrency=2, concurrency_dir=slots) as client:
        _fire_from_threads(client, 3)


def test_max_concurrency_bounds_processes(tmp_path: Path) -> None:
    fork = multiprocessing.get_context("fork")
    with serve_fake(default=Reply(body=completion("ok"), delay=0.15)) as s:
        children = [fork.Process(target=_child, args=(s.base_url, str(tmp_path)))
                    for _ in range(2)]
        for child in children:
            child.start()
        for child in children:
            child.join(timeout=30)
        assert [child.exitcode for child in children] == [0, 0]
        assert len(s.requests) == 6 and 1 <= s.max_in_flight <= 2


def test_no_free_slot_within_the_timeout(tmp_path: Path) -> None:
    held = []
    for i in range(2):
        fd = os.open(tmp_path / f"slot-{i}.lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.append(fd)
    try:
        with serve_fake() as s:
            client = client_for(s.base_url, max_concurrency=2, concurrency_dir=tmp_path,
                                timeout=0.1)
            with pytest.raises(ChatError, match="no free concurrency slot of 2"):
                client.complete(USER)
            assert s.requests == []
    finally:
        for fd in held:
            os.close(fd)


# -- async -----------------------------------------------------------------------------------


def test_acomplete_retries_and_normalises() -> None:
    replies = [Reply(503, headers={"retry-after": "1"}),
               Reply(body=completion(None, [tool_call("lookup", {"id": 1})]))]
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async def main(base_url: str) -> Completion:
        config = ChatConfig(base_url=base_url, model="m")
        async with ChatClient(config, async_sleep=record) as client:
            return await client.acomplete(USER, tools=TOOLS, seed=3)

    with serve_fake(replies) as s:
        result = asyncio.run(main(s.base_url))
        assert s.requests[1].body["seed"] == 3 and s.requests[1].body["tools"] == TOOLS
    assert sleeps == [1.0] and result.attempts == 2
    assert result.tool_calls[0]["function"] == {"name": "lookup", "arguments": '{"id": 1}'}


def test_acomplete_errors_and_bound(tmp_path: Path) -> None:
    async def main(base_url: str) -> list[Completion]:
        config = ChatConfig(base_url=base_url, model="m", max_concurrency=2,
                            concurrency_dir=tmp_path)
        client = ChatClient(config)
        results = await asyncio.gather(*(client.acomplete(USER) for _ in range(6)))
        with pytest.raises(ChatError, match="answered 401"):
            await client.acomplete(USER)
        await client.aclose()
        return list(results)

    replies = [Reply(body=completion("ok"), delay=0.15)] * 6 + [Reply(401, text="bad key")]
    with serve_fake(replies) as s:
        assert len(asyncio.run(main(s.base_url))) == 6
        assert s.max_in_flight <= 2 and len(s.requests) == 7


@settings(max_examples=15, deadline=None)
@given(
    statuses=st.lists(st.sampled_from(sorted(RETRY_STATUSES)), max_size=4),
    retries=st.integers(0, 3),
)
def test_sync_and_async_retry_alike_then_give_up_with_the_last_status(
    statuses: list[int], retries: int
) -> None:
    """Each retried status costs an attempt and a sleep of what the server asked for; more of
    them than ``retries`` is a ChatError naming the last status and the attempts made."""

    def script() -> list[Reply]:
        return [Reply(s, headers={"retry-after": str(i)}) for i, s in enumerate(statuses)] + [
            Reply(body=completion("ok"))]

    def sync() -> tuple[Any, list[float]]:
        sleeps: list[float] = []
        with serve_fake(script()) as s, client_for(s.base_url, sleeps, retries=retries) as c:
            try:
                return c.complete(USER).attempts, sleeps
            except ChatError as exc:
                return (exc.status, exc.attempts, str(exc).split(": ", 1)[1]), sleeps

    def async_() -> tuple[Any, list[float]]:
        sleeps: list[float] = []

        async def record(seconds: float) -> None:
            sleeps.append(seconds)

        async def main(base_url: str) -> Any:
            config = ChatConfig(base_url=base_url, model="m", retries=retries)
            async with ChatClient(config, async_sleep=record) as client:
                try:
                    return (await client.acomplete(USER)).attempts
                except ChatError as exc:
                    return exc.status, exc.attempts, str(exc).split(": ", 1)[1]

        with serve_fake(script()) as s:
            return asyncio.run(main(s.base_url)), sleeps

    outcome, sleeps = sync()
    assert (outcome, sleeps) == async_()
    if len(statuses) <= retries:
        assert outcome == len(statuses) + 1
        assert sleeps == [float(i) for i in range(len(statuses))]
    else:
        last = statuses[retries]
        assert outcome[:2] == (last, retries + 1)
        assert outcome[2].startswith(f"answered {last} after {retries + 1} attempt(s)")
        assert sleeps == [float(i) for i in range(retries)]
