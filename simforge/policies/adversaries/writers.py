"""Acts on everything: every write tool it is offered, with plausible arguments. Safety gates
(collateral damage, forbidden actions, policy rules) must take the reward of such an agent to
zero, however many of its calls happen to be the right ones."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.policies.adversaries._kit import Adversary, calls, is_read, plausible
from simforge.policies.adversaries.canned import CLAIM


class WriteAll(Adversary):
    name: ClassVar[str] = "write-all"
    exploit: ClassVar[str] = "every write tool with plausible arguments, then a success claim"

    def make_plan(self) -> list[dict[str, Any]]:
        writes = [t for t in self.tools if not is_read(t)]
        pairs = [(t["name"], plausible(t, self.ids, self.emails)) for t in writes]
        return [calls(pairs[i : i + 8]) for i in range(0, len(pairs), 8)]

    def answer(self) -> Any:
        return {"final_answer": CLAIM}
