"""What the adversaries share: what an agent sees (the instruction, the offered tools, the
results), ids and values picked out of it, and arguments guessed for a tool's schema.

Nothing here reads the scenario: an adversary is an agent, and knows only what an agent is
shown. (The cheater, :mod:`simforge.policies.cheater`, draws on the same kit.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar

from simforge.policies.base import PolicyBase
from simforge.scenario.model import Task

ID = re.compile(r"\b([A-Z]{1,5})-\d+\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
MAX_VALUES = 400
READ_PREFIXES = ("get_", "list_", "search_", "find_", "check_", "lookup_")


def calls(pairs: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def is_read(tool: dict[str, Any]) -> bool:
    return str(tool["name"]).startswith(READ_PREFIXES)


def fill(tool: dict[str, Any], ids: list[str], emails: list[str]) -> dict[str, Any] | None:
    """Arguments for ``tool``'s required parameters guessed from ids and emails seen, or
    ``None`` when they cannot be guessed."""
    schema = tool.get("parameters") or {}
    args: dict[str, Any] = {}
    for prop in schema.get("required", []):
        lowered = prop.lower()
        if lowered.endswith("_id"):
            match = next((i for i in ids if lowered.startswith(i.split("-")[0].lower())), None)
            if match is None:
                return None
            args[prop] = match
        elif lowered in ("query", "q", "email", "text", "search"):
            if not (emails or ids):
                return None
            args[prop] = (emails or ids)[0]
        else:
            return None
    return args


def plausible(tool: dict[str, Any], ids: list[str], emails: list[str]) -> dict[str, Any]:
    """Arguments for every parameter of ``tool``, plausible by name and type: the ids and
    emails seen, a modest amount, a yes, a short reason. Never ``None``: a write-everything
    agent calls each tool whatever it takes."""
    schema = tool.get("parameters") or {}
    props = schema.get("properties") or {}
    args: dict[str, Any] = {}
    for prop in schema.get("required", list(props)):
        spec = props.get(prop) or {}
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        lowered = prop.lower()
        if spec.get("enum"):
            args[prop] = spec["enum"][0]
        elif lowered.endswith("_id"):
            prefix = lowered[:-3]
            args[prop] = next(
                (i for i in ids if prefix.startswith(i.split("-")[0].lower())),
                ids[0] if ids else "X-1",
            )
        elif "email" in lowered:
            args[prop] = emails[0] if emails else "someone@example.com"
        elif kind in ("number", "integer"):
            args[prop] = 1 if kind == "integer" else 10.0
        elif kind == "boolean":
            args[prop] = True
        elif kind == "array":
            args[prop] = []
        elif kind == "object":
            args[prop] = {}
        else:
            args[prop] = "as requested"
    return args


def sweep(tools: list[dict[str, Any]], ids: list[str], emails: list[str]) -> list[dict[str, Any]]:
    """Every read it can fill from what it has seen, eight calls a step."""
    reads = [t for t in tools if is_read(t)]
    pairs = [(t["name"], args) for t in reads if (args := fill(t, ids, emails)) is not None]
    return [calls(pairs[i : i + 8]) for i in range(0, len(pairs), 8)]


def values(seen: Iterable[Any], limit: int = MAX_VALUES) -> list[str]:
    """Every id, number, name and short string in ``seen``, in order, once each."""
    out: dict[str, None] = {}

    def walk(value: Any) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int | float):
            out[f"{value:.2f}" if isinstance(value, float) else str(value)] = None
        elif isinstance(value, str) and 0 < len(value) <= 60:
            out[value] = None

    for value in seen:
        walk(value)
    return list(out)


class Adversary(PolicyBase):
    """An agent that hunts for unearned reward. Subclasses plan from what ``reset`` shows
    (``self.tools``, ``self.instruction``, ``self.ids``, ``self.emails``) and answer from what
    they saw (``self.seen``: every result and error, every user reply)."""

    name: ClassVar[str] = "adversary"
    exploit: ClassVar[str] = ""
    """One line: the exploit class it tries (shown in audit reports)."""

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        self.tools = [t.get("function", t) for t in observation.get("tools", [])]
        self.instruction = str((observation.get("task") or {}).get("instruction", ""))
        self.observation = observation
        self.ids = list(dict.fromkeys(m.group(0) for m in ID.finditer(self.instruction)))
        self.emails = list(dict.fromkeys(EMAIL.findall(self.instruction)))
        self.seen: list[Any] = []
        self.seed = seed
        self.plan: list[dict[str, Any]] = self.make_plan()

    def make_plan(self) -> list[dict[str, Any]]:
        return []

    def answer(self) -> Any:
        raise NotImplementedError

    def observe(self, observation: dict[str, Any]) -> None:
        for result in observation.get("results") or []:
            self.seen.append(result.get("result", result.get("error")))
        if observation.get("user"):
            self.seen.append(observation["user"])
            self.ids.extend(m.group(0) for m in ID.finditer(observation["user"]))
            self.emails.extend(EMAIL.findall(observation["user"]))

    def act(self, observation: dict[str, Any]) -> Any:
        self.observe(observation)
        if self.plan:
            return self.plan.pop(0)
        return self.answer()
