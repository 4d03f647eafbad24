"""A third-party fault kind, written as a wrapper over one hook of a call's stages and
registered through the ``simforge.faults`` entry-point group, works end to end; a kind whose
wrapper does not override its stage's hook (or overrides another) is refused when simforge
loads its kinds, naming the plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "tests" / "fixtures" / "packs" / "mini"

PLUGIN = '''
from typing import ClassVar, Literal

from simforge.faults import FaultKind, Wrapper


class OneSlot(Wrapper):
    """The tool serves one call at a time while the fault lasts (a shared, throttled pool)."""

    __slots__ = ()

    def capacity(self, spec):
        # the kernel imports the fault kinds: a plugin, loaded with them, imports it when called
        from simforge.sim.calls import Capacity

        resources = self.call.stages.session.resources
        key = f"throttled:{spec.name}"
        if key not in resources:
            resources[key] = Capacity(self.call.stages.session.env, self.fault.slots)
        return resources[key]


class Throttle(FaultKind):
    stage: ClassVar = "capacity"
    wrapper: ClassVar = OneSlot
    kind: Literal["throttle"] = "throttle"
    slots: int = 1


class Twice(Wrapper):
    __slots__ = ()

    def capacity(self, spec):
        return self.inner.capacity(spec)

    def draw(self, tool, out):
        return self.inner.draw(tool, out)


class Greedy(FaultKind):
    stage: ClassVar = "capacity"
    wrapper: ClassVar = Twice
    kind: Literal["greedy"] = "greedy"


class Lazy(FaultKind):
    stage: ClassVar = "latency"
    kind: Literal["lazy"] = "lazy"
'''

SCRIPT = '''
import json
from simforge.faults import KINDS, FaultProfile
from simforge.scenario import load_pack
from simforge.sim import CallRequest, Session
from simforge.tools import Constant

import sys
pack = load_pack(sys.argv[1])
tools = dict(pack.catalog)
tools["get_customer"] = tools["get_customer"].with_spec(latency=Constant(seconds=1.0))
ends = {}
for name, rules in (("plain", []), ("throttled", [
        {"id": "pool", "fault": {"kind": "throttle"}, "target": {"tools": ["get_customer"]}}])):
    profile = FaultProfile.model_validate({"name": name, "rules": rules})
    s = Session(tools, pack.world(), seed=1, faults=profile)
    outs = s.step([CallRequest("get_customer", {"customer_id": f"C-000{i}"}) for i in (1, 2)])
    ends[name] = [[o.ok, o.ended_at, [f.kind for f in o.faults]] for o in outs]
print(json.dumps({"registered": "throttle" in KINDS, "ends": ends}))
'''


def _run(tmp_path: Path, entry: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "acme_faults.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "acme_faults-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-faults\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[simforge.faults]\n{entry}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", SCRIPT, str(MINI)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_third_party_kind_wraps_one_hook_and_works_end_to_end(tmp_path):
    done = _run(tmp_path, "throttle = acme_faults:Throttle")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["registered"]
    # two concurrent reads of 1 s: side by side without the fault, one after the other with it
    assert out["ends"]["plain"] == [[True, 1.0, []], [True, 1.0, []]]
    assert out["ends"]["throttled"] == [[True, 1.0, ["throttle"]], [True, 2.0, ["throttle"]]]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("greedy = acme_faults:Greedy", "overrides ['capacity', 'draw']"),
        ("lazy = acme_faults:Lazy", "must be a Wrapper subclass that overrides `draw`"),
    ],
)
def test_a_kind_whose_wrapper_is_not_one_hook_of_its_stage_is_refused(tmp_path, entry, says):
    done = _run(tmp_path, entry)
    assert done.returncode != 0
    assert "PluginError" in done.stderr and says in done.stderr
    assert entry.split(" = ")[0] in done.stderr
