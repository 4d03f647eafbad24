"""The audit as a self-contained HTML page (no scripts, no external assets)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, select_autoescape

from simforge.audit.checks import CHECKS, describe
from simforge.audit.runner import AuditReport

_TEMPLATE = Path(__file__).with_name("audit.html.j2")


def render_html(report: AuditReport) -> str:
    env = Environment(autoescape=select_autoescape(default=True))
    checks = [r.check for r in report.tasks[0].results] if report.tasks else list(CHECKS)
    return env.from_string(_TEMPLATE.read_text(encoding="utf-8")).render(
        report=report,
        data=report.to_json(),
        checks=checks,
        descriptions={c: describe(c) for c in checks},
    )
