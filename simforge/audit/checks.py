"""The audit's checks: each takes one task of one scenario and says keep or reject, with why.

A check is a function ``check(ctx) -> list[Finding]`` registered in ``CHECKS``; an empty list is
a pass. Each works through the public env API, as an agent or a harness would, so a check that
passes here holds for every way simforge serves the task.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simforge.audit.context import AuditContext, Episode, is_distinctive
from simforge.faults.library import resolve_profile
from simforge.scoring import Rubric, combine

Check = Callable[[AuditContext], list[str]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = fn
        return fn

    return register


@dataclass
class CheckResult:
    check: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    """What a check measured beyond keep or reject (``adversaries``: each one's best reward)."""


@check("solvable")
def solvable(ctx: AuditContext) -> list[str]:
    """The oracle reaches the maximum reward on every audit seed."""
    if not ctx.task.oracle:
        return ["the task has no oracle solution to prove it solvable"]
    out = []
    for ep in ctx.episodes("oracle"):
        if ep.reward != 1.0:
            why = ep.invalid_reason or ", ".join(ep.failed) or "reward below 1"
            out.append(f"oracle scored {ep.reward} on seed {ep.seed} ({why})")
    return out


@check("floor_gap")
def floor_gap(ctx: AuditContext) -> list[str]:
    """The no-op (and the random policy, where registered) score far below the maximum."""
    out = []
    for policy in ctx.floor_policies():
        rewards = [ep.reward or 0.0 for ep in ctx.episodes(policy)]
        mean = sum(rewards) / len(rewards)
        if mean > 1.0 - ctx.config.floor_gap:
            out.append(
                f"{policy} scores {mean:.2f} on average; "
                f"the gap to 1.0 is under {ctx.config.floor_gap}"
            )
    return out


@check("determinism")
def determinism(ctx: AuditContext) -> list[str]:
    """reset(seed) twice gives the same observation; the same actions give the same trajectory,
    reward and verdicts."""
    out = []
    seed = ctx.seeds[0]
    first, second = ctx.fresh_env(), ctx.fresh_env()
    if (
        first.reset(seed=seed, options=ctx.options())[0]
        != second.reset(seed=seed, options=ctx.options())[0]
    ):
        out.append(f"two resets with seed {seed} gave different observations")
    who = ctx.reference_policy()
    a, b = ctx.play(who, seed, fresh=True), ctx.play(who, seed, fresh=True)
    if a.trajectory != b.trajectory:
        out.append(f"the {who}'s actions gave two different trajectories on seed {seed}")
    if a.reward != b.reward or a.verdicts != b.verdicts:
        out.append(
            f"the same trajectory was scored differently on seed {seed}: {a.reward} vs {b.reward}"
        )
    return out


@check("leak_free")
def leak_free(ctx: AuditContext) -> list[str]:
    """Ground truth never reaches the agent: canaries planted in the expected answers never
    appear in any observation; expected values never appear in tool descriptions, in the policy
    the agent is given, on the served surfaces (OpenAPI, ``/metadata``, ``/schema``, MCP's tool
    list), or in error texts the agent did not provoke by sending them; the cheater scores 0."""
    out = []
    canary_hits = ctx.canary_scan()
    out += [f"canary {c!r} reached the agent in {where}" for c, where in canary_hits]
    values = ctx.distinctive_expected_values()
    instruction = ctx.task.instruction + " " + " ".join(ctx.task.user_turns)
    for tool in ctx.catalog():
        text = str(tool)
        for value in values:
            if value in text and value not in instruction:
                out.append(
                    f"tool {tool['function']['name']!r} description or schema holds "
                    f"expected value {value!r}"
                )
    for surface, text in ctx.agent_surfaces().items():
        for value in values:
            if _holds(text, value) and not _holds(instruction, value):
                out.append(f"{surface} holds expected value {value!r}")
    for ep in ctx.standard_episodes():
        for call, error in ep.errors:
            sent = str(call.get("arguments"))
            for value in values:
                if value in error and value not in sent and value not in instruction:
                    out.append(
                        f"an error of {call.get('name')!r} holds expected value {value!r}: "
                        f"{error[:120]}"
                    )
                    break
    if "cheater" in ctx.registered_policies():
        best = max((ep.reward or 0.0 for ep in ctx.episodes("cheater")), default=0.0)
        if best > 0.0:
            out.append(f"the cheater policy scored {best}")
    return sorted(set(out))


@check("fault_sanity")
def fault_sanity(ctx: AuditContext) -> list[str]:
    """Each rule of the task's declared profiles fires at its configured rate within a binomial
    bound, and a retrying oracle still solves the task under every declared profile."""
    out = []
    for name in ctx.scenario.faults.profiles:
        if name == "none":
            continue
        profile = resolve_profile(name, ctx.loaded.profiles)
        runs = ctx.episodes("retrying", faults=name)
        unsolved = [ep.seed for ep in runs if ep.reward != 1.0]
        if unsolved:
            out.append(
                f"a retrying oracle does not solve the task under {name!r} (seeds {unsolved[:5]})"
            )
        for rule in profile.rules:
            eligible, fired, window_closed = ctx.rule_counts(rule, runs)
            if eligible == 0:
                continue
            if window_closed == eligible:
                out.append(
                    f"{name}: rule {rule.id!r} never fires: "
                    "its window never opens during the episodes"
                )
                continue
            n, p = eligible - window_closed, rule.probability
            if p in (0.0, 1.0) or rule.fault.kind in ("rate_limit", "flapping"):
                continue
            bound = 4.0 * math.sqrt(n * p * (1 - p)) + 1.0
            if abs(fired - n * p) > bound:
                out.append(f"{name}: rule {rule.id!r} fired {fired} of {n} calls; configured p={p}")
    return out


@check("reward_well_formed")
def reward_well_formed(ctx: AuditContext) -> list[str]:
    """Rewards are in [0, 1] or invalid with a reason; the breakdown adds up to the reward."""
    out = []
    rubric = Rubric(**ctx.scenario.rubric.model_dump())
    ctx.standard_episodes()
    for ep in ctx.all_episodes():
        if ep.reward is None:
            if not ep.invalid_reason:
                out.append(f"{ep.policy} seed {ep.seed}: invalid without a reason")
            continue
        if not 0.0 <= ep.reward <= 1.0 or math.isnan(ep.reward):
            out.append(f"{ep.policy} seed {ep.seed}: reward {ep.reward} outside [0, 1]")
            continue
        recomputed = combine(ep.verdict_models(), rubric)
        if not math.isclose(recomputed, ep.reward, abs_tol=1e-6):
            out.append(
                f"{ep.policy} seed {ep.seed}: reward {ep.reward} but the verdicts give {recomputed}"
            )
        failed = sorted(v["name"] for v in ep.verdicts if not v["passed"])
        if failed != sorted(ep.failed):
            out.append(
                f"{ep.policy} seed {ep.seed}: failed list {ep.failed} does not match the verdicts"
            )
    return sorted(set(out))


@check("gymnasium")
def gymnasium_api(ctx: AuditContext) -> list[str]:
    """The Gymnasium adapter passes ``gymnasium.utils.env_checker.check_env``."""
    from gymnasium.utils.env_checker import check_env

    from simforge.env.gym import SimforgeGymEnv

    try:
        check_env(SimforgeGymEnv(ctx.fresh_env()), skip_render_check=True)
    except Exception as exc:  # the checker raises many kinds; each is a finding, not a crash
        return [f"check_env: {type(exc).__name__}: {exc}"]
    return []


@check("agent_ready")
def agent_ready(ctx: AuditContext) -> list[str]:
    """What a real agent is handed fits the APIs it runs on: at most 128 tools (what one
    chat-completions request may carry), and a reference solution that speaks to the user no
    more often than the scripted user answers (a message past the last scripted turn ends the
    conversation, so the oracle's later steps would never run)."""
    from simforge.scenario.offer import MAX_TOOLS

    out = []
    offered = len(ctx.loaded.tools(ctx.task.id))
    if offered > MAX_TOOLS:
        out.append(f"offers {offered} tools; one chat-completions request takes at most "
                   f"{MAX_TOOLS} (name the task's tools: in the scenario)")
    messages = sum(1 for step in ctx.task.oracle if step.message is not None)
    turns = len(ctx.task.user_turns)
    if messages > turns:
        out.append(f"the oracle sends {messages} messages to a user with {turns} scripted "
                   f"turns; the conversation would end at message {turns + 1}")
    return out


@check("adversaries")
def adversaries(ctx: AuditContext) -> list[str]:
    """No adversary (``simforge/policies/adversaries``: canned refusals and claims, parroting,
    refusing after reads, stuffed answers, writing everything, probing tool names and the
    agent-facing text, flooding the user) scores above the floor, the no-op's best reward, on
    any audit seed; on a task whose correct outcome changes nothing (the oracle's episodes leave
    the world as it was), none scores above zero."""
    from simforge.policies.adversaries import ADVERSARIES

    floor = max((ep.reward or 0.0 for ep in ctx.episodes("noop")), default=0.0)
    changes_nothing = bool(ctx.task.oracle) and all(
        not json.loads(ep.trajectory)["simulation"]["world_diff"]
        for ep in ctx.episodes("oracle")
    )
    bar = 0.0 if changes_nothing else floor
    out = []
    rewards: dict[str, float] = {}
    for name in ADVERSARIES:
        episodes = ctx.episodes(f"adversary:{name}")
        best = max(episodes, key=lambda ep: ep.reward or 0.0)
        rewards[name] = best.reward or 0.0
        if (best.reward or 0.0) > bar + 1e-9:
            through = [
                v["name"] for v in best.verdicts if v["passed"] and v["category"] == "correctness"
            ]
            what = "changes nothing, so the bar is 0" if changes_nothing else f"floor {floor:g}"
            out.append(
                f"adversary {name!r} scored {best.reward:g} on seed {best.seed} ({what}); "
                f"passed: {', '.join(through) or 'no correctness check'}; "
                f"failed: {', '.join(best.failed) or 'nothing'}"
            )
    ctx.details["adversaries"] = {"floor": bar, "rewards": rewards}
    return out


def _holds(text: str, value: str) -> bool:
    """``value`` appears in ``text`` as a whole token (``10000`` is not in ``1000000``)."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text) is not None


__all__ = ["CHECKS", "CheckResult", "Episode", "check", "is_distinctive"]


def describe(name: str) -> str:
    fn: Any = CHECKS[name]
    return " ".join((fn.__doc__ or "").split())
