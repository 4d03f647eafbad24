"""OpenEnv (openenv-core 0.3): the WebSocket ``/ws``, HTTP ``/reset``, ``/step`` and ``/state``
(its simulation mode), and ``/health``, ``/schema``, ``/metadata``.

Written from openenv-core's own types and server (``openenv/core/env_server/types.py``,
``mcp_types.py``, ``http_server.py``) and held to its clients and its ``openenv validate``
criteria by the tests, rather than mounting its server, which would bring its own session
registry and a thread pool per session.

**WebSocket.** The client sends ``{"type": "reset" | "step" | "state" | "close" | "mcp",
"data"?}`` and gets ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
``{"type": "state", "data"}``, ``{"type": "mcp", "data": <JSON-RPC response>}`` or
``{"type": "error", "data": {"message", "code"}}`` with OpenEnv's ``WSErrorCode``:
``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR`` (a message, a reset or an action that
is not valid: every 422 of simforge's), ``EXECUTION_ERROR`` (a valid step the episode cannot
take, such as one after the end), ``CAPACITY_REACHED``, ``FACTORY_ERROR`` and ``SESSION_ERROR``
(the session was deleted under the connection). Each connection is one simforge session,
deleted when it closes. ``reset`` takes ``seed``, ``episode_id`` (kept as the episode's id;
without one, every reset gets a fresh one), ``task`` and ``faults``. A reset's tools and policy
come with their digests (``tools_id``, ``policy_id``); a later reset on the same connection
whose tools or policy the connection already received carries the id alone.

**Actions.** A step's ``data`` is a simforge action (tool calls, a message to the user, a final
answer: the conversation contract holds, the user's reply is ``observation.user``) or one of
OpenEnv's tool actions: ``{"type": "list_tools"}`` answers the tools as MCP lists them (no step
is taken), ``{"type": "call_tool", "tool_name", "arguments"}`` is one call as a step, answered as
OpenEnv's ``CallToolObservation`` (``tool_name``, ``result`` in FastMCP's ``CallToolResult``
shape, ``error`` for a call that could not be made) with the step's reward and done; calling
the message tool (``message_user``) says ``content`` to the user. A tool's own error (a 404 of
the simulated service, a fault) is an error *result*, as OpenEnv puts it, not an ``error``.

**HTTP.** ``POST /reset``, ``POST /step`` and ``GET /state`` are OpenEnv's simulation-mode
endpoints, stateful here: ``/reset`` starts an episode (``episode_id`` as asked, or a fresh one)
and ``/step`` and ``/state`` name it with ``episode_id``; without one they act on the episode
the last ``/reset`` without one started (OpenEnv's single-environment HTTP behaviour). A reset
that names a live episode resets its session in place, so a client reusing its id holds one
session. The WebSocket, these endpoints and ``POST /mcp``'s session methods answer rewards or
create sessions, so they need the server's token, like the control plane: ``Authorization:
Bearer``, or the password of the URL (``ws://trainer:<token>@host:port``), which OpenEnv's own
client turns into HTTP Basic by way of ``websockets``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import weakref
from typing import Any

import orjson
from fastapi import APIRouter, Depends, Query, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from simforge import jsonio
from simforge.env.action import Action, fast_calls
from simforge.sim.session import CallRequest
from simforge.tools.pack import ToolCatalog

from .control_plane import (
    MAX_SEED,
    _json,
    env_step,
    env_step_calls_now,
    session_info,
    token_dependency,
    token_matches,
)
from .jsonrpc import JsonRpc, Rpc, RpcError, _frame, _request_id
from .mcp_server import call_result, session_catalog, unknown_tool
from .problems import INT_MAX, INT_MIN, JsonRoute, Problem, parse_json, tool_problem
from .server import DIRECT_WS
from .sessions import ServedSession, SessionManager, episode_ended

log = logging.getLogger(__name__)

INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"
"""OpenEnv's ``WSErrorCode`` values."""

MESSAGE_KEYS: dict[str, tuple[frozenset[str], bool]] = {
    "reset": (frozenset({"type", "data"}), False),
    "step": (frozenset({"type", "data"}), True),
    "state": (frozenset({"type"}), False),
    "close": (frozenset({"type"}), False),
    "mcp": (frozenset({"type", "data"}), True),
}
"""Per message type: the keys OpenEnv's message model allows, and whether ``data`` is required
(its models forbid extra keys)."""
RESET_KEYS = ("seed", "episode_id", "task", "faults")
LIST_TOOLS_KEYS = frozenset({"type", "metadata"})
CALL_TOOL_KEYS = frozenset({"type", "tool_name", "arguments", "metadata"})

OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "SimforgeObservation",
    "type": "object",
    "description": "What the agent sees after reset or a step (OpenEnv's Observation: done, "
    "reward and metadata travel beside it).",
    "properties": {
        "done": {"type": "boolean", "default": False},
        "reward": {"type": ["number", "boolean", "null"], "default": None},
        "metadata": {"type": "object", "default": {}},
        "task": {"type": "object", "description": "Id and instruction (after reset)."},
        "tools": {
            "type": "array",
            "description": "After reset: the task's tools in OpenAI function format. After a "
            "list_tools action: the tools as MCP lists them (name, description, input_schema).",
        },
        "tools_id": {
            "type": "string",
            "description": "After reset: the digest of the task's tools. Over /ws, a reset "
            "whose tools the connection has already received carries only this id: the tools "
            "are those of the earlier reset with the same tools_id (absent, with tools in "
            "full, when the episode's surface faults change its tools).",
        },
        "policy": {"type": "string", "description": "The policy the agent follows (markdown)."},
        "policy_id": {
            "type": "string",
            "description": "After reset: the policy's digest; over /ws the policy is left out "
            "when the connection has received it with this id.",
        },
        "session_id": {"type": "string"},
        "episode_id": {"type": "string"},
        "results": {"type": "array", "description": "One result or error per tool call."},
        "tool_name": {"type": "string", "description": "The tool a call_tool action called."},
        "result": {"description": "A call_tool action's result (FastMCP's CallToolResult)."},
        "error": {
            "type": ["object", "null"],
            "description": "Why a call_tool action could not call (error_type, message).",
        },
        "time": {"type": "number", "description": "Simulated seconds since reset."},
        "step": {"type": "integer"},
        "user": {"type": ["string", "null"], "description": "The user's reply to a message."},
        "terminated": {"type": "boolean"},
        "truncated": {"type": "boolean"},
        "info": {"type": "object", "description": "At the end: passed, and the failed checks."},
    },
    "additionalProperties": True,
}

STATE_SCHEMA: dict[str, Any] = {
    "title": "SimforgeState",
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0, "default": 0},
        "session_id": {"type": "string"},
        "scenario": {"type": "string"},
        "task": {"type": "string"},
        "seed": {"type": "integer"},
        "faults": {"type": ["string", "null"]},
        "time": {"type": "number"},
        "terminated": {"type": "boolean"},
        "truncated": {"type": "boolean"},
    },
    "additionalProperties": True,
}

LIST_TOOLS_ACTION: dict[str, Any] = {
    "title": "ListToolsAction",
    "type": "object",
    "properties": {
        "type": {"const": "list_tools"},
        "metadata": {"type": "object", "default": {}},
    },
    "required": ["type"],
    "additionalProperties": False,
}

CALL_TOOL_ACTION: dict[str, Any] = {
    "title": "CallToolAction",
    "type": "object",
    "properties": {
        "type": {"const": "call_tool"},
        "tool_name": {"type": "string", "description": "A name tools/list answered."},
        "arguments": {"type": "object", "default": {}},
        "metadata": {"type": "object", "default": {}},
    },
    "required": ["type", "tool_name"],
    "additionalProperties": False,
}


def action_schema() -> dict[str, Any]:
    """A step's action: simforge's own, or OpenEnv's ``ListToolsAction`` / ``CallToolAction``."""
    own = Action.model_json_schema()
    defs = own.pop("$defs", {})
    return {
        "title": "SimforgeAction",
        "anyOf": [own, LIST_TOOLS_ACTION, CALL_TOOL_ACTION],
        "$defs": defs,
    }


def ws_code(problem: Problem) -> str:
    """OpenEnv's code for a problem: a request that is not valid, a full server, or a valid
    request the episode cannot carry out."""
    if problem.status in (400, 422):
        return VALIDATION_ERROR
    if problem.status == 503:
        return CAPACITY_REACHED
    return EXECUTION_ERROR


def _error(message: str, code: str, **extra: Any) -> bytes:
    return orjson.dumps({"type": "error", "data": {"message": message, "code": code, **extra}},
                        default=repr)


def _problem_error(problem: Problem) -> bytes:
    extra: dict[str, Any] = {"status": problem.status}
    if problem.errors:
        extra["errors"] = problem.errors
    return _error(problem.detail, ws_code(problem), **extra)


def _invalid(message: str, field: str) -> Problem:
    return Problem(422, "invalid_message", message, errors=[{"field": field, "problem": message}])


_CATALOG_JSON: dict[int, tuple[weakref.ref[ToolCatalog], orjson.Fragment, str]] = {}
"""A task's tools in OpenAI function format, serialised once per catalog (by its id while it
lives; a scenario keeps one catalog per set of offered tools), with a digest of those bytes:
the largest part of a reset's observation (29 KB of 38 for ``acme/refund-damaged-order-v1``),
the same for every episode of the task."""

_POLICY_IDS: dict[str, str] = {}
"""A digest per policy text (a scenario has one; 8.5 KB for acme's)."""


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def catalog_json(catalog: ToolCatalog) -> tuple[orjson.Fragment, str]:
    """``catalog.to_openai()`` as JSON and its digest, serialised on the first call for this
    catalog."""
    key = id(catalog)
    cached = _CATALOG_JSON.get(key)
    if cached is not None and cached[0]() is catalog:
        return cached[1], cached[2]
    data = jsonio.dumps(catalog.to_openai())
    fragment, digest = orjson.Fragment(data), _digest(data)
    _CATALOG_JSON[key] = (weakref.ref(catalog, lambda _: _CATALOG_JSON.pop(key, None)),
                          fragment, digest)
    return fragment, digest


def policy_id(policy: str) -> str:
    digest = _POLICY_IDS.get(policy)
    if digest is None:
        if len(_POLICY_IDS) > 256:  # policies are few; never let the table grow unbounded
            _POLICY_IDS.clear()
        digest = _POLICY_IDS[policy] = _digest(policy.encode())
    return digest


def reset_observation(
    served: ServedSession, obs: dict[str, Any], sent: set[str] | None = None
) -> dict[str, Any]:
    """A reset's observation as OpenEnv answers it: with the session and episode ids, and its
    ``tools`` as the catalog's cached JSON when they are the task's own catalog (no surface
    faults rename, hide or add tools in this episode, no strict mode), which orjson writes as
    it is, with the digest of those bytes as ``tools_id``; ``policy`` likewise has its
    ``policy_id``.

    ``sent``: the digests this connection has already received (a WebSocket's). A reset whose
    tools or policy were sent before on the connection carries only the id, not the value
    again: the agent keeps what a reset with that id carried. An episode whose surface faults
    change its tools always carries them in full, without an id."""
    observation = {**obs, "session_id": served.id, "episode_id": served.episode_id}
    env = served.env
    if served.session.surface is None and not env.strict_tools:
        # in place of the tools (or of the None that initial_observation(catalog_tools=False)
        # left for them)
        observation["tools"], observation["tools_id"] = catalog_json(env.tools)
        if sent is not None:
            _by_reference(observation, "tools", sent)
    policy = observation.get("policy")
    if type(policy) is str:
        observation["policy_id"] = policy_id(policy)
        if sent is not None:
            _by_reference(observation, "policy", sent)
    return observation


def _by_reference(observation: dict[str, Any], key: str, sent: set[str]) -> None:
    """Leave ``observation[key]`` out when its id was sent on this connection already."""
    ref = observation[f"{key}_id"]
    if ref in sent:
        del observation[key]
    else:
        sent.add(ref)


def state(served: ServedSession) -> dict[str, Any]:
    """OpenEnv's ``State``: ``episode_id`` and ``step_count``, with the session's details."""
    info = session_info(served)
    return {"step_count": info["steps"], **info}


def _trainer_view(
    obs: dict[str, Any], reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
) -> tuple[dict[str, Any], float, bool]:
    """The trainer's view of a step: observation, reward, done, built in ``obs`` and ``info``
    themselves (the caller's own copies). Verdict evidence (which may quote expected values)
    stays on the control plane; only the names of failed checks pass."""
    score = info.pop("score", None)
    if score is not None:
        info["passed"] = score.get("passed")
        info["failed"] = score.get("failed")
    obs["terminated"] = terminated
    obs["truncated"] = truncated
    obs["info"] = info
    return obs, float(reward), bool(terminated or truncated)


def _step_observation(answer: dict[str, Any]) -> tuple[dict[str, Any], float, bool]:
    """:func:`_trainer_view` of a step's answer as the control plane gives it, on copies."""
    return _trainer_view(dict(answer["observation"]), answer["reward"], answer["terminated"],
                         answer["truncated"], dict(answer["info"]))


def _tool_result(payload: Any, is_error: bool) -> dict[str, Any]:
    """A call's result in FastMCP's ``CallToolResult`` shape (what openenv's MCP environments
    put in a ``CallToolObservation``; ``MCPToolClient.call_tool`` answers its ``data``)."""
    wire = call_result(payload, is_error)
    return {
        "content": wire["content"],
        "structured_content": wire.get("structuredContent"),
        "meta": None,
        "data": payload,
        "is_error": is_error,
    }


async def openenv_step(
    served: ServedSession, data: dict[str, Any]
) -> tuple[dict[str, Any], float | None, bool]:
    """One OpenEnv step: ``(observation, reward, done)``; a :class:`Problem` when the action is
    not valid (422) or cannot be taken (409: the episode has ended)."""
    kind = data.get("type")
    if kind == "list_tools":
        _only(data, LIST_TOOLS_KEYS, "list_tools")
        catalog = session_catalog(served.session)
        return {"tools": catalog.openenv_tools()}, None, served.session.done
    if kind == "call_tool":
        return await _call_tool(served, data)
    if kind is not None:
        raise Problem(
            422,
            "invalid_action",
            f"action.type: unknown action type {kind!r}: OpenEnv's tool actions are list_tools "
            "and call_tool; simforge's own actions have no type",
            errors=[{"field": "body.type", "expected": "list_tools, call_tool or none"}],
        )
    return _step_observation(await env_step(served, _plain_action(data)))


def _plain_action(data: dict[str, Any]) -> dict[str, Any]:
    """simforge's own action (no ``type``) as the env takes it."""
    action = dict(data)
    metadata = action.pop("metadata", None)
    if metadata:  # OpenEnv's Action always carries metadata; an empty one says nothing
        action["metadata"] = metadata
    return action


def _only(data: dict[str, Any], allowed: frozenset[str], what: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise Problem(
            422,
            "invalid_action",
            f"{what}: unexpected keys {extra}; allowed: {sorted(allowed)}",
            errors=[{"field": f"body.{k}", "problem": "extra_forbidden"} for k in extra],
        )


async def _call_tool(
    served: ServedSession, data: dict[str, Any]
) -> tuple[dict[str, Any], float | None, bool]:
    _only(data, CALL_TOOL_KEYS, "call_tool")
    name = data.get("tool_name")
    arguments = data.get("arguments", {})
    if type(name) is not str:
        raise Problem(422, "invalid_action", "call_tool: tool_name: expected a string",
                      errors=[{"field": "body.tool_name", "expected": "string"}])
    if type(arguments) is not dict:
        raise Problem(422, "invalid_action", "call_tool: arguments: expected an object",
                      errors=[{"field": "body.arguments", "expected": "object"}])
    catalog = session_catalog(served.session)
    tool = catalog.to_pack.get(name)
    if tool is None and name != catalog.message:
        error = {"error_type": "tool_not_found", "message": unknown_tool(name, catalog).detail}
        return {"tool_name": name, "result": None, "error": error}, None, served.session.done
    if tool is None:
        content = arguments.get("content")
        if type(content) is not str:
            error = {"error_type": "invalid_args", "message": "content: expected a string"}
            return {"tool_name": name, "result": None, "error": error}, None, served.session.done
        answer = await env_step(served, {"message": content})
        payload: Any = {
            "user": answer["observation"].get("user"),
            "ended": bool(answer["terminated"] or answer["truncated"]),
        }
        is_error = False
    else:
        answer = await env_step(served, {"tool_calls": [{"name": tool, "arguments": arguments}]})
        results = answer["observation"]["results"]
        if not results:  # the budget ended the episode before the call could start
            payload, is_error = episode_ended(served).body(), True
        elif results[0]["ok"]:
            payload, is_error = results[0]["result"], False
        else:
            payload, is_error = tool_problem(results[0]["error"]).body(), True
    obs, reward, done = _step_observation(answer)
    obs.pop("results", None)
    return {"tool_name": name, "result": _tool_result(payload, is_error), "error": None,
            **obs}, reward, done


# -- the HTTP simulation endpoints -----------------------------------------------------------


class ResetRequest(BaseModel):
    """OpenEnv's ``ResetRequest`` (``seed``, ``episode_id``) with simforge's ``task`` and
    ``faults``; an unknown key is a 422 naming it, not silently dropped."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    episode_id: str | None = Field(None, min_length=1, max_length=255)
    task: str | None = Field(None, max_length=256)
    faults: str | None = Field(None, max_length=256)


class StepRequest(BaseModel):
    """OpenEnv's ``StepRequest``, with ``episode_id`` naming the episode to step."""

    model_config = ConfigDict(extra="forbid")

    action: dict[str, Any] = Field(
        description="A simforge action, or OpenEnv's list_tools / call_tool (see /schema)."
    )
    timeout_s: float | None = Field(
        None, gt=0, description="Accepted; a step answers in its own (simulated) time."
    )
    request_id: str | None = Field(
        None, max_length=255, description="Repeat a step safely: the same id, the same answer."
    )
    episode_id: str | None = Field(
        None, max_length=255, description="The episode (default: the last one /reset started)."
    )


class _HttpEpisodes:
    """The episodes of the HTTP endpoints: episode id -> session id, and the current one."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self.sessions: dict[str, str] = {}
        self.current: str | None = None

    def find(self, episode_id: str | None) -> ServedSession | None:
        sid = self.current if episode_id is None else self.sessions.get(episode_id)
        served = self.manager.sessions.get(sid) if sid is not None else None
        if served is None or (episode_id is not None and served.episode_id != episode_id):
            return None
        return served

    def get(self, episode_id: str | None) -> ServedSession:
        served = self.find(episode_id)
        if served is not None:
            served.touch()  # a request that names the episode is activity
            return served
        detail = (
            f"no episode {episode_id!r}; POST /reset starts one"
            if episode_id is not None
            else "no episode yet: POST /reset starts one"
        )
        raise Problem(404, "unknown_episode", detail,
                      errors=[{"field": "body.episode_id", "problem": "unknown episode"}])

    def remember(self, served: ServedSession, previous: str | None, current: bool) -> None:
        """``served`` now holds its new episode (``previous`` was its last one); ``current``:
        it is the episode of requests that name none."""
        if previous is not None and self.sessions.get(previous) == served.id:
            del self.sessions[previous]
        self.sessions[served.episode_id] = served.id
        if current:
            self.current = served.id
        if len(self.sessions) > 2 * self.manager.limits.max_sessions:
            live = self.manager.sessions
            self.sessions = {e: s for e, s in self.sessions.items() if s in live}


def openenv_router(manager: SessionManager, token: str, rpc: JsonRpc) -> APIRouter:
    router = APIRouter(tags=["openenv"], route_class=JsonRoute)
    scenario = manager.loaded.scenario
    episodes = _HttpEpisodes(manager)
    require_token = token_dependency(token, "OpenEnv's simulation endpoints")
    problem = {"model": None, "description": "A problem (application/problem+json)."}
    errors: dict[int | str, dict[str, Any]] = {401: problem, 404: problem, 409: problem,
                                               422: problem}

    @router.get("/health")
    async def health() -> dict[str, str]:
        """OpenEnv health check."""
        return {"status": "healthy"}

    @router.get("/metadata")
    async def metadata() -> dict[str, Any]:
        """OpenEnv environment metadata."""
        return {
            "name": scenario.id,
            # the agent-facing text only: the scenario's description is the grader's notes
            "description": scenario.agent_description or f"simforge scenario {scenario.id}",
            "version": scenario.id.rsplit("-v", 1)[-1],
            "author": "simforge",
            "documentation_url": None,
            "readme_content": None,
        }

    @router.get("/schema")
    async def schema() -> dict[str, Any]:
        """OpenEnv schemas of action, observation and state."""
        return {"action": action_schema(), "observation": OBSERVATION_SCHEMA,
                "state": STATE_SCHEMA}

    @router.post("/reset", dependencies=[Depends(require_token)], responses=errors)
    async def http_reset(body: ResetRequest | None = None) -> Response:
        """Start an episode (OpenEnv's simulation mode): ``episode_id`` as asked, or a fresh
        one. Answers ``{observation, reward: null, done: false}``."""
        body = body or ResetRequest()
        served = episodes.find(body.episode_id)
        if served is None:
            served = manager.create(
                seed=body.seed, task=body.task, faults=body.faults, episode_id=body.episode_id,
                reclaimable=True,
            )
            previous = None
            obs = served.initial_observation(catalog_tools=False)
        else:
            previous = served.episode_id
            async with served.lock:
                served, obs, _ = manager.reset(
                    served.id, seed=body.seed, task=body.task, faults=body.faults,
                    episode_id=body.episode_id, catalog_tools=False,
                )
        episodes.remember(served, previous, body.episode_id is None)
        observation = reset_observation(served, obs)
        return _json({"observation": observation, "reward": None, "done": False})

    @router.post("/step", dependencies=[Depends(require_token)], responses=errors)
    async def http_step(body: StepRequest) -> Response:
        """Step an episode: ``{observation, reward, done}``. A repeated ``request_id`` answers
        the first answer again, without stepping."""
        served = episodes.get(body.episode_id)
        if body.request_id is not None and body.request_id in served.answers:
            return _json(served.answers[body.request_id])
        obs, reward, done = await openenv_step(served, body.action)
        answer = {"observation": obs, "reward": reward, "done": done}
        if body.request_id is not None:
            served.remember(body.request_id, answer, manager.limits.idempotency_window)
        return _json(answer)

    @router.get("/state", dependencies=[Depends(require_token)], responses=errors)
    async def http_state(
        episode_id: str | None = Query(None, max_length=255),
    ) -> Response:
        """The episode's state: ``episode_id``, ``step_count`` and the session's details."""
        return _json(state(episodes.get(episode_id)))

    @router.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        if not token_matches(websocket.headers.get("authorization"), token):
            await websocket.close(code=1008, reason="the server's token is required")
            return
        await websocket.accept()
        try:
            served = manager.create()
        except Problem as exc:
            await websocket.send_text(_problem_error(exc).decode())
            await websocket.close()
            return
        except Exception as exc:
            log.exception("OpenEnv: the session could not be created")
            await websocket.send_text(_error(f"the session could not be created: {exc}",
                                             FACTORY_ERROR).decode())
            await websocket.close()
            return
        served.connections += 1
        sent: set[str] = set()  # the tools and policy ids this connection has received
        direct = websocket.scope.get("extensions", {}).get(DIRECT_WS)
        if direct is not None:
            direct.direct = functools.partial(_message_now, manager, served, sent)
        try:
            await _serve(websocket, manager, rpc, served, sent)
        except WebSocketDisconnect:
            pass
        finally:
            if direct is not None:
                direct.direct = None
            served.connections -= 1
            if manager.sessions.get(served.id) is served:
                manager.discard(served.id)

    return router


async def _serve(
    websocket: WebSocket, manager: SessionManager, rpc: JsonRpc, served: ServedSession,
    sent: set[str],
) -> None:
    """The messages the server's direct path (:func:`_message_now`) left to a coroutine, or
    all of them under a server without one."""
    while True:
        frame = await websocket.receive()
        if frame["type"] == "websocket.disconnect":
            return
        raw = frame.get("text")
        if raw is None:
            raw = frame.get("bytes") or b""
        reply = await _message(manager, rpc, served, raw, sent)
        if reply is None:
            await websocket.close()
            return
        await websocket.send_text(reply.decode())
        if manager.sessions.get(served.id) is not served:
            await websocket.close()
            return


def _triage(
    manager: SessionManager, served: ServedSession, raw: str | bytes
) -> tuple[str, dict[str, Any]] | bytes:
    """A message's ``(type, data)``, or the error reply to it."""
    try:
        message = parse_json(raw, field="message")
    except Problem as problem:
        if problem.status == 400:
            return _error(f"Invalid JSON: {problem.detail}", INVALID_JSON)
        return _problem_error(problem)
    if type(message) is not dict:
        return _problem_error(_invalid("a message is an object: {\"type\", \"data\"?}", "body"))
    kind = message.get("type", "")
    if kind not in MESSAGE_KEYS:
        return _error(f"Unknown message type: {kind}", UNKNOWN_TYPE)
    allowed, needs_data = MESSAGE_KEYS[kind]
    extra = sorted(set(message) - allowed)
    if extra:
        return _problem_error(_invalid(
            f"{kind}: unexpected keys {extra}; allowed: {sorted(allowed)}", f"body.{extra[0]}"))
    data = message.get("data", {})
    if needs_data and "data" not in message:
        return _problem_error(_invalid(f"{kind}: data is required", "body.data"))
    if type(data) is not dict:
        return _problem_error(_invalid(f"{kind}: data: expected an object", "body.data"))
    if manager.sessions.get(served.id) is not served:
        return _error(f"session {served.id!r} no longer exists (deleted on the control "
                      "plane)", SESSION_ERROR)
    return kind, data


async def _message(
    manager: SessionManager, rpc: JsonRpc, served: ServedSession, raw: str | bytes,
    sent: set[str] | None = None,
) -> bytes | None:
    """The reply to one WebSocket message; ``None`` to close."""
    triaged = _triage(manager, served, raw)
    if isinstance(triaged, bytes):
        return triaged
    kind, data = triaged
    try:
        if kind == "close":
            return None
        if kind == "reset":
            async with served.lock:
                return _reset(manager, served, data, sent)
        if kind == "step":
            obs, reward, done = await openenv_step(served, data)
            return _observation(obs, reward, done)
        if kind == "state":
            return _state(served)
        try:
            answer = await rpc.answer(data, Rpc(ws=True, served=served))
        except RpcError as error:
            answer = _frame(_request_id(data), error)
        return b'{"type":"mcp","data":' + answer + b"}"
    except Exception as exc:
        return _failed(kind, exc)


def _message_now(
    manager: SessionManager, served: ServedSession, sent: set[str], raw: str
) -> bytes | None:
    """The reply to one WebSocket message, answered where the server's protocol parsed it
    (:class:`~.server.DirectWebSocket`), with no task, queue or ASGI message around it; ``None``
    when the message must go to :func:`_message`'s coroutine instead: anything that might
    wait (real time, a busy session, a step that asks the simulated user, MCP), a close, a
    session deleted on the control plane. What it answers is what :func:`_message` answers
    to the same message."""
    if (served.time_scale > 0 or served.lock.locked()
            or manager.sessions.get(served.id) is not served):
        return None
    calls = fast_step(raw)
    if calls is not None:
        try:
            return _step_reply(*env_step_calls_now(served, calls))
        except Exception as exc:
            return _failed("step", exc)
    reply = _triage(manager, served, raw)
    return reply if isinstance(reply, bytes) else _answer_now(manager, served, sent, *reply)


STEP_KEYS = frozenset({"type", "data"})
_LONG_DIGITS = re.compile(r"\d{19}", re.ASCII)
""":data:`~.problems._LONG_NUMBER` for a ``str``: a message with 19 digits in a row may hold
an integer beyond 64 bits, which only :func:`~.problems.parse_json` answers."""


def fast_step(raw: str) -> list[CallRequest] | None:
    """The common message of a trainer, ``{"type": "step", "data": {"tool_calls": [{"name",
    "arguments"?, "id"?}, ...]}}`` (an empty ``metadata`` beside the calls allowed), read with
    orjson alone and checked by hand, its calls as the kernel's requests. ``None`` for
    anything else, including what :func:`~.problems.parse_json` might refuse (more brackets
    than :data:`~simforge.jsonio.MAX_DEPTH`, an integer beyond 64 bits, JSON orjson refuses):
    that goes through :func:`_triage` and the action's parser, which answer it as before. What
    this accepts, the full path accepts as the same calls (``tests/serve/test_ws_fast.py``).

    A wide integer can only be in the calls' arguments (the rest of an accepted message is
    strings and an empty ``metadata``), where orjson reads it as a float or as an int beyond
    64 bits: the arguments are walked for either (:func:`_plain_numbers`), and only when one
    is there is the message searched for a run of 19 digits, as ``parse_json`` searches every
    message (a scan of the whole text that cost more than reading it)."""
    if raw.count("{") + raw.count("[") > jsonio.MAX_DEPTH:
        return None
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(message) is not dict or message.keys() != STEP_KEYS or message["type"] != "step":
        return None
    data = message["data"]
    if type(data) is dict and len(data) == 2 and "metadata" in data and not data["metadata"]:
        data = {"tool_calls": data.get("tool_calls")}  # _plain_action drops an empty one
    calls = fast_calls(data)
    if calls is not None:
        for call in calls:
            if not _plain_numbers(call.args):
                return None if _LONG_DIGITS.search(raw) else calls
    return calls


def _plain_numbers(value: Any) -> bool:
    """Whether a parsed value holds no float and no integer beyond 64 bits (signed): what an
    integer that :func:`~.problems.parse_json` refuses becomes in orjson's reading. Arguments
    are mostly flat objects of strings: their values are looked at in one loop, and only what
    nests is walked."""
    if type(value) is dict:
        for item in value.values():
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is int:
                if not INT_MIN <= item <= INT_MAX:
                    return False
            elif kind is float or not _plain_nested(item):
                return False
        return True
    return _plain_nested(value)


def _plain_nested(value: Any) -> bool:
    """:func:`_plain_numbers` of any value, walked."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            push(item.values())
        elif kind is list:
            push(item)
        elif kind is float or (kind is int and not INT_MIN <= item <= INT_MAX):
            return False
    return True


def _step_reply(
    obs: dict[str, Any], reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
) -> bytes:
    """The reply to a step answered now, built in the step's own (fresh) observation and info
    rather than in copies: the bytes :func:`_observation` of :func:`_step_observation` gives."""
    return _observation(*_trainer_view(obs, reward, terminated, truncated, info))


def _answer_now(
    manager: SessionManager, served: ServedSession, sent: set[str], kind: str,
    data: dict[str, Any],
) -> bytes | None:
    try:
        if kind == "reset":
            return _reset(manager, served, data, sent)
        if kind == "state":
            return _state(served)
        if kind == "step" and "type" not in data:
            calls = fast_calls(_plain_action(data))
            if calls is not None:
                return _step_reply(*env_step_calls_now(served, calls))
    except Exception as exc:
        return _failed(kind, exc)
    return None


def _failed(kind: str, exc: Exception) -> bytes:
    if isinstance(exc, Problem):
        return _problem_error(exc)
    log.error("OpenEnv: %s message failed", kind, exc_info=exc)
    return _error(f"internal error: {type(exc).__name__}", EXECUTION_ERROR)


def _state(served: ServedSession) -> bytes:
    return orjson.dumps({"type": "state", "data": state(served)}, default=repr)


def _observation(data: dict[str, Any], reward: float | None, done: bool) -> bytes:
    return orjson.dumps(
        {"type": "observation", "data": {"observation": data, "reward": reward, "done": done}},
        default=repr,
    )


def _reset(
    manager: SessionManager, served: ServedSession, data: dict[str, Any],
    sent: set[str] | None = None,
) -> bytes:
    """A reset's reply; the caller holds the session's lock, or knows it is free (nothing
    here awaits)."""
    unknown = sorted(set(data) - set(RESET_KEYS))
    if unknown:
        raise Problem(422, "invalid_reset", f"reset: unknown keys {unknown}; allowed: "
                      f"{list(RESET_KEYS)}",
                      errors=[{"field": f"body.{k}", "problem": "unknown"} for k in unknown])
    seed = data.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed <= MAX_SEED):
        raise Problem(422, "invalid_reset", "seed: expected a non-negative integer",
                      errors=[{"field": "body.seed", "expected": "a non-negative integer"}])
    episode_id = data.get("episode_id")
    if episode_id is not None and (type(episode_id) is not str or not 0 < len(episode_id) <= 255):
        raise Problem(422, "invalid_reset", "episode_id: expected a string of 1-255 characters",
                      errors=[{"field": "body.episode_id", "expected": "a string"}])
    task, faults = data.get("task"), data.get("faults")
    for name, value in (("task", task), ("faults", faults)):
        if value is not None and not isinstance(value, str):
            raise Problem(422, "invalid_reset", f"{name}: expected a string",
                          errors=[{"field": f"body.{name}", "expected": "string"}])
    _, obs, _ = manager.reset(served.id, seed=seed, task=task, faults=faults,
                              episode_id=episode_id, catalog_tools=False)
    return _observation(reset_observation(served, obs, sent), None, False)
