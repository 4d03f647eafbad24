"""Running one episode: a policy against an environment, start to end."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from simforge.env.core import SimforgeEnv
from simforge.policies.base import Policy


@dataclass
class EpisodeResult:
    scenario: str
    task: str
    seed: int
    policy: str
    reward: float | None
    terminated: bool
    truncated: bool
    steps: int
    sim_time: float
    failed: list[str] = field(default_factory=list)
    invalid_reason: str | None = None
    faults: str = "none"
    faults_injected: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_episode(
    env: SimforgeEnv,
    policy: Policy,
    *,
    seed: int,
    task: str | None = None,
    faults: str | None = None,
) -> EpisodeResult:
    options: dict[str, Any] = {"policy": policy.name}
    if task is not None:
        options["task"] = task
    if faults is not None:
        options["faults"] = faults
    obs, info = env.reset(seed=seed, options=options)
    policy.reset(obs, task=env.task if policy.privileged else None, seed=seed)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _reward, terminated, truncated, info = env.step(policy.act(obs))
    result = env.score()
    trajectory = env.trajectory()
    sim = trajectory.simulation
    assert sim is not None
    return EpisodeResult(
        scenario=env.scenario.id,
        task=info["task"],
        seed=seed,
        policy=policy.name,
        reward=result.reward,
        terminated=terminated,
        truncated=truncated,
        steps=info["step"],
        sim_time=round(info["time"], 6),
        failed=result.failed,
        invalid_reason=result.invalid_reason,
        verdicts=[v.model_dump() for v in result.verdicts],
        faults=sim.fault_profile,
        faults_injected=[
            {"kind": f.kind, "tool": f.tool, "call_index": f.call_index, "sim_time": f.sim_time}
            for f in sim.faults
        ],
    )
