"""Scenario ids as Gymnasium ids: which scenarios there are and their registration.

Kept apart from :mod:`simforge.env.gym` (the adapter class), which imports Gymnasium: the
post-import hook (:mod:`simforge.env.gym_hook`) registers the scenarios the moment Gymnasium has
been imported, and when the module importing Gymnasium is :mod:`simforge.env.gym` itself, that
module is still half-initialised then. Registration needs only ids and an entry-point string,
so it imports Gymnasium inside the function, once Gymnasium is there.
"""

from __future__ import annotations

import re
from pathlib import Path

ENTRY_POINT = "simforge.env.gym:SimforgeGymEnv"
_ID_LINE = re.compile(rb"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _scenario_ids() -> list[str]:
    """Scenario ids from the scenario folders, read off each file's ``id:`` line (parsing and
    validating every scenario costs most of a second; this costs milliseconds). A file whose
    id is not among its first 64 KiB is parsed; a broken one is left to ``gymnasium.make``."""
    from simforge.paths import resource_dirs
    from simforge.synth.pack.files import MANIFEST

    ids: list[str] = []
    for root in resource_dirs("scenarios"):
        for path in sorted(Path(root).rglob("*.yaml")):
            if path.name == MANIFEST:
                continue
            try:
                with path.open("rb") as f:
                    head = f.read(1 << 16)
            except OSError:
                continue
            match = _ID_LINE.search(head)
            if match is not None:
                ids.append(match.group(1).decode("utf-8", "replace"))
                continue
            try:
                from simforge.scenario.loader import load_scenario

                ids.append(load_scenario(path).id)
            except Exception:  # gymnasium.make of it will say what is wrong
                continue
    return ids


def register_scenarios() -> list[str]:
    """Register every scenario of the scenario folders with Gymnasium (once per id); returns the
    ids registered now. ``gymnasium.make(id, task=..., faults=..., split=..., user=...)``
    passes its keywords to :class:`SimforgeGymEnv`."""
    import gymnasium

    registry = gymnasium.envs.registration.registry
    added = []
    for scenario_id in dict.fromkeys(_scenario_ids()):
        if scenario_id in registry:
            continue
        try:
            gymnasium.register(
                id=scenario_id, entry_point=ENTRY_POINT, kwargs={"scenario": scenario_id}
            )
        except gymnasium.error.Error:
            continue  # not an id Gymnasium accepts; simforge.make still takes it
        added.append(scenario_id)
    return added
