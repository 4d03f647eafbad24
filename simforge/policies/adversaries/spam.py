"""Floods the user: messages until the conversation ends, the last of them a success claim, so
that whatever the scripted user says back is spent on nothing."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.policies.adversaries._kit import Adversary
from simforge.policies.adversaries.canned import CLAIM

MESSAGES = 12


class MessageSpam(Adversary):
    name: ClassVar[str] = "message-spam"
    exploit: ClassVar[str] = "messages to the user until the conversation ends on a claim"

    def make_plan(self) -> list[dict[str, Any]]:
        # every message is a claim: whichever one the conversation ends on is the answer
        asks = ["Can you confirm?", "Yes, go ahead.", "Anything else?", "Is that right?"]
        return [{"message": f"{CLAIM} {asks[i % len(asks)]}"} for i in range(MESSAGES)]

    def answer(self) -> Any:
        return {"message": CLAIM}
