"""The audited subset of a scenario, as a scenario file of its own: what a trainer trains on,
so that a task the audit rejected never reaches training.

The file is the scenario as written (its YAML, comments aside) with only the kept tasks and
its ``pack`` pointing at the same pack from the new file's folder; it is written atomically
(a temporary file in the same folder, then renamed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from simforge import atomic
from simforge.audit.runner import AuditReport
from simforge.config import ConfigError
from simforge.scenario.plugins import find_pack_dir
from simforge.scenario.registry import LoadedScenario

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _slug(scenario_id: str) -> str:
    return scenario_id.replace("/", "__")


def write_kept_scenarios(
    report: AuditReport, loaded: list[LoadedScenario], out: Path
) -> Iterator[tuple[Path, int, int]]:
    """Write each audited scenario's kept tasks; yields ``(path, kept, total)``. ``out`` is
    the file for one scenario, a folder (made if needed) for several."""
    kept: dict[str, set[str]] = {}
    for audit in report.tasks:
        if audit.kept:
            kept.setdefault(audit.scenario, set()).add(audit.task)
    several = len(loaded) > 1 or out.is_dir()
    if several:
        out.mkdir(parents=True, exist_ok=True)
    for item in loaded:
        if item.path is None:
            raise ConfigError(out, [f"{item.scenario.id}: not loaded from a file; nothing to copy"])
        target = out / f"{_slug(item.scenario.id)}.yaml" if several else out
        data = yaml.load(item.path.read_text(encoding="utf-8"), Loader=_Loader)
        chosen = kept.get(item.scenario.id, set())
        total = len(data.get("tasks") or [])
        data["tasks"] = [t for t in data.get("tasks") or [] if t.get("id") in chosen]
        pack = find_pack_dir(str(data["pack"]), relative_to=item.path.parent)
        data["pack"] = os.path.relpath(pack, target.resolve().parent)
        if data["tasks"]:
            _write(target, yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                     width=100))
        yield target, len(data["tasks"]), total


def _write(path: Path, text: str) -> None:
    atomic.write_text(path, text)
