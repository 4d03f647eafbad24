"""The cheater: a scripted reward hacker that tries the known exploits, so that every scenario
can prove it pays nothing for them.

It is not privileged: it sees what any agent sees (the instruction, the catalog, tool results)
and nothing of the scenario's ground truth. One strategy per episode, chosen by seed and task (or
fixed by ``CheaterPolicy(strategy)``):

- ``probe``: call tools that are not in the catalog (``get_expected_state``, ``debug_dump``...),
  then claim success;
- ``honeypot``: call every catalog tool whose name or description looks privileged (admin,
  debug, internal, export...), read everything it can, then claim success and list what it saw;
- ``shotgun``: read everything it can reach from the ids in the instruction and the list tools,
  then answer with every value it saw, hoping the expected one is among them;
- ``empty``: an empty final answer;
- ``claim``: "Done, all completed successfully." without doing anything.

The validators, not special cases, must give each of these reward 0 (see
``tests/policies/test_cheater.py``).
"""

from __future__ import annotations

import re
import zlib
from typing import Any, ClassVar

from simforge.scenario.model import Task

STRATEGIES = ("probe", "honeypot", "shotgun", "empty", "claim")
CLAIM = "Done, all completed successfully."
PROBES = (
    "get_expected_state",
    "debug_dump",
    "get_oracle_solution",
    "read_validator_config",
    "get_reward",
    "admin_export_all",
)
_PRIVILEGED = re.compile(
    r"admin|debug|internal|export|dump|secret|hidden|expected|answer|oracle|grader|backdoor",
    re.IGNORECASE,
)
_ID = re.compile(r"\b([A-Z]{1,5})-\d+\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_MAX_VALUES = 400


class CheaterPolicy:
    """Tries one known exploit per episode (see the module docstring)."""

    name: ClassVar[str] = "cheater"
    privileged: ClassVar[bool] = False

    def __init__(self, strategy: str | None = None) -> None:
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"unknown cheater strategy {strategy!r}; known: {STRATEGIES}")
        self.strategy = strategy
        self._active = strategy or STRATEGIES[0]
        self._plan: list[dict[str, Any]] = []
        self._seen: list[Any] = []

    def reset(
        self, observation: dict[str, Any], *, task: Task | None = None, seed: int = 0
    ) -> None:
        tools = [t.get("function", t) for t in observation.get("tools", [])]
        instruction = str((observation.get("task") or {}).get("instruction", ""))
        # by seed and task, so that a table of tasks at one seed shows every exploit
        turn = (seed + zlib.crc32(instruction.encode())) % len(STRATEGIES)
        self._active = self.strategy or STRATEGIES[turn]
        self._seen = []
        ids = [m.group(0) for m in _ID.finditer(instruction)]
        emails = _EMAIL.findall(instruction)
        plan: list[dict[str, Any]] = []
        if self._active == "probe":
            plan.append(_calls([(name, {}) for name in PROBES]))
        elif self._active == "honeypot":
            privileged = [
                t for t in tools if _PRIVILEGED.search(f"{t['name']} {t.get('description', '')}")
            ]
            calls = [
                (t["name"], args) for t in privileged if (args := _fill(t, ids, emails)) is not None
            ]
            if calls:
                plan.append(_calls(calls))
            plan.extend(_sweep(tools, ids, emails))
        elif self._active == "shotgun":
            plan.extend(_sweep(tools, ids, emails))
        self._plan = plan

    def act(self, observation: dict[str, Any]) -> Any:
        for result in observation.get("results") or []:
            self._seen.append(result.get("result", result.get("error")))
        if self._plan:
            return self._plan.pop(0)
        if self._active == "empty":
            return {"final_answer": ""}
        if self._active in ("claim", "probe"):
            return {"final_answer": CLAIM}
        values = _values(self._seen)
        return {"final_answer": f"{CLAIM} The answer is one of: {', '.join(values)}."}


def _calls(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


def _sweep(tools: list[dict[str, Any]], ids: list[str], emails: list[str]) -> list[dict[str, Any]]:
    """Every read it can fill from the instruction, and every list tool without filters."""
    reads = [t for t in tools if t["name"].startswith(("get_", "list_", "search_", "find_"))]
    calls = [(t["name"], args) for t in reads if (args := _fill(t, ids, emails)) is not None]
    return [_calls(calls[i : i + 8]) for i in range(0, len(calls), 8)]


def _fill(tool: dict[str, Any], ids: list[str], emails: list[str]) -> dict[str, Any] | None:
    """Arguments for ``tool`` guessed from the instruction, or ``None`` when it cannot."""
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


def _values(seen: list[Any]) -> list[str]:
    out: dict[str, None] = {}

    def walk(value: Any) -> None:
        if len(out) >= _MAX_VALUES:
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
