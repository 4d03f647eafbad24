"""Ground truth never reaches the agent. Every shipped scenario is copied with canary strings
planted in its ground truth (an extra expected output, the task's metadata, validator settings,
rubric weights), then at least 1,000 episodes of it run across policies (oracle, no-op, cheater,
a random prober), seeds and fault profiles (none, flaky-network, hostile-content). Every
observation, every info dict, every tool description and every tool error is scanned.

``info["score"]`` is excluded on purpose: it is the scorer's output, handed to the trainer once
the episode is over, and its evidence may name expected values (a field-level diff must). The
test checks that the canary does appear there, which proves the plant is live and the scan
would have caught a leak.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

import simforge.env as simenv
from simforge.policies import get_policy
from simforge.policies.cheater import CheaterPolicy

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "scenarios").rglob("*.yaml"))
PROFILES = ("none", "flaky-network", "hostile-content")
EPISODES_PER_SCENARIO = 1000
MARK = b"CANARY-"


class RandomProber:
    """Calls random catalog tools with ids from the instruction (and junk), then answers."""

    name = "random-prober"
    privileged = False

    def reset(self, observation: dict[str, Any], *, task: Any = None, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.tools = [t["function"] for t in observation["tools"]]
        self.ids = [w.strip(".,") for w in observation["task"]["instruction"].split() if "-" in w]
        self.left = self.rng.randint(1, 4)

    def act(self, observation: dict[str, Any]) -> Any:
        if self.left <= 0:
            return {"final_answer": "I tried my best."}
        self.left -= 1
        calls = []
        for _ in range(self.rng.randint(1, 3)):
            tool = self.rng.choice(self.tools)
            args = {
                p: (self.rng.choice(self.ids) if self.ids and p.endswith("_id") else "x")
                for p in tool["parameters"].get("required", [])
            }
            calls.append({"name": tool["name"], "arguments": args})
        return {"tool_calls": calls}


def _plant(path: Path, out_dir: Path) -> tuple[Path, str]:
    data = yaml.safe_load(path.read_text())
    token = "CANARY-" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    for task in data["tasks"]:
        expected = task.setdefault("expected", {})
        expected.setdefault("outputs", []).append(f"{token}-{task['id']}")
        task.setdefault("metadata", {})["answer_key"] = token
        task.setdefault("validators", []).append(
            {"name": "honeypot", "params": {"tools": [f"{token.lower()}_*"]}}
        )
    data.setdefault("rubric", {}).setdefault("weights", {})[token] = 1.0
    data.setdefault("validators", []).append(
        {"name": "action_sequence", "params": {"calls": [{"tool": token}]}}
    )
    copy = out_dir / f"{path.parent.name}-{path.name}"
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy, token


def _policies() -> list[Any]:
    return [get_policy("oracle"), get_policy("noop"), CheaterPolicy(), RandomProber()]


def _scan(blob: Any, where: str) -> None:
    data = orjson.dumps(blob, default=str)
    assert MARK not in data, f"ground truth leaked into {where}: {data[:300]!r}"


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_no_canary_reaches_any_agent_facing_surface(path: Path, tmp_path: Path) -> None:
    copy, token = _plant(path, tmp_path)
    env = simenv.make(str(copy))
    tasks = [t.id for t in env.scenario.tasks]
    per_seed = len(tasks) * len(PROFILES) * 4
    seeds = range(-(-EPISODES_PER_SCENARIO // per_seed))
    episodes = 0
    scored_with_canary = 0
    for seed in seeds:
        for task in tasks:
            for profile in PROFILES:
                for policy in _policies():
                    obs, info = env.reset(seed=seed, options={"task": task, "faults": profile})
                    _scan(obs, "the reset observation (instruction, tool descriptions)")
                    _scan(info, "the reset info")
                    policy.reset(obs, task=env.task if policy.privileged else None, seed=seed)
                    done = False
                    while not done:
                        obs, _, terminated, truncated, info = env.step(policy.act(obs))
                        done = terminated or truncated
                        _scan(obs, f"a step observation ({policy.name}, {profile})")
                        _scan({k: v for k, v in info.items() if k != "score"}, "a step info")
                    scored_with_canary += token.encode() in orjson.dumps(info["score"])
                    episodes += 1
    assert episodes >= EPISODES_PER_SCENARIO
    assert scored_with_canary == episodes  # the plant is live: the scorer holds it
