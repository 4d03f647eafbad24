"""The OpenEnv protocol: ``/ws`` plus ``/health``, ``/schema`` and ``/metadata``.

Written from the message format of ``openenv-core`` (``openenv/core/env_server/types.py`` and
``http_server.py``) rather than by mounting its server, which would bring its own session
registry and a thread pool per session: here the client sends ``{"type": "reset"|"step"|"state"|
"close", "data": {...}}`` and gets ``{"type": "observation", "data": {"observation", "reward",
"done"}}``, ``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"message",
"code"}}``. Each connection is one simforge session, deleted when it closes.

``/ws`` answers rewards, so it needs the server's token, like the control plane: as
``Authorization: Bearer``, or as the password of the URL (``ws://trainer:<token>@host:port``),
which OpenEnv's own client turns into HTTP Basic by way of ``websockets``.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import ValidationError

from simforge.env.action import Action

from .control_plane import env_step, session_info, token_matches
from .problems import Problem
from .sessions import ServedSession, SessionManager

OBSERVATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "What the agent sees after reset or a step.",
    "properties": {
        "task": {"type": "object", "description": "Instruction (after reset)."},
        "tools": {"type": "array", "description": "Tools in OpenAI function format."},
        "results": {"type": "array", "description": "One result or error per tool call."},
        "time": {"type": "number", "description": "Simulated seconds since reset."},
        "step": {"type": "integer"},
        "user": {"type": ["string", "null"]},
        "terminated": {"type": "boolean"},
        "truncated": {"type": "boolean"},
    },
}

STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode_id": {"type": "string"},
        "step_count": {"type": "integer"},
        "scenario": {"type": "string"},
        "task": {"type": "string"},
        "seed": {"type": "integer"},
        "time": {"type": "number"},
    },
}


def _observation(data: dict[str, Any], reward: float | None, done: bool) -> bytes:
    return orjson.dumps(
        {"type": "observation", "data": {"observation": data, "reward": reward, "done": done}},
        default=repr,
    )


def _error(message: str, code: str, **extra: Any) -> bytes:
    return orjson.dumps({"type": "error", "data": {"message": message, "code": code, **extra}})


def _state(served: ServedSession) -> dict[str, Any]:
    info = session_info(served)
    return {"episode_id": served.id, "step_count": info["steps"], **info}


def _step_observation(answer: dict[str, Any]) -> tuple[dict[str, Any], float, bool]:
    """The trainer's view of a step: observation, reward, done. Verdict evidence (which may
    quote expected values) stays on the control plane; only the names of failed checks pass."""
    info = dict(answer["info"])
    score = info.pop("score", None)
    if score is not None:
        info["passed"] = score.get("passed")
        info["failed"] = score.get("failed")
    obs = {
        **answer["observation"],
        "terminated": answer["terminated"],
        "truncated": answer["truncated"],
        "info": info,
    }
    done = bool(answer["terminated"] or answer["truncated"])
    return obs, float(answer["reward"]), done


def openenv_router(manager: SessionManager, token: str) -> APIRouter:
    router = APIRouter(tags=["openenv"])
    scenario = manager.loaded.scenario

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
        return {
            "action": Action.model_json_schema(),
            "observation": OBSERVATION_SCHEMA,
            "state": STATE_SCHEMA,
        }

    @router.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        if not token_matches(websocket.headers.get("authorization"), token):
            await websocket.close(code=1008, reason="the server's token is required")
            return
        await websocket.accept()
        try:
            served = manager.create()
        except Problem as problem:
            await websocket.send_bytes(_error(problem.detail, "CAPACITY_REACHED"))
            await websocket.close()
            return
        try:
            await _serve(websocket, manager, served)
        except WebSocketDisconnect:
            pass
        finally:
            manager.sessions.pop(served.id, None)

    return router


async def _serve(websocket: WebSocket, manager: SessionManager, served: ServedSession) -> None:
    while True:
        raw = await websocket.receive_text()
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            await websocket.send_text(_error(f"Invalid JSON: {exc}", "INVALID_JSON").decode())
            continue
        kind = message.get("type") if isinstance(message, dict) else None
        data = message.get("data") if isinstance(message, dict) else None
        data = data if isinstance(data, dict) else {}
        try:
            if kind == "reset":
                reply = await _reset(manager, served, data)
            elif kind == "step":
                action = {k: v for k, v in data.items() if k != "metadata"}
                answer = await _step(served, action)
                reply = _observation(*_step_observation(answer))
            elif kind == "state":
                reply = orjson.dumps({"type": "state", "data": _state(served)}, default=repr)
            elif kind == "close":
                await websocket.close()
                return
            else:
                reply = _error(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
        except Problem as problem:
            reply = _error(problem.detail, "EXECUTION_ERROR", status=problem.status)
        except ValidationError as exc:
            reply = _error("Invalid message", "VALIDATION_ERROR", errors=str(exc))
        await websocket.send_text(reply.decode())


async def _reset(manager: SessionManager, served: ServedSession, data: dict[str, Any]) -> bytes:
    seed = data.get("seed")
    if seed is not None and (type(seed) is not int or seed < 0):
        raise Problem(422, "invalid_reset", "seed: expected a non-negative integer")
    task, faults = data.get("task"), data.get("faults")
    for name, value in (("task", task), ("faults", faults)):
        if value is not None and not isinstance(value, str):
            raise Problem(422, "invalid_reset", f"{name}: expected a string")
    async with served.lock:
        _, obs, _ = manager.reset(served.id, seed=seed, task=task, faults=faults)
    return _observation({**obs, "session_id": served.id}, None, False)


async def _step(served: ServedSession, action: dict[str, Any]) -> dict[str, Any]:
    return await env_step(served, action)
