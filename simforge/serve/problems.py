"""Problem bodies (RFC 9457, ``application/problem+json``) for every client error the server
gives, so that a harness can tell *which* field was wrong without parsing prose.

Every 4xx names where the problem is in ``errors[].field`` (``body``, ``body.customer_id``,
``header.authorization``, ``path.name``...) and what was expected. A client error is never a 500:
FastAPI's own validation errors, Starlette's HTTP errors and the tool plane's checks all end here.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

PROBLEM_JSON = "application/problem+json"

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An RFC 9457 problem; `errors` names each field that is wrong.",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "retry_after": {"type": "number"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "expected": {"type": "string"},
                    "problem": {"type": "string"},
                },
                "additionalProperties": True,
            },
        },
    },
    "required": ["type", "title", "status", "detail"],
    "additionalProperties": True,
}


def title_of(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return {499: "Client Closed Request"}.get(status, "Error")


class Problem(Exception):
    """An answer that is a problem: raised anywhere in the serve layer, rendered by one handler."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": f"urn:simforge:problem:{self.code}",
            "title": title_of(self.status),
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if self.errors:
            out["errors"] = self.errors
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        return out

    def encode(self) -> bytes:
        return orjson.dumps(self.body(), default=repr)

    def response(self) -> Response:
        return Response(
            self.encode(), status_code=self.status, media_type=PROBLEM_JSON, headers=self.headers
        )


def tool_problem(error: dict[str, Any]) -> Problem:
    """A tool's error dict (``{"status","code","message","details"?,"retry_after"?}``) as a
    problem; each argument detail also gets ``field: body.<argument>``."""
    details = [
        {"field": f"body.{d['argument']}" if "argument" in d else "body", **d}
        for d in error.get("details") or []
    ]
    return Problem(
        int(error["status"]),
        str(error.get("code", "error")),
        str(error.get("message", "")),
        errors=details,
        retry_after=error.get("retry_after"),
    )


def parse_json(raw: bytes, *, field: str = "body") -> Any:
    """The decoded body, or a 400 naming the field and the position of the syntax error."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Problem(
            400,
            "invalid_json",
            f"{field}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            errors=[{"field": field, "expected": "a JSON document", "problem": exc.msg}],
        ) from None


def _validation_problem(exc: RequestValidationError, content_type: str = "") -> Problem:
    # A body sent as a form or as text (``curl -d`` says form) reaches the model as a string:
    # say what to send instead of only that it is not an object.
    not_json = "json" not in content_type.lower()
    errors = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        field = ".".join(loc) or "body"
        entry: dict[str, Any] = {"field": field, "problem": err.get("msg", "invalid")}
        if err.get("type") == "json_invalid":
            entry["expected"] = "a JSON document"
        elif not_json and loc == ["body"] and err.get("type") != "missing":
            entry["problem"] = (
                f"the body is not read as JSON (Content-Type: {content_type or 'none'}); "
                "send it with Content-Type: application/json"
            )
            entry["expected"] = "a JSON object"
        elif err.get("type") != "missing" and "input" in err:
            entry["received"] = err["input"]
        errors.append(entry)
    first = errors[0]["field"] if errors else "body"
    return Problem(
        422, "invalid_request", f"{first}: {errors[0]['problem'] if errors else ''}", errors=errors
    )


def install_handlers(app: FastAPI) -> None:
    """Render every error of the FastAPI routes as a problem, including the ones Starlette and
    FastAPI raise themselves (404 on unknown paths, 405, request validation)."""

    async def on_problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Problem)
        return exc.response()

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _validation_problem(exc, request.headers.get("content-type", "")).response()

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        field = "header.authorization" if exc.status_code == 401 else "path"
        problem = Problem(
            exc.status_code,
            title_of(exc.status_code).lower().replace(" ", "_"),
            str(exc.detail),
            errors=[{"field": field, "problem": str(exc.detail)}],
            headers=dict(exc.headers or {}),
        )
        return problem.response()

    async def on_error(request: Request, exc: Exception) -> Response:
        return Problem(500, "internal_error", "internal server error").response()

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_error)
