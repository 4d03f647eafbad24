"""An external harness: simforge serves the session's tools, runs the program per episode, and
scores what it did; the program's token opens its own session's tools and nothing else."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

import simforge
from simforge.policies.harness import HarnessPolicy
from simforge.runs.episode import play_episode

pytest.importorskip("simforge.serve.app", reason="the serve layer is not available")

MINI = str(Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "mini.yaml")

AGENT = """\
import json, os, sys, urllib.error, urllib.request

tools, token = os.environ["SIMFORGE_TOOLS_URL"], os.environ["SIMFORGE_TOOL_TOKEN"]
mode = sys.argv[1]


def post(url, body, auth=token):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {auth}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


if mode == "probe":  # what the token must not open
    base = os.environ["SIMFORGE_BASE_URL"]
    assert "SIMFORGE_TOKEN" not in os.environ
    assert post(f"{base}/sessions", {})[0] == 403
    assert post(f"{base}/tools/get_customer", {"customer_id": "C-0003"})[0] == 403
    assert post(f"{base}/s/default/tools/get_customer", {"customer_id": "C-0003"})[0] == 401
    assert post(f"{tools}/get_customer", {"customer_id": "C-0003"}, auth="wrong")[0] == 401
    sys.exit(3)
if mode == "hang":
    import time
    time.sleep(60)
assert "C-0003" in os.environ["SIMFORGE_TASK"]
assert os.environ["SIMFORGE_TASK_ID"] == "upgrade"
catalog = json.load(open(os.environ["SIMFORGE_TOOLS_FILE"]))
assert "upgrade_customer" in {t["function"]["name"] for t in catalog}
status, customer = post(f"{tools}/get_customer", {"customer_id": "C-0003"})
assert status == 200 and customer["id"] == "C-0003", (status, customer)
post(f"{tools}/upgrade_customer", {"customer_id": "C-0003"})
if mode == "solve":
    assert post(os.environ["SIMFORGE_FINISH_URL"], {"answer": "C-0003 is now on the gold tier."})[0] == 200
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    script = tmp_path_factory.mktemp("harness") / "agent.py"
    script.write_text(AGENT)

    def make(mode: str, **kwargs) -> HarnessPolicy:
        return HarnessPolicy(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {mode}",
                             **kwargs)

    return make


def test_a_harness_solves_the_task_over_http(harness):
    policy = harness("solve")
    env = simforge.make(MINI)
    try:
        first = play_episode(env, policy, seed=0, task="upgrade")
        second = play_episode(env, policy, seed=1, task="upgrade", faults="none")
    finally:
        policy.close()
    for outcome in (first, second):
        assert outcome.result.reward == 1.0 and outcome.result.terminated
        assert [c.tool for c in outcome.trajectory.tool_calls] == ["get_customer",
                                                                  "upgrade_customer"]
        assert outcome.trajectory.metadata["harness"]["exit_code"] == 0


def test_a_harness_that_exits_without_answering_is_scored_as_it_stands(harness):
    policy = harness("silent")
    try:
        outcome = play_episode(simforge.make(MINI), policy, seed=0, task="upgrade")
    finally:
        policy.close()
    assert outcome.result.reward == 0.0  # the upgrade landed, but nobody told the customer
    assert "required_outputs" in outcome.result.failed


def test_the_tool_token_opens_only_its_own_session(harness):
    policy = harness("probe")
    try:
        outcome = play_episode(simforge.make(MINI), policy, seed=0, task="upgrade")
    finally:
        policy.close()
    meta = outcome.trajectory.metadata["harness"]
    assert meta["exit_code"] == 3, meta["stderr_tail"]
    assert outcome.trajectory.tool_calls == []


def test_a_hanging_harness_is_killed_at_the_timeout(harness):
    policy = harness("hang", timeout=1.0)
    try:
        outcome = play_episode(simforge.make(MINI), policy, seed=0, task="upgrade")
    finally:
        policy.close()
    assert outcome.trajectory.metadata["harness"]["timed_out"] is True
    assert outcome.result.reward == 0.0


def test_a_harness_needs_a_command(monkeypatch):
    monkeypatch.delenv("SIMFORGE_HARNESS_COMMAND", raising=False)
    with pytest.raises(ValueError, match="needs a command"):
        HarnessPolicy()
