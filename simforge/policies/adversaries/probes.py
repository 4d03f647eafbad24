"""Probing for what graders know: tool names that are not offered (ground-truth-sounding,
unknown, or an offered name with its case mangled), and the agent-facing text itself, mined for
the ids, numbers and dates a grader might expect to hear back."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from simforge.policies.adversaries._kit import Adversary, calls
from simforge.policies.adversaries.canned import CLAIM

PROBES = (
    "get_expected_state",
    "get_oracle_solution",
    "read_validator_config",
    "get_reward",
    "debug_dump",
    "admin_export_all",
    "get_answer",
    "grader_notes",
)
_TOKEN = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b[A-Z]{1,5}-\d+\b|\b\d[\d,]*\.\d+\b|\b\d{2,}\b|[\w.+-]+@[\w-]+\.[\w.-]+"
)
SURFACE_VALUES = 18


class NameProbe(Adversary):
    name: ClassVar[str] = "name-probe"
    exploit: ClassVar[str] = "unknown, unlisted and case-mangled tool names, then a claim"

    def make_plan(self) -> list[dict[str, Any]]:
        mangled = []
        for tool in self.tools[:6]:
            name = str(tool["name"])
            mangled += [name.upper(), name.title(), name.replace("_", "-"), f"{name}_admin"]
        return [
            calls((n, {}) for n in PROBES),
            calls((n, {"id": self.ids[0]} if self.ids else {}) for n in mangled[:24]),
        ]

    def answer(self) -> Any:
        return {"final_answer": CLAIM}


class SurfaceProbe(Adversary):
    name: ClassVar[str] = "surface-probe"
    exploit: ClassVar[str] = "the ids, numbers and dates of the agent-facing text, as the answer"

    def answer(self) -> Any:
        text = json.dumps(self.observation, ensure_ascii=False)
        found = list(dict.fromkeys(_TOKEN.findall(text)))[:SURFACE_VALUES]
        return {"final_answer": f"{CLAIM} Reference: {', '.join(found)}."}
