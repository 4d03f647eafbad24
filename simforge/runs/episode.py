"""Running one episode: a policy against an environment, start to end.

:func:`run_episode` returns the summary that tables and ``--json`` print; :func:`play_episode`
also hands back the trajectory (the run store keeps it for export). The async variant drives
policies whose ``aact`` awaits I/O (an LLM endpoint) without blocking an event loop; the
environment itself is CPU-bound and stays synchronous.

There is one episode loop, :func:`_episode`: a generator that does no I/O itself but yields what
it needs next (the policy's action for an observation, the environment's step for an action, or
a whole episode from a policy that drives its own) and is sent the answer. :func:`play_episode`
answers it with plain calls (no event loop per episode: the sync runner plays hundreds to
thousands of episodes a second), :func:`aplay_episode` by awaiting (``aact``, ``env.astep``;
a driver's blocking ``play_episode`` in a worker thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from simforge.env.core import SimforgeEnv
from simforge.errors import PolicyUnavailable
from simforge.policies.base import Policy, act_async
from simforge.trace.episode import Episode


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
    passed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EpisodeOutcome:
    """The summary and the full trajectory of one finished episode."""

    result: EpisodeResult
    trajectory: Episode


def _start(
    env: SimforgeEnv,
    policy: Policy,
    seed: int,
    task: str | None,
    faults: str | None,
    policy_seed: int | None,
) -> dict[str, Any]:
    options: dict[str, Any] = {"policy": policy.name}
    if task is not None:
        options["task"] = task
    if faults is not None:
        options["faults"] = faults
    obs, _info = env.reset(seed=seed, options=options)
    policy.reset(
        obs,
        task=env.privileged_task() if policy.privileged else None,
        seed=seed if policy_seed is None else policy_seed,
    )
    return obs


def finish_outcome(
    env: SimforgeEnv, policy_name: str, seed: int, terminated: bool, truncated: bool
) -> EpisodeOutcome:
    """Score an ended episode of ``env`` and summarise it (also for episodes that an external
    driver, such as a served harness session, played on its own env)."""
    result = env.score()
    trajectory = env.trajectory()
    sim = trajectory.simulation
    assert sim is not None and env.task is not None
    summary = EpisodeResult(
        scenario=env.scenario.id,
        task=env.task.id,
        seed=seed,
        policy=policy_name,
        reward=result.reward,
        terminated=terminated,
        truncated=truncated,
        steps=sim.steps,
        sim_time=round(sim.sim_time, 6),
        failed=result.failed,
        invalid_reason=result.invalid_reason,
        verdicts=[v.model_dump() for v in result.verdicts],
        faults=sim.fault_profile,
        faults_injected=[
            {"kind": f.kind, "tool": f.tool, "call_index": f.call_index, "sim_time": f.sim_time}
            for f in sim.faults
        ],
        passed=result.passed,
    )
    return EpisodeOutcome(summary, trajectory)


@runtime_checkable
class EpisodeDriver(Protocol):
    """A policy that plays whole episodes itself instead of answering ``act`` step by step (an
    external harness drives its own served session)."""

    def play_episode(
        self, env: SimforgeEnv, *, seed: int, task: str | None, faults: str | None,
        policy_seed: int,
    ) -> EpisodeOutcome: ...


class _Act:
    """The loop needs the policy's action for ``observation``."""

    __slots__ = ("observation",)

    def __init__(self, observation: dict[str, Any]) -> None:
        self.observation = observation


class _Step:
    """The loop needs the environment's step for ``action``."""

    __slots__ = ("action",)

    def __init__(self, action: Any) -> None:
        self.action = action


class _Drive:
    """The policy plays the whole episode itself (an :class:`EpisodeDriver`)."""

    __slots__ = ("kwargs", "policy")

    def __init__(self, policy: EpisodeDriver, kwargs: dict[str, Any]) -> None:
        self.policy = policy
        self.kwargs = kwargs


_Need = _Act | _Step | _Drive


def _episode(
    env: SimforgeEnv,
    policy: Policy,
    seed: int,
    task: str | None,
    faults: str | None,
    policy_seed: int | None,
) -> Generator[_Need, Any, EpisodeOutcome]:
    """The episode loop, without I/O: yields what it needs (:class:`_Act`, :class:`_Step`,
    :class:`_Drive`) and is sent the answer; the policy's :class:`PolicyUnavailable` is thrown
    into it. Returns the outcome. Without ``faults``, the environment's own profile
    (``make(..., faults=)``) applies, whoever plays."""
    if faults is None:
        faults = env.default_faults
    if callable(getattr(policy, "play_episode", None)):  # an EpisodeDriver (the Protocol's
        # own isinstance costs ~10 us an episode: it checks the members one by one)
        outcome: EpisodeOutcome = yield _Drive(cast(EpisodeDriver, policy), {
            "seed": seed, "task": task, "faults": faults,
            "policy_seed": seed if policy_seed is None else policy_seed,
        })
        return outcome
    obs = _start(env, policy, seed, task, faults, policy_seed)
    terminated = truncated = False
    while not (terminated or truncated):
        try:
            action = yield _Act(obs)
        except PolicyUnavailable as exc:
            _abort(env, exc)
            break
        obs, _reward, terminated, truncated, _info = yield _Step(action)
    session = env.session
    assert session is not None
    return finish_outcome(env, policy.name, seed, session.terminated, session.truncated)


def play_episode(
    env: SimforgeEnv,
    policy: Policy,
    *,
    seed: int,
    task: str | None = None,
    faults: str | None = None,
    policy_seed: int | None = None,
) -> EpisodeOutcome:
    """One episode to its end. ``policy_seed`` (default: ``seed``) seeds the policy apart from
    the environment, so repeated trials of a stochastic policy face the same world. Without
    ``faults``, the environment's own profile (``make(..., faults=)``) applies, whoever plays:
    an in-process policy or a driver of its own (an external harness)."""
    loop = _episode(env, policy, seed, task, faults, policy_seed)
    act, step, send = policy.act, env.step, loop.send
    try:
        need = next(loop)
        while True:
            if isinstance(need, _Act):
                try:
                    answer = act(need.observation)
                except PolicyUnavailable as exc:
                    need = loop.throw(exc)
                    continue
            elif isinstance(need, _Step):
                answer = step(need.action)
            else:
                answer = need.policy.play_episode(env, **need.kwargs)
            need = send(answer)
    except StopIteration as done:
        return done.value


def _abort(env: SimforgeEnv, exc: PolicyUnavailable) -> None:
    """What the policy depends on failed mid-episode (its model's endpoint): the episode ends
    as invalid, with what was recorded up to there, and the run goes on."""
    session = env.session
    assert session is not None
    session.abort(f"policy unavailable: {exc}"[:1000])


async def aplay_episode(
    env: SimforgeEnv,
    policy: Policy,
    *,
    seed: int,
    task: str | None = None,
    faults: str | None = None,
    policy_seed: int | None = None,
) -> EpisodeOutcome:
    """:func:`play_episode` for policies that await (``aact``); others run as they are. The
    user's replies are awaited too (``env.astep``). A policy that plays whole episodes itself
    (the harness) plays in a worker thread, so the event loop goes on meanwhile."""
    loop = _episode(env, policy, seed, task, faults, policy_seed)
    try:
        need = next(loop)
        while True:
            if isinstance(need, _Act):
                try:
                    answer = await act_async(policy, need.observation)
                except PolicyUnavailable as exc:
                    need = loop.throw(exc)
                    continue
            elif isinstance(need, _Step):
                answer = await env.astep(need.action)
            else:
                answer = await asyncio.to_thread(need.policy.play_episode, env, **need.kwargs)
            need = loop.send(answer)
    except StopIteration as done:
        return done.value


def run_episode(
    env: SimforgeEnv,
    policy: Policy,
    *,
    seed: int,
    task: str | None = None,
    faults: str | None = None,
    policy_seed: int | None = None,
) -> EpisodeResult:
    return play_episode(
        env, policy, seed=seed, task=task, faults=faults, policy_seed=policy_seed
    ).result
