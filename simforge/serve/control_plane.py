"""The control plane: sessions are created, stepped, finished and scored here, behind a token.

It is a separate router with its own bearer-token dependency; the tool plane has no route into
it, and a tool-plane session id is not a credential for it. Scores, verdicts and trajectories are
only ever answered here (and to the OpenEnv trainer over ``/ws``, which needs the same token).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from simforge import jsonio
from simforge.env.action import ActionError
from simforge.sim.session import CallRequest, SessionClosed

from .problems import JsonRoute, Problem
from .sessions import ServedSession, SessionManager, episode_ended

MAX_SEED = 2**63 - 1


MIN_ID_LENGTH = 16
MIN_ID_DISTINCT = 8


def guessable(session_id: str) -> bool:
    """An id a stranger might guess: under 16 characters, or under 8 distinct ones."""
    return len(session_id) < MIN_ID_LENGTH or len(set(session_id)) < MIN_ID_DISTINCT


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_\-]{1,128}$",
        description="An id of your own: at least 16 random-looking characters, unless "
        "insecure_id is set (default: a random one).",
    )
    insecure_id: bool = Field(
        False, description="Accept a short or guessable session_id (local use only)."
    )
    scenario: str | None = Field(None, max_length=256, description="A registered scenario id.")
    task: str | None = Field(None, max_length=256)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    faults: str | None = Field(None, max_length=256, description="A fault profile name.")
    max_steps: int | None = Field(None, ge=1, le=2**62)
    max_sim_seconds: float | None = Field(None, gt=0, le=1e15)


class ResetSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    task: str | None = Field(None, max_length=256)
    faults: str | None = Field(None, max_length=256)


class StepSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Any = Field(
        description="Tool calls, a message or a final answer (see docs/serving.md)."
    )
    request_id: str | None = Field(
        None, max_length=255, description="Repeat a step safely: the same id, the same answer."
    )


class FinishSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(max_length=1_000_000)
    request_id: str | None = Field(None, max_length=255)


def _json(data: Any, status: int = 200) -> Response:
    return Response(
        jsonio.dumps(data, default=repr), status_code=status, media_type="application/json"
    )


def token_matches(authorization: str | None, token: str) -> bool:
    """``Bearer <token>``, or HTTP Basic with the token as password (what a WebSocket client
    sends for ``ws://user:<token>@host/ws``)."""
    if not authorization:
        return False
    scheme, _, value = authorization.partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return secrets.compare_digest(value.strip().encode(), token.encode())
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return secrets.compare_digest(decoded.partition(":")[2].encode(), token.encode())
    return False


def session_info(served: ServedSession) -> dict[str, Any]:
    """What the control plane says about a session: no expected state, no validator settings."""
    env = served.env
    session = served.session
    assert env.task is not None
    return {
        "session_id": served.id,
        "episode_id": served.episode_id,
        "tool_token": served.tool_token,
        "scenario": env.scenario.id,
        "task": env.task.id,
        "seed": session.seed,
        "faults": session.fault_profile,
        "sandbox": served.sandbox,
        "steps": session.steps,
        "time": session.now,
        "calls": len(session.recorder.calls),
        "terminated": session.terminated,
        "truncated": session.truncated,
        "truncation_reason": session.truncation_reason,
        "invalid_reason": session.invalid_reason,
        "created_at": served.created_at,
        "pending": served.pending,
    }


async def env_step(served: ServedSession, action: Any) -> dict[str, Any]:
    """``env.step`` under the session's lock; in real-time mode the answer waits for the calls'
    simulated duration (the agent's think time stays simulated: it is in the action)."""
    async with served.lock:
        _steppable(served)
        try:
            obs, reward, terminated, truncated, info = await served.env.astep(action)
        except (ActionError, SessionClosed) as exc:
            raise _step_problem(served, exc) from None
        if served.time_scale > 0:
            recorded = served.session.recorder.calls
            n = len(obs["results"])
            calls = [recorded[i] for i in range(len(recorded) - n, len(recorded))] if n else []
            spans = [c.ended_at - c.started_at for c in calls if c.ended_at is not None]
            if spans:
                await asyncio.sleep(max(spans) * served.time_scale)
        served.touch()
    return _answer(obs, reward, terminated, truncated, info)


def env_step_calls_now(
    served: ServedSession, calls: list[CallRequest]
) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
    """:func:`env_step` without a coroutine, for what cannot wait: virtual time (scale 0), a
    free lock and plain tool calls, already read as the kernel's requests
    (:func:`~simforge.env.action.fast_calls`). The caller checks those; nothing here awaits, so
    no other request interleaves with it. ``env.step_calls``' own tuple, nothing copied."""
    try:
        answer = served.env.step_calls(calls)  # an ended episode: SessionClosed, as _steppable
    except (ActionError, SessionClosed) as exc:
        served.touch()
        raise _step_problem(served, exc) from None
    served.touch()
    return answer


def _steppable(served: ServedSession) -> None:
    served.touch()
    if served.session.done:
        raise episode_ended(served)


def _step_problem(served: ServedSession, exc: Exception) -> Problem:
    if isinstance(exc, SessionClosed):
        return episode_ended(served)
    where = str(exc).partition(":")[0]
    return Problem(422, "invalid_action", str(exc), errors=[{"field": f"body.{where}"}])


def _answer(
    obs: dict[str, Any], reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
) -> dict[str, Any]:
    return {
        "observation": obs,
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "info": info,
    }


def token_dependency(token: str, surface: str = "the control plane") -> Any:
    """A FastAPI dependency: 401 unless the request carries the server's token."""

    async def require_token(
        authorization: Annotated[str | None, Header(description="Bearer <token>")] = None,
    ) -> None:
        if not token_matches(authorization, token):
            raise Problem(
                401,
                "unauthorized",
                f"{surface} needs the server's token: Authorization: Bearer <token>",
                errors=[{"field": "header.authorization", "expected": "Bearer <token>"}],
                headers={"WWW-Authenticate": 'Bearer realm="simforge"'},
            )

    return require_token


def control_router(manager: SessionManager, token: str) -> APIRouter:
    require_token = token_dependency(token)
    router = APIRouter(
        prefix="/sessions",
        tags=["control plane"],
        dependencies=[Depends(require_token)],
        route_class=JsonRoute,
    )
    problem = {"model": None, "description": "A problem (application/problem+json)."}
    errors: dict[int | str, dict[str, Any]] = {
        401: problem,
        404: problem,
        409: problem,
        422: problem,
    }

    @router.post("", status_code=201, responses=errors)
    async def create(body: CreateSession) -> Response:
        """Create a session: a scenario (the served one by default), task, seed, fault profile.
        The answer holds the session's ``tool_token``, which its agent sends as ``Authorization:
        Bearer`` to the tool plane, MCP and the conversation paths."""
        values = body.model_dump()
        if values.pop("insecure_id") is False and body.session_id is not None and guessable(
            body.session_id
        ):
            raise Problem(
                422,
                "guessable_session_id",
                f"session_id {body.session_id!r} is short or guessable: give at least "
                f"{MIN_ID_LENGTH} random-looking characters, leave it out for a random one, or "
                "set insecure_id: true for local use",
                errors=[{"field": "body.session_id",
                         "expected": f"at least {MIN_ID_LENGTH} random-looking characters"}],
            )
        served = manager.create(**values)
        return _json(
            {"session": session_info(served), "tool_token": served.tool_token,
             "observation": served.initial_observation()}, 201
        )

    @router.get("", responses=errors)
    async def list_sessions() -> Response:
        """Every session, newest last."""
        return _json([session_info(s) for s in manager.sessions.values()])

    @router.get("/{session_id}", responses=errors)
    async def inspect(session_id: str) -> Response:
        """A session's state: scenario, task, seed, faults, steps, simulated time, done or not."""
        return _json(session_info(manager.get(session_id)))

    @router.post("/{session_id}/reset", responses=errors)
    async def reset(session_id: str, body: ResetSession | None = None) -> Response:
        """Start a new episode in the session (same id): optionally another seed, task, faults."""
        body = body or ResetSession()
        served = manager.get(session_id)
        async with served.lock:
            served, obs, info = manager.reset(session_id, **body.model_dump())
        return _json({"session": session_info(served), "observation": obs, "info": info})

    @router.post("/{session_id}/step", responses=errors)
    async def step(session_id: str, body: StepSession) -> Response:
        """The env API over HTTP: ``step(action) -> observation, reward, terminated, truncated,
        info``. A repeated ``request_id`` answers the first answer again, without stepping."""
        return await _idempotent(manager.get(session_id), body.request_id, body.action)

    @router.post("/{session_id}/finish", responses=errors)
    async def finish(session_id: str, body: FinishSession) -> Response:
        """The agent's final answer: ends the episode and answers the score in ``info``."""
        return await _idempotent(
            manager.get(session_id), body.request_id, {"final_answer": body.answer}
        )

    @router.get("/{session_id}/score", responses=errors)
    async def score(session_id: str) -> Response:
        """Verdicts and reward (final once the episode has ended)."""
        served = manager.get(session_id)
        async with served.lock:
            result = served.env.score()
        return _json({**result.summary(), "final": served.session.done})

    @router.get("/{session_id}/trajectory", responses=errors)
    async def trajectory(session_id: str) -> Response:
        """The episode so far, as an Episode (the model ingestion produces)."""
        served = manager.get(session_id)
        async with served.lock:
            episode = served.env.trajectory()
        return _json(episode.model_dump(mode="json"))

    @router.delete("/{session_id}", status_code=204, responses=errors)
    async def delete(session_id: str) -> Response:
        """Delete the session and everything it holds."""
        manager.delete(session_id)
        return Response(status_code=204)

    async def _idempotent(served: ServedSession, request_id: str | None, action: Any) -> Response:
        if request_id is not None and request_id in served.answers:
            return _json(served.answers[request_id])
        answer = await env_step(served, action)
        if request_id is not None:
            served.remember(request_id, answer, manager.limits.idempotency_window)
        return _json(answer)

    return router
