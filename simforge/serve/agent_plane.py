"""The agent's side of the conversation over HTTP: ``POST /s/{sid}/messages`` and
``POST /s/{sid}/finish``.

Beside its tools (the tool plane), an agent talks to the user and, when it is done, gives its
final answer. These are the same moves as ``{"message": ...}`` and ``{"final_answer": ...}`` of
``env.step`` (:mod:`simforge.env.core` states the contract): a message answers the user's
reply, or ``ended: true`` when the user closed the conversation (the message is then the final
answer). Like the tool plane they take the session's tool token (an agent under test reaches
them with it; a stranger does not), and they answer nothing of the score: that stays on the
control plane.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import Response

from .control_plane import _json, env_step
from .problems import Problem, parse_json
from .sessions import SessionManager, authorize

MAX_TEXT = 1_000_000


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = Field(max_length=MAX_TEXT, description="What the agent says to the user.")
    think: float | None = Field(None, ge=0, description="Simulated seconds before it is said.")


class PostFinish(BaseModel):
    model_config = ConfigDict(extra="ignore")

    answer: str = Field("", max_length=MAX_TEXT, description="The agent's final answer.")


def _conversation(answer: dict[str, Any]) -> dict[str, Any]:
    obs = answer["observation"]
    return {
        "user": obs.get("user"),
        "ended": bool(answer["terminated"] or answer["truncated"]),
        "time": obs.get("time"),
        "step": obs.get("step"),
    }


async def _body(request: Request, model: type[BaseModel]) -> Any:
    """The JSON body as ``model``, whatever the content type says (as on the tool plane: an
    agent written with ``urllib`` sends JSON labelled as a form)."""
    raw = await request.body()
    data = parse_json(raw) if raw.strip() else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [
            {"field": ".".join(["body", *(str(p) for p in e["loc"])]), "problem": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        first = errors[0]
        raise Problem(
            422, "invalid_body", f"{first['field']}: {first['problem']}", errors=errors
        ) from None


def _documented(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


def agent_router(manager: SessionManager) -> APIRouter:
    router = APIRouter(prefix="/s/{session_id}", tags=["conversation"])

    @router.post("/messages", openapi_extra=_documented(PostMessage))
    async def message(session_id: str, request: Request) -> Response:
        """Say something to the user. Answers ``{"user": reply | null, "ended": bool, "time",
        "step"}``; once ``ended``, the conversation is over and this message was the final
        answer."""
        served = manager.get(session_id)
        authorize(served, request.headers.get("authorization"))
        body: PostMessage = await _body(request, PostMessage)
        action: dict[str, Any] = {"message": body.content}
        if body.think is not None:
            action["think"] = body.think
        return _json(_conversation(await env_step(served, action)))

    @router.post("/finish", openapi_extra=_documented(PostFinish))
    async def finish(session_id: str, request: Request) -> Response:
        """End the episode now with a final answer (``{"answer": "..."}``)."""
        served = manager.get(session_id)
        authorize(served, request.headers.get("authorization"))
        body: PostFinish = await _body(request, PostFinish)
        return _json(_conversation(await env_step(served, {"final_answer": body.answer})))

    return router
