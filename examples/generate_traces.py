"""Generate example production traces of the Acme enterprise.

Scripted agents of different quality work through the Acme scenarios in the simulator, under the
fault profiles each scenario declares, and every run is written twice:

- as OTLP JSON with the OpenTelemetry GenAI conventions (one trace per episode: an
  ``invoke_agent`` root span, a ``chat`` inference span per assistant turn carrying
  ``gen_ai.input.messages`` / ``gen_ai.output.messages``, and an ``execute_tool`` span per call
  with ``gen_ai.tool.*`` attributes, ``error.type`` and an error status when the call failed).
  Span times are the simulated times, so tool latencies come from the tools' latency models,
  offset onto a fixed epoch: the same arguments give the same bytes;
- as OpenAI Chat Completions messages, one episode a line (``simforge.trace.export``).

The agents are the kinds a production log holds: ``careful`` (reads before it writes, asks the
user first when a conversation is expected, retries transient errors honouring
``retry_after``), ``sloppy`` (skips reads, sometimes gets an amount wrong), ``no-retry`` (gives
up on the first error) and ``policy-violating`` (does the job but also one thing the scenario
forbids). They follow each task's reference solution as their script; that is what makes them
quick to write, and their quality is in how they deviate from it.

Usage::

    python examples/generate_traces.py --episodes 40 --out examples/traces
    python examples/generate_traces.py --episodes 10000 --out /tmp/acme-traces   # benchmarks
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path
from typing import Any

import orjson

import simforge
from simforge.scenario.registry import default_registry
from simforge.trace.episode import Episode, Message
from simforge.trace.export import to_openai

EPOCH = 1_768_467_600.0  # 2026-01-15T09:00:00Z, the first morning of the Acme world
EPISODE_SPACING = 900.0  # seconds between the starts of consecutive episodes
TRANSIENT = {0, 429, 500, 502, 503, 504}
AGENTS = ("careful", "sloppy", "no-retry", "policy-violating")
MODEL = "gpt-4o-2024-08-06"


class ScriptedAgent:
    """Plays a task's reference solution with the habits of one kind of agent."""

    def __init__(
        self, kind: str, task: Any, catalog: Any, rules: list[dict[str, Any]], rng: random.Random
    ) -> None:
        self.kind = kind
        self.rng = rng
        self.catalog = catalog
        self.plan: list[dict[str, Any]] = []
        if kind == "careful" and task.user_turns:
            self.plan.append(
                {
                    "message": "Before I change anything, let me confirm: "
                    f"{task.instruction.strip()} Shall I go ahead?"
                }
            )
        for step in task.oracle:
            if step.message is not None:
                self.plan.append({"message": step.message})
                continue
            if step.answer is not None:
                if kind == "policy-violating":
                    self.plan.extend(_violation(rules, task, catalog))
                self.plan.append({"final_answer": step.answer})
                continue
            calls = [{"name": c.tool, "arguments": dict(c.args)} for c in step.calls]
            if kind == "sloppy":
                if all(catalog[c["name"]].spec.kind == "read" for c in calls):
                    continue
                calls = [self._fumble(c) for c in calls]
            self.plan.append({"tool_calls": calls})
        self.retries = {"careful": 4, "sloppy": 1}.get(kind, 0)
        self._last: list[dict[str, Any]] = []
        self._attempt = 0

    def _fumble(self, call: dict[str, Any]) -> dict[str, Any]:
        args = dict(call["arguments"])
        if isinstance(args.get("amount"), int | float) and self.rng.random() < 0.35:
            args["amount"] = round(args["amount"] * 1.1, 2)
        return {"name": call["name"], "arguments": args}

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        results = observation.get("results") or []
        failed = [
            call
            for call, result in zip(self._last, results, strict=False)
            if not result.get("ok") and result.get("error", {}).get("status") in TRANSIENT
        ]
        if failed and self._attempt < self.retries:
            self._attempt += 1
            waits = [r["error"].get("retry_after") or 0.0 for r in results if not r.get("ok")]
            self._last = failed
            return {"tool_calls": failed, "think": max([2.0**self._attempt, *waits])}
        self._attempt = 0
        action = self.plan.pop(0) if self.plan else {"final_answer": "I could not finish this."}
        self._last = list(action.get("tool_calls", []))
        return action


def _violation(rules: list[dict[str, Any]], task: Any, catalog: Any) -> list[dict[str, Any]]:
    """One call a forbidden_actions rule of the scenario names, with plausible arguments."""
    for rule in rules:
        name = rule.get("tool", "")
        if name not in catalog:
            continue
        args: dict[str, Any] = {}
        for step in task.oracle:
            for call in step.calls:
                if call.tool == name:
                    args = dict(call.args)
        args.update({k: v for k, v in rule.get("args", {}).items() if not isinstance(v, dict)})
        return [{"tool_calls": [{"name": name, "arguments": args}]}]
    return []


def _rules(scenario: Any, task: Any) -> list[dict[str, Any]]:
    found = []
    for config in [*scenario.validators, *task.validators]:
        if config.name == "forbidden_actions":
            found.extend(config.params.get("rules", []))
    return found


def run_episode(
    index: int, scenario_id: str, task_id: str, kind: str, faults: str
) -> tuple[Episode, float]:
    env = simforge.make(scenario_id)
    obs, _ = env.reset(seed=index, options={"task": task_id, "faults": faults, "policy": kind})
    task = env.task
    assert task is not None
    rng = random.Random(f"agent:{index}")
    agent = ScriptedAgent(kind, task, env.pack.catalog, _rules(env.scenario, task), rng)
    terminated = truncated = False
    reward = 0.0
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(agent.act(obs))
    return env.trajectory(), reward


# -- OTLP -------------------------------------------------------------------------------------


def _nanos(t: float) -> str:
    return str(round(t * 1e9))


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _parts(message: Message, calls: dict[str, Any]) -> dict[str, Any]:
    if message.role == "tool":
        try:
            response = orjson.loads(message.content or "null")
        except orjson.JSONDecodeError:
            response = message.content
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": message.call_id, "response": response}],
        }
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call_id in message.tool_call_ids:
        call = calls[call_id]
        parts.append(
            {
                "type": "tool_call",
                "id": call_id,
                "name": call.tool,
                "arguments": call.args if call.args is not None else {},
            }
        )
    out: dict[str, Any] = {"role": message.role, "parts": parts}
    if message.role == "assistant":
        out["finish_reason"] = "tool_call" if message.tool_call_ids else "stop"
    return out


def to_otlp(episode: Episode, index: int, kind: str, reward: float) -> dict[str, Any]:
    """One episode as one ``resourceSpans`` entry: a trace of GenAI spans."""
    digest = hashlib.sha256(f"{index}:{episode.id}".encode()).hexdigest()
    trace_id = digest[:32]
    base = EPOCH + index * EPISODE_SPACING
    counter = iter(range(1, 1_000_000))

    def span_id() -> str:
        return f"{digest[32:40]}{next(counter):08x}"

    sim = episode.simulation
    assert sim is not None
    root = span_id()
    calls = {c.call_id: c for c in episode.tool_calls}
    spans: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    last = 0.0
    for message in episode.messages:
        at = message.timestamp or 0.0
        if message.role == "assistant":
            start = min(last, at)
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": span_id(),
                    "parentSpanId": root,
                    "name": f"chat {MODEL}",
                    "kind": 3,
                    "startTimeUnixNano": _nanos(base + start),
                    "endTimeUnixNano": _nanos(base + max(at, start + 0.001)),
                    "attributes": [
                        _attr("gen_ai.operation.name", "chat"),
                        _attr("gen_ai.provider.name", "openai"),
                        _attr("gen_ai.request.model", MODEL),
                        _attr("gen_ai.input.messages", _json(history)),
                        _attr("gen_ai.output.messages", _json([_parts(message, calls)])),
                    ],
                    "status": {"code": 1},
                }
            )
        history.append(_parts(message, calls))
        last = max(last, at)
    for call in episode.tool_calls:
        attributes = [
            _attr("gen_ai.operation.name", "execute_tool"),
            _attr("gen_ai.tool.name", call.tool),
            _attr("gen_ai.tool.call.id", call.call_id),
            _attr("gen_ai.tool.type", "function"),
            _attr("gen_ai.tool.call.arguments", _json(call.args if call.args is not None else {})),
        ]
        status: dict[str, Any] = {"code": 1}
        if call.error is None:
            attributes.append(_attr("gen_ai.tool.call.result", _json(call.result)))
        else:
            error = call.metadata.get("error", {})
            attributes.append(_attr("error.type", error.get("code", "error")))
            status = {"code": 2, "message": call.error}
        started = call.started_at or 0.0
        spans.append(
            {
                "traceId": trace_id,
                "spanId": span_id(),
                "parentSpanId": root,
                "name": f"execute_tool {call.tool}",
                "kind": 1,
                "startTimeUnixNano": _nanos(base + started),
                "endTimeUnixNano": _nanos(base + (call.ended_at or started)),
                "attributes": attributes,
                "status": status,
            }
        )
    spans.sort(key=lambda s: (int(s["startTimeUnixNano"]), s["spanId"]))
    spans.insert(
        0,
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "invoke_agent acme-assistant",
            "kind": 1,
            "startTimeUnixNano": _nanos(base),
            "endTimeUnixNano": _nanos(base + sim.sim_time),
            "attributes": [
                _attr("gen_ai.operation.name", "invoke_agent"),
                _attr("gen_ai.agent.name", f"acme-assistant-{kind}"),
                _attr("gen_ai.conversation.id", f"conv-{digest[:16]}"),
                _attr("acme.scenario", sim.scenario),
                _attr("acme.task", sim.task),
                _attr("acme.fault_profile", sim.fault_profile),
                _attr("acme.reward", float(reward)),
            ],
            # the run's grade, as the GenAI semantic conventions' evaluation event
            "events": [
                {
                    "timeUnixNano": _nanos(base + sim.sim_time),
                    "name": "gen_ai.evaluation.result",
                    "attributes": [
                        _attr("gen_ai.evaluation.name", "task_reward"),
                        _attr("gen_ai.evaluation.score.value", float(reward)),
                        _attr("gen_ai.evaluation.score.label", "pass" if reward >= 1.0 else "fail"),
                    ],
                }
            ],
            "status": {"code": 1}
            if reward > 0
            else {"code": 2, "message": "task not accomplished"},
        },
    )
    return {
        "resource": {
            "attributes": [
                _attr("service.name", "acme-assistant"),
                _attr("deployment.environment", "production"),
            ]
        },
        "scopeSpans": [{"scope": {"name": "acme.agent", "version": "1.0.0"}, "spans": spans}],
    }


# -- the schedule and the files --------------------------------------------------------------


def schedule(episodes: int) -> list[tuple[int, str, str, str, str]]:
    """``(index, scenario, task, agent, fault profile)`` for each episode, deterministically:
    every task in turn, the agents in rotation, each scenario's declared profiles in rotation."""
    loaded = [default_registry.get(i) for i in default_registry.ids() if i.startswith("acme/")]
    tasks = [(lo.scenario, t) for lo in loaded for t in lo.scenario.tasks]
    out = []
    for index in range(episodes):
        scenario, task = tasks[index % len(tasks)]
        lap = index // len(tasks)
        agent = AGENTS[(index + lap) % len(AGENTS)]
        profiles = scenario.faults.profiles
        out.append((index, scenario.id, task.id, agent, profiles[(index + lap) % len(profiles)]))
    return out


def generate(episodes: int, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    otlp_path, openai_path = out / "acme-otlp.json", out / "acme-openai.jsonl"
    counts = {"episodes": 0, "tool_calls": 0, "failed_calls": 0, "rewarded": 0}
    # One OTLP document, streamed: large runs (10,000 episodes) never sit in memory at once.
    with openai_path.open("wb") as openai_file, otlp_path.open("wb") as otlp_file:
        otlp_file.write(b'{"resourceSpans":[')
        for index, scenario_id, task_id, kind, faults in schedule(episodes):
            episode, reward = run_episode(index, scenario_id, task_id, kind, faults)
            if index:
                otlp_file.write(b",")
            otlp_file.write(orjson.dumps(to_otlp(episode, index, kind, reward)))
            openai_file.write(orjson.dumps(to_openai(episode)) + b"\n")
            counts["episodes"] += 1
            counts["tool_calls"] += len(episode.tool_calls)
            counts["failed_calls"] += sum(c.error is not None for c in episode.tool_calls)
            counts["rewarded"] += reward == 1.0
        otlp_file.write(b"]}\n")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "traces")
    args = parser.parse_args(argv)
    counts = generate(args.episodes, args.out)
    print(orjson.dumps(counts).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
