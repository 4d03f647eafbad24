"""User specs: ``scripted`` or ``llm:MODEL``, one string a worker process can rebuild a user
from (``--user`` on ``run``/``stress``, ``user=`` on :func:`simforge.make`, ``$SIMFORGE_USER``)."""

from __future__ import annotations

import os

from simforge.config import NotFound
from simforge.users.base import User
from simforge.users.scripted import ScriptedUser

USERS = ("scripted", "llm")


def default_user_spec() -> str:
    return os.environ.get("SIMFORGE_USER") or "scripted"


def build_user(spec: str | None = None) -> User:
    """The user a spec names (default: ``$SIMFORGE_USER``, else ``scripted``)."""
    spec = spec or default_user_spec()
    name, sep, arg = spec.partition(":")
    if name == "scripted" and not sep:
        return ScriptedUser()
    if name == "llm":
        from simforge.users.llm import LLMUser

        return LLMUser(arg or None)
    raise NotFound(f"user {spec!r}: expected one of 'scripted', 'llm' or 'llm:MODEL'")
