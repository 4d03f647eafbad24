"""An external harness: simforge serves the session's tools, runs the program per episode, and
scores what it did; the program's token opens its own session's tools and nothing else."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest

import simforge
from simforge.runs.episode import aplay_episode, play_episode
from simforge.runs.harness import HarnessPolicy

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


def test_the_async_runner_plays_the_harness_without_blocking_its_event_loop(harness):
    policy = harness("solve")
    env = simforge.make(MINI)

    async def main():
        play = asyncio.create_task(aplay_episode(env, policy, seed=0, task="upgrade"))
        ticks = 0
        while not play.done():  # the loop keeps running while the program plays
            ticks += 1
            await asyncio.sleep(0.005)
        return await play, ticks

    try:
        outcome, ticks = asyncio.run(main())
    finally:
        policy.close()
    assert ticks > 0
    assert outcome.result.reward == 1.0 and outcome.result.terminated
    assert outcome.result.policy == "harness"
    assert [c.tool for c in outcome.trajectory.tool_calls] == ["get_customer", "upgrade_customer"]
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


DIALOGUE = str(Path(MINI).with_name("mini_dialogue.yaml"))

TALKER = """\
import json, os, urllib.request

token = os.environ["SIMFORGE_TOOL_TOKEN"]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


policy = open(os.environ["SIMFORGE_POLICY_FILE"]).read()
assert "never guess" in policy, policy
names = {t["function"]["name"] for t in json.load(open(os.environ["SIMFORGE_TOOLS_FILE"]))}
assert {"get_customer", "upgrade_customer"} <= names
said = os.environ["SIMFORGE_MESSAGES_URL"]
reply = post(said, {"content": "Which customer id is yours?"})
assert reply["ended"] is False and "C-0003" in reply["user"], reply
customer = reply["user"].split()[-1].rstrip(".")
post(os.environ["SIMFORGE_TOOLS_URL"] + "/upgrade_customer", {"customer_id": customer})
reply = post(said, {"content": f"Done: {customer} is on the gold tier now."})
assert reply == {"user": None, "ended": True, "time": reply["time"], "step": 3}, reply
"""


def test_a_harness_talks_with_the_user_through_the_messages_url(tmp_path):
    script = tmp_path / "talker.py"
    script.write_text(TALKER)
    policy = HarnessPolicy(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    try:
        outcome = play_episode(simforge.make(DIALOGUE), policy, seed=0, task="ask-id")
    finally:
        policy.close()
    meta = outcome.trajectory.metadata["harness"]
    assert meta["exit_code"] == 0, meta["stderr_tail"]
    assert outcome.result.reward == 1.0
    assert [m.role for m in outcome.trajectory.messages] == [
        "user", "assistant", "user", "assistant", "tool", "assistant"]


def test_run_with_a_harness_injects_the_fault_profile(harness, tmp_path):
    """`run --policy harness:... --faults P` plays every episode under P (it used to run none)."""
    import json

    from typer.testing import CliRunner

    from simforge.cli import app

    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    command = f"harness:{shlex.quote(sys.executable)} {shlex.quote(str(script))} solve"
    result = CliRunner().invoke(app, ["run", MINI, "--policy", command, "--task", "upgrade",
                                      "--faults", "flaky-network", "--seeds", "20", "--json"])
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    assert len(episodes) == 20 and {e["faults"] for e in episodes} == {"flaky-network"}
    assert sum(len(e["faults_injected"]) for e in episodes) > 0
