"""Environment audit: screen every task before anyone trains on it."""

from simforge.audit.checks import CHECKS, CheckResult
from simforge.audit.context import AuditConfig, AuditContext
from simforge.audit.runner import AuditReport, TaskAudit, audit, audit_task

__all__ = [
    "CHECKS",
    "AuditConfig",
    "AuditContext",
    "AuditReport",
    "CheckResult",
    "TaskAudit",
    "audit",
    "audit_task",
]
