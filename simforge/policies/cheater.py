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

from simforge.errors import UsageError
from simforge.policies.adversaries._kit import EMAIL as _EMAIL
from simforge.policies.adversaries._kit import ID as _ID
from simforge.policies.adversaries._kit import calls as _calls
from simforge.policies.adversaries._kit import fill as _fill
from simforge.policies.adversaries._kit import sweep as _sweep
from simforge.policies.adversaries._kit import values as _values
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


class CheaterPolicy:
    """Tries one known exploit per episode (see the module docstring)."""

    name: ClassVar[str] = "cheater"
    privileged: ClassVar[bool] = False

    def __init__(self, strategy: str | None = None) -> None:
        if strategy is not None and strategy not in STRATEGIES:
            raise UsageError(f"unknown cheater strategy {strategy!r}; known: {STRATEGIES}")
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
