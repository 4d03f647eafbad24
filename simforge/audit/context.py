"""What the audit's checks share for one task: episodes played once and reused, fresh
environments, a canary variant of the scenario, and the counts behind the fault checks."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from simforge.env.action import parse_action
from simforge.env.core import SimforgeEnv
from simforge.faults.rules import FaultRule
from simforge.runs.specs import POLICIES, build_policy
from simforge.scenario.model import Task
from simforge.scenario.registry import LoadedScenario
from simforge.scoring import Verdict


@dataclass(frozen=True)
class AuditConfig:
    seeds: int = 3
    fault_seeds: int = 10
    floor_gap: float = 0.5


@dataclass
class Episode:
    """One audit episode, with everything the agent saw."""

    policy: str
    seed: int
    faults: str
    reward: float | None
    failed: list[str]
    invalid_reason: str | None
    verdicts: list[dict[str, Any]]
    trajectory: str
    observations: list[str] = field(default_factory=list)
    errors: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    fired: list[dict[str, Any]] = field(default_factory=list)

    def verdict_models(self) -> list[Verdict]:
        return [Verdict.model_validate(v) for v in self.verdicts]


_SURFACES: dict[int, tuple[LoadedScenario, dict[str, str]]] = {}


def _served_surfaces(loaded: LoadedScenario) -> dict[str, str]:
    import asyncio

    import httpx

    from simforge.serve.app import create_app
    from simforge.serve.mcp_server import mcp_tools

    app = create_app(loaded, time_scale=0.0)

    async def fetch() -> dict[str, str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://audit") as client:
            return {
                f"served {path}": (await client.get(path)).text
                for path in ("/openapi.json", "/metadata", "/schema")
            }

    surfaces = asyncio.run(fetch())
    tools = mcp_tools(app.state.manager, None)
    surfaces["served MCP tools/list"] = json.dumps([t.model_dump(mode="json") for t in tools])
    return surfaces


class AuditContext:
    def __init__(self, loaded: LoadedScenario, task: Task, config: AuditConfig) -> None:
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.task = task
        self.config = config
        self.seeds = [*self.scenario.seeds[: config.seeds]]
        while len(self.seeds) < config.seeds:
            self.seeds.append(max(self.seeds, default=-1) + 1)
        self._cache: dict[tuple[str, str], list[Episode]] = {}
        self._env: SimforgeEnv | None = None
        self.details: dict[str, dict[str, Any]] = {}
        """What checks measured beyond keep or reject, by check name."""

    # -- environments and episodes ---------------------------------------------------------------

    def fresh_env(self, loaded: LoadedScenario | None = None) -> SimforgeEnv:
        return SimforgeEnv(loaded or self.loaded, task=self.task.id)

    def options(self, faults: str = "none", policy: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"task": self.task.id, "faults": faults}
        if policy is not None:
            options["policy"] = policy
        return options

    def reference_policy(self) -> str:
        """The oracle, or the no-op for a task without a reference solution (which the
        ``solvable`` check rejects, saying so; the other checks still run)."""
        return "oracle" if self.task.oracle else "noop"

    def registered_policies(self) -> list[str]:
        return sorted(POLICIES)

    def floor_policies(self) -> list[str]:
        return [p for p in ("noop", "random") if p in POLICIES]

    def episodes(self, policy: str, faults: str = "none") -> list[Episode]:
        key = (policy, faults)
        if key not in self._cache:
            seeds = self.seeds if faults == "none" else list(range(self.config.fault_seeds))
            self._cache[key] = [self.play(policy, seed, faults=faults) for seed in seeds]
        return self._cache[key]

    def standard_episodes(self) -> list[Episode]:
        """The oracle's, the floor policies' and (where registered) the cheater's episodes."""
        oracle = ["oracle"] if self.task.oracle else []  # `solvable` says what is missing
        names = [*oracle, *self.floor_policies(), *(["cheater"] if "cheater" in POLICIES else [])]
        return [ep for name in names for ep in self.episodes(name)]

    def all_episodes(self) -> list[Episode]:
        return [ep for eps in self._cache.values() for ep in eps]

    def play(
        self,
        policy_name: str,
        seed: int,
        *,
        faults: str = "none",
        fresh: bool = False,
        loaded: LoadedScenario | None = None,
    ) -> Episode:
        if fresh or loaded is not None:
            env = self.fresh_env(loaded)
        else:
            env = self._env = self._env or self.fresh_env()
        policy = build_policy(policy_name)
        obs, info = env.reset(seed=seed, options=self.options(faults, policy_name))
        policy.reset(obs, task=env.privileged_task() if policy.privileged else None, seed=seed)
        seen = [json.dumps(obs, sort_keys=True), json.dumps(info, sort_keys=True)]
        errors: list[tuple[dict[str, Any], str]] = []
        calls: list[dict[str, Any]] = []
        done = False
        while not done:
            action = policy.act(obs)
            try:
                issued = [
                    {"name": c.name, "arguments": c.arguments}
                    for c in parse_action(action).tool_calls
                ]
            except ValueError:
                issued = []
            obs, _reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            agent_info = {k: v for k, v in info.items() if k != "score"}
            seen += [json.dumps(obs, sort_keys=True), json.dumps(agent_info, sort_keys=True)]
            for call, result in zip(issued, obs.get("results", []), strict=False):
                calls.append(call)
                if not result.get("ok"):
                    errors.append((call, json.dumps(result.get("error"), sort_keys=True)))
        score = env.score()
        trajectory = env.trajectory()
        sim = trajectory.simulation
        return Episode(
            policy=policy_name,
            seed=seed,
            faults=faults,
            reward=score.reward,
            failed=score.failed,
            invalid_reason=score.invalid_reason,
            verdicts=[v.model_dump() for v in score.verdicts],
            trajectory=trajectory.model_dump_json(),
            observations=seen,
            errors=errors,
            calls=[
                {"tool": c.tool, "args": c.args, "started_at": c.started_at}
                for c in trajectory.tool_calls
            ],
            fired=[f.model_dump() for f in (sim.faults if sim else [])],
        )

    # -- leaks -----------------------------------------------------------------------------------

    def catalog(self) -> list[dict[str, Any]]:
        return self.loaded.pack.catalog.to_openai()

    def agent_surfaces(self) -> dict[str, str]:
        """Every agent-facing text of the scenario besides observations, tool results and the
        policy: what ``simforge serve`` answers anyone on ``/openapi.json``, ``/metadata``,
        ``/schema`` and MCP's ``tools/list`` (built once per scenario). The policy is left out
        on purpose: it states the rules answers follow (a credit of 20.00 for a late
        delivery), which is what an agent is meant to learn from it."""
        key = id(self.loaded)
        cached = _SURFACES.get(key)
        if cached is None or cached[0] is not self.loaded:
            cached = _SURFACES[key] = (self.loaded, _served_surfaces(self.loaded))
        return dict(cached[1])

    def canary(self) -> str:
        digest = hashlib.sha1(f"{self.scenario.id}/{self.task.id}".encode()).hexdigest()[:10]
        return f"CANARY-{digest}"

    def canary_scan(self) -> list[tuple[str, str]]:
        """Plant a canary in the task's expected outputs and scan every observation of the
        policies' episodes for it."""
        canary = self.canary()
        expected = self.task.expected.model_copy(
            update={"outputs": [*self.task.expected.outputs, canary]}
        )
        task = self.task.model_copy(update={"expected": expected})
        tasks = [task if t.id == task.id else t for t in self.scenario.tasks]
        variant = dataclasses.replace(
            self.loaded, scenario=self.scenario.model_copy(update={"tasks": tasks})
        )
        hits = []
        policies = [p for p in ("oracle", "noop", "cheater", "random")
                    if p in POLICIES and (p != "oracle" or self.task.oracle)]
        for policy in policies:
            for seed in self.seeds:
                ep = self.play(policy, seed, loaded=variant)
                for i, blob in enumerate(ep.observations):
                    if canary in blob:
                        hits.append((canary, f"observation {i} of {policy} seed {seed}"))
        return hits

    def distinctive_expected_values(self) -> list[str]:
        expected = self.task.expected
        values: list[Any] = [o for o in expected.outputs if not o.startswith("re:")]
        for rows in expected.state.values():
            for fields in rows.values():
                values.extend((fields or {}).values())
        for created in expected.created:
            values.extend(created.match.values())
        out = {
            str(v) for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)
        }
        return sorted(v for v in out if is_distinctive(v))

    # -- faults ----------------------------------------------------------------------------------

    def rule_counts(self, rule: FaultRule, runs: list[Episode]) -> tuple[int, int, int]:
        """(calls the rule could hit, times it fired, of those calls the ones outside its
        window) over the given episodes."""
        catalog = self.loaded.pack.catalog
        eligible = fired = closed = 0
        for ep in runs:
            index: dict[str, int] = {}
            for call in ep.calls:
                tool = call["tool"]
                k = index.get(tool, 0)
                index[tool] = k + 1
                spec = catalog[tool].spec if tool in catalog else None
                if (
                    spec is None
                    or not rule.applies_to(spec)
                    or not rule.target.matches_args(call["args"])
                ):
                    continue
                eligible += 1
                if not rule.when.open(call["started_at"] or 0.0, k):
                    closed += 1
            fired += sum(1 for f in ep.fired if f.get("rule") == rule.id)
        return eligible, fired, closed


_ID = re.compile(r"^[A-Z][A-Z0-9]{0,5}-\d{2,}$")
_NUMBER = re.compile(r"^-?\d[\d,]*(\.\d+)?$")


def is_distinctive(value: str) -> bool:
    """A value specific to one task, worth scanning for: an entity id (``O-9001``), an amount
    or count with three or more digits (``149.99``), or a long code with digits. Domain words
    (``tier-2``, ``refunded``) are the API's vocabulary, not ground truth."""
    if _ID.match(value):
        return True
    if _NUMBER.match(value):
        return sum(ch.isdigit() for ch in value) >= 3
    return len(value) >= 12 and any(ch.isdigit() for ch in value) and " " not in value
