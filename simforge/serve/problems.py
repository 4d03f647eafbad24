"""Problem bodies (RFC 9457, ``application/problem+json``) for every client error the server
gives, so that a harness can tell *which* field was wrong without parsing prose.

Every 4xx names where the problem is in ``errors[].field`` (``body``, ``body.customer_id``,
``header.authorization``, ``path.name``...) and what was expected. A client error is never a 500:
FastAPI's own validation errors, Starlette's HTTP errors and the tool plane's checks all end here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any, Final

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from simforge import jsonio

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


class Problem(StarletteHTTPException):
    """An answer that is a problem: raised anywhere in the serve layer, rendered by one handler.
    (An HTTP exception, so that FastAPI lets one raised while it reads a body through as it is:
    :class:`JsonRoute`.)"""

    headers: dict[str, str]

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
        super().__init__(status, detail, headers)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.detail

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
        return jsonio.dumps(self.body(), default=repr)

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


INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
_DIGITS_AS_ZERO: Final = bytes(48 if 48 <= c <= 57 else c for c in range(256))
_LONG_NUMBER: Final = b"0" * 19
"""19 digits in a row (found as 19 zeros once every digit is read as a zero: a C scan, where a
regular expression tries every position): maybe an integer that orjson would read as a float
(beyond 64 bits), or one beyond what simforge carries; anything shorter is neither."""


def parse_json(raw: bytes | bytearray | memoryview | str, *, field: str = "body") -> Any:
    """The one way the server reads JSON from outside (HTTP bodies, MCP, WebSocket messages):
    orjson with the depth limit of :mod:`simforge.jsonio` (checked while parsing), and integers
    held to 64 bits (signed). A syntax error, or nesting deeper than
    :data:`~simforge.jsonio.MAX_DEPTH`, is a 400 naming ``field``; an integer out of range is a
    422 naming its path (``body.action.tool_calls.0.arguments.n``): orjson would read it as a
    float (an integer that is no longer the one sent), and what the server records is written
    back with orjson."""
    try:
        value = jsonio.loads(raw)
    except jsonio.DepthError as exc:
        raise Problem(
            400,
            "invalid_json",
            f"{field}: {exc}",
            errors=[{"field": field, "expected": f"at most {exc.limit} levels of nesting"}],
        ) from None
    except orjson.JSONDecodeError as exc:
        raise Problem(
            400,
            "invalid_json",
            f"{field}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            errors=[{"field": field, "expected": "a JSON document", "problem": exc.msg}],
        ) from None
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) >= 19 and _LONG_NUMBER in bytes(data).translate(_DIGITS_AS_ZERO):
        where = _wide_integer(json.loads(bytes(data)), field)
        if where is not None:
            path, number = where
            problem = f"integer {number} is out of range"
            expected = "an integer from -2**63 to 2**63-1"
            raise Problem(
                422,
                "integer_out_of_range",
                f"{path}: {problem}; expected {expected}",
                errors=[{"field": path, "expected": expected, "problem": problem}],
            )
    return value


def _wide_integer(value: Any, field: str) -> tuple[str, int] | None:
    """The path and value of the first integer beyond 64 bits (signed) in ``value``."""
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        item, path = stack.pop()
        if type(item) is int:
            if not INT_MIN <= item <= INT_MAX:
                return path, item
        elif isinstance(item, dict):
            stack.extend((child, f"{path}.{key}") for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, f"{path}.{i}") for i, child in reversed(list(enumerate(item))))
    return None


class JsonRequest(Request):
    """A request whose JSON body is read by :func:`parse_json`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json(await self.body())
        return self._json


class JsonRoute(APIRoute):
    """A FastAPI route that reads its JSON body with :func:`parse_json` (FastAPI's own reading
    is ``json.loads``: no depth limit, integers of any size)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(JsonRequest(request.scope, request.receive))

        return handle


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
