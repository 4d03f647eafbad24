"""Auditing scenarios: every check on every task, keep or reject with the reasons."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from simforge.audit.checks import CHECKS, CheckResult
from simforge.audit.context import AuditConfig, AuditContext
from simforge.scenario.registry import LoadedScenario


@dataclass
class TaskAudit:
    scenario: str
    task: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def kept(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def key(self) -> str:
        return f"{self.scenario}#{self.task}"


@dataclass
class AuditReport:
    tasks: list[TaskAudit] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        by_check: dict[str, dict[str, Any]] = {}
        rejections = []
        best: dict[str, dict[str, Any]] = {}
        for audit in self.tasks:
            for result in audit.results:
                counts = by_check.setdefault(result.check, {"passed": 0, "failed": 0})
                counts["passed" if result.passed else "failed"] += 1
                for name, reward in result.details.get("rewards", {}).items():
                    entry = best.setdefault(name, {"max": 0.0, "above_floor": 0, "tasks": 0})
                    entry["tasks"] += 1
                    entry["max"] = max(entry["max"], reward)
                    entry["above_floor"] += reward > result.details.get("floor", 0.0) + 1e-9
                rejections += [
                    {"task": audit.key, "check": result.check, "reason": r} for r in result.reasons
                ]
        if best and "adversaries" in by_check:
            by_check["adversaries"]["rewards"] = best
        kept = sum(1 for a in self.tasks if a.kept)
        return {
            "tasks": len(self.tasks),
            "kept": kept,
            "rejected": len(self.tasks) - kept,
            "by_check": by_check,
            "rejections": rejections,
        }


def audit_task(
    loaded: LoadedScenario, task_id: str, config: AuditConfig, checks: Iterable[str] | None = None
) -> TaskAudit:
    ctx = AuditContext(loaded, loaded.scenario.task(task_id), config)
    audit = TaskAudit(loaded.scenario.id, task_id)
    for name in checks or CHECKS:
        fn = CHECKS[name]
        try:
            reasons = fn(ctx)
        except Exception as exc:  # a check that crashes rejects the task, naming why
            reasons = [f"the check crashed: {type(exc).__name__}: {exc}"]
        audit.results.append(CheckResult(name, not reasons, reasons, ctx.details.get(name, {})))
    return audit


def audit(
    targets: Iterable[LoadedScenario],
    config: AuditConfig | None = None,
    *,
    checks: Iterable[str] | None = None,
    advance: Callable[[str], None] | None = None,
) -> AuditReport:
    config = config or AuditConfig()
    chosen = list(checks) if checks is not None else None
    report = AuditReport()
    for loaded in targets:
        for task in loaded.scenario.tasks:
            report.tasks.append(audit_task(loaded, task.id, config, chosen))
            if advance is not None:
                advance(f"{loaded.scenario.id}#{task.id}")
    return report
