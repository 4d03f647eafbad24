from __future__ import annotations

import pytest

from simforge.faults import FaultProfile
from simforge.sim import CallRequest, Session
from simforge.tools import Constant


@pytest.fixture
def make_session(mini_pack):
    """A mini-pack session under a profile built from rule dicts."""

    def build(rules=(), *, seed=0, background=(), call_timeout=30.0, capacity=None, latency=0.1):
        profile = FaultProfile.model_validate(
            {"name": "test", "rules": list(rules), "background": list(background)}
        )
        tools = dict(mini_pack.catalog)
        tools["get_customer"] = tools["get_customer"].with_spec(
            capacity=capacity, latency=Constant(seconds=latency)
        )
        return Session(
            tools, mini_pack.world(), seed=seed, faults=profile, call_timeout=call_timeout
        )

    return build


def get(i: int = 1) -> CallRequest:
    return CallRequest("get_customer", {"customer_id": f"C-{i:04d}"})


def upgrade(i: int = 1) -> CallRequest:
    return CallRequest("upgrade_customer", {"customer_id": f"C-{i:04d}"})
