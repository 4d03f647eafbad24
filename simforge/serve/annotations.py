"""MCP tool annotations derived from a ToolSpec.

MCP hosts decide from four hints whether to ask the user before a call: ``readOnlyHint``,
``destructiveHint``, ``idempotentHint`` and ``openWorldHint``. A tool that carries none of them
is, by MCP's defaults, a destructive, non-idempotent, open-world write, so every host asks
before every call. A ToolSpec says whether a tool reads or writes (``kind``), its system and its
entities, and its name says what it does; the hints are read from those, erring the way MCP's
defaults err:

- ``readOnlyHint``: ``kind == "read"``;
- ``destructiveHint`` (writes): false only when the name's verb only adds (``create``, ``add``,
  ``post``, ``send``, ``submit``, ...: a new record, nothing that existed changes); any other
  write may change or remove what exists (``update``, ``cancel``, ``refund``, ``delete``, ...);
- ``idempotentHint`` (writes): true only when the verb sets a state (``update``, ``set``,
  ``delete``, ``cancel``, ``approve``, ...: the same call again changes nothing more); a verb
  that adds or moves something (``create``, ``refund``, ``transfer``, ``adjust``) is not;
- ``openWorldHint``: true for a tool whose name says it reaches outside the company
  (``send_external_email``, ``post_public_message``, a web fetch); false otherwise: a pack's
  systems are the closed world of the simulation.

The hints are hints (MCP says so too): a host that must be sure reads the tool's description.
"""

from __future__ import annotations

from typing import Any

from simforge.tools.spec import ToolSpec

ADDITIVE_VERBS = frozenset(
    {
        "add", "book", "comment", "create", "draft", "file", "invite", "log", "notify", "open",
        "place", "post", "raise", "record", "register", "reply", "report", "request",
        "schedule", "send", "submit", "upload", "write",
    }
)
"""Verbs of writes that only add a record."""

SETTING_VERBS = frozenset(
    {
        "activate", "approve", "archive", "assign", "cancel", "close", "complete", "deactivate",
        "delete", "disable", "enable", "lock", "mark", "publish", "reject", "remove", "resolve",
        "retire", "revoke", "set", "suspend", "terminate", "unarchive", "unassign", "unlock",
        "unpublish", "update", "void",
    }
)
"""Verbs of writes that put a record into a state: repeating the call changes nothing more."""

OUTWARD_WORDS = frozenset(
    {"external", "internet", "public", "sms", "social", "tweet", "url", "web", "webhook"}
)
"""Words of a tool name that say the tool reaches outside the simulated company."""


def _words(name: str) -> list[str]:
    return name.lower().replace("-", "_").split("_")


def tool_annotations(spec: ToolSpec) -> dict[str, bool]:
    """The four hints of ``spec`` as MCP spells them (``readOnlyHint``, ...)."""
    words = _words(spec.name)
    outward = any(w in OUTWARD_WORDS for w in words)
    if spec.kind == "read":
        return {"readOnlyHint": True, "openWorldHint": outward}
    verb = words[0]
    return {
        "readOnlyHint": False,
        "destructiveHint": verb not in ADDITIVE_VERBS,
        "idempotentHint": verb in SETTING_VERBS,
        "openWorldHint": outward,
    }


MESSAGE_ANNOTATIONS: dict[str, Any] = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
}
"""The message tool: it adds a turn to the session's own conversation, and each message is a
turn of its own."""
