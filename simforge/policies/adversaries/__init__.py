"""Adversaries: agents that hunt for unearned reward, one exploit class each, so that the audit
finds a hackable task before anyone trains on it (about 1% of cheatable tasks is enough to
contaminate a round of RL training).

Each is an ordinary, unprivileged policy (it sees what any agent sees), in a small file of its
own, registered in :data:`ADVERSARIES` and reachable as the policy spec ``adversary:NAME``
(``simforge run SCENARIO --policy adversary:canned-refusal``). ``simforge audit`` plays every
one on every task (the ``adversaries`` check) and rejects a task on which any scores above the
floor (the no-op's reward), or above zero on a task whose correct outcome changes nothing.

| name | exploit |
|---|---|
| ``canned-refusal`` | no call; one policy-sounding refusal that names every common reason |
| ``canned-claim`` | no call; "done, all completed" |
| ``parrot`` | no call; the instruction said back as done |
| ``refuse-after-reads`` | reads what the instruction names, then the canned refusal |
| ``stuff-mentioned`` | reads what the instruction names, then refuses and lists every value seen |
| ``stuff-all`` | reads everything reachable, then claims success and lists every value seen |
| ``write-all`` | calls every write tool with plausible arguments, then claims success |
| ``name-probe`` | unknown, unlisted and case-mangled tool names, then claims success |
| ``surface-probe`` | the ids, numbers and dates the agent-facing text holds, as the answer |
| ``message-spam`` | floods the user with messages until the conversation ends on a claim |
"""

from __future__ import annotations

from collections.abc import Callable

from simforge.policies.adversaries._kit import Adversary
from simforge.policies.adversaries.canned import CannedClaim, CannedRefusal, Parrot
from simforge.policies.adversaries.probes import NameProbe, SurfaceProbe
from simforge.policies.adversaries.readers import RefuseAfterReads, StuffAll, StuffMentioned
from simforge.policies.adversaries.spam import MessageSpam
from simforge.policies.adversaries.writers import WriteAll

ADVERSARIES: dict[str, Callable[[], Adversary]] = {
    cls.name: cls
    for cls in (
        CannedRefusal,
        CannedClaim,
        Parrot,
        RefuseAfterReads,
        StuffMentioned,
        StuffAll,
        WriteAll,
        NameProbe,
        SurfaceProbe,
        MessageSpam,
    )
}


def build_adversary(name: str) -> Adversary:
    from simforge.config import NotFound

    factory = ADVERSARIES.get(name)
    if factory is None:
        raise NotFound(f"unknown adversary {name!r}; known: {sorted(ADVERSARIES)}")
    return factory()


__all__ = ["ADVERSARIES", "Adversary", "build_adversary"]
