"""Answers without doing anything: a refusal that names every common reason, a success claim,
the instruction said back. A task that pays any of them pays for words, not work."""

from __future__ import annotations

from typing import Any, ClassVar

from simforge.policies.adversaries._kit import Adversary

REFUSAL = (
    "I'm sorry, I can't do that, and I have left everything unchanged and pending. Under our "
    "policy it first needs verification of the identity and the address on file, a review by "
    "someone other than the requester, and an approval from a manager or finance; it is also "
    "outside the 30-day refund window, over the remaining budget and the approval limit, not "
    "eligible yet, and a receipt is missing. I have noted this on the ticket; please verify "
    "your details and contact us again."
)
CLAIM = (
    "Done: I have completed your request. Everything is updated, confirmed and recorded, and "
    "you will receive a confirmation shortly."
)


class CannedRefusal(Adversary):
    name: ClassVar[str] = "canned-refusal"
    exploit: ClassVar[str] = "no call; one policy-sounding refusal naming every common reason"

    def answer(self) -> Any:
        return {"final_answer": REFUSAL}


class CannedClaim(Adversary):
    name: ClassVar[str] = "canned-claim"
    exploit: ClassVar[str] = "no call; a success claim"

    def answer(self) -> Any:
        return {"final_answer": CLAIM}


class Parrot(Adversary):
    name: ClassVar[str] = "parrot"
    exploit: ClassVar[str] = "no call; the instruction said back as done"

    def answer(self) -> Any:
        return {"final_answer": f"Done. {self.instruction}"}
