"""What a tool answers when it refuses: a typed error with an HTTP-like status.

Exception tree::

    ToolError                    an answer the agent sees (part of the task, never a crash)
     ├── ToolArgumentError       422: arguments that do not fit the input schema
     └── ToolNotFound            404: the agent named a tool that is not in its catalog
    ToolDefinitionError          a pack declares a tool wrongly (raised at load time)

Any other exception raised by a handler is an infrastructure error: the kernel records it as
``internal_error`` and marks the episode invalid instead of blaming the agent.
"""

from __future__ import annotations

from typing import Any

from simforge.errors import PluginError, SimforgeError


class ToolError(SimforgeError):
    """A business or protocol error returned to the agent, like a real API's error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status, "code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        if self.retry_after is not None:
            body["retry_after"] = self.retry_after
        return body

    @classmethod
    def not_found(cls, entity: str, id: Any) -> ToolError:
        return cls(404, "not_found", f"{entity} {id!r} not found")

    @classmethod
    def conflict(cls, message: str) -> ToolError:
        return cls(409, "conflict", message)

    @classmethod
    def precondition(cls, message: str) -> ToolError:
        return cls(412, "precondition_failed", message)

    @classmethod
    def forbidden(cls, message: str) -> ToolError:
        return cls(403, "permission_denied", message)

    @classmethod
    def invalid(cls, argument: str, message: str) -> ToolError:
        return cls(422, "validation_error", message, details=[{"argument": argument}])


class ToolArgumentError(ToolError):
    def __init__(self, tool: str, details: list[dict[str, Any]]) -> None:
        parts = [
            f"argument {d['argument']!r}: expected {d['expected']}, got {d['received']!r}"
            if "received" in d
            else f"argument {d['argument']!r}: expected {d['expected']}"
            for d in details
        ]
        super().__init__(422, "invalid_arguments", f"{tool}: " + "; ".join(parts), details=details)


class ToolNotFound(ToolError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            404, "unknown_tool", f"no tool named {name!r}; {len(known)} tools are available"
        )


class ToolDefinitionError(PluginError, TypeError):
    """A tool declared wrongly: names the tool and what is wrong."""
