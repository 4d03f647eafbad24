"""Reads, then words: a refusal after looking things up (the blanket refuser that checks
first must not be paid more than one that does not check, nor either for refusing where the
task asks for a decision on facts), and answers stuffed with every value seen."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.policies.adversaries._kit import Adversary, calls, fill, sweep, values
from simforge.policies.adversaries.canned import CLAIM, REFUSAL

MENTIONED_VALUES = 18
"""Values a targeted stuffer lists: under the default ``answer_stuffing`` bound (20), so that
bound alone cannot be what stops it."""


def mentioned_reads(adv: Adversary) -> list[dict[str, Any]]:
    """One ``get_*`` per id the instruction names, where a tool takes that id."""
    pairs = []
    for tool in adv.tools:
        if not str(tool["name"]).startswith("get_"):
            continue
        args = fill(tool, adv.ids, adv.emails)
        if args:
            pairs.append((tool["name"], args))
    return [calls(pairs[i : i + 8]) for i in range(0, len(pairs), 8)]


class RefuseAfterReads(Adversary):
    name: ClassVar[str] = "refuse-after-reads"
    exploit: ClassVar[str] = "reads what the instruction names, then the canned refusal"

    def make_plan(self) -> list[dict[str, Any]]:
        return mentioned_reads(self)

    def answer(self) -> Any:
        return {"final_answer": REFUSAL}


class StuffMentioned(Adversary):
    name: ClassVar[str] = "stuff-mentioned"
    exploit: ClassVar[str] = "reads what the instruction names; refuses and lists every value"

    def make_plan(self) -> list[dict[str, Any]]:
        return mentioned_reads(self)

    def answer(self) -> Any:
        listed = ", ".join(values(self.seen, MENTIONED_VALUES))
        return {"final_answer": f"{REFUSAL} For the record: {listed}."}


class StuffAll(Adversary):
    name: ClassVar[str] = "stuff-all"
    exploit: ClassVar[str] = "reads everything reachable; claims success, lists every value"

    def make_plan(self) -> list[dict[str, Any]]:
        return sweep(self.tools, self.ids, self.emails)

    def answer(self) -> Any:
        return {"final_answer": f"{CLAIM} The answer is one of: {', '.join(values(self.seen))}."}
