"""The policies a run builds from a spec: every one of :mod:`simforge.policies.specs`, and
``harness`` / ``harness:COMMAND``, an external program driven through a served session
(:mod:`simforge.runs.harness`), which needs the serving stack and so lives in this layer.

The CLI, the stress workers and the audit build policies here, so a spec means the same to all
of them.
"""

from __future__ import annotations

from collections.abc import Callable

from simforge.policies.base import Policy
from simforge.policies.specs import POLICIES as _POLICIES
from simforge.policies.specs import WITH_ARGUMENT as _WITH_ARGUMENT
from simforge.policies.specs import build_policy as _build_policy
from simforge.runs.harness import HarnessPolicy

POLICIES: dict[str, Callable[[], Policy]] = {**_POLICIES, "harness": HarnessPolicy}
"""Every policy built from its name alone (``harness`` takes its command from
``$SIMFORGE_HARNESS_COMMAND``)."""

WITH_ARGUMENT: dict[str, Callable[[str], Policy]] = {**_WITH_ARGUMENT, "harness": HarnessPolicy}
"""Every policy built from ``NAME:ARGUMENT``."""


def build_policy(spec: str) -> Policy:
    """The policy a spec names; ``UsageError``/``NotFound`` with the reason when it cannot be."""
    return _build_policy(spec, policies=POLICIES, with_argument=WITH_ARGUMENT)
