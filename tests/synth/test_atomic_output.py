"""``synth --out`` writes the pack whole or not at all: a synth killed while writing leaves the
previous pack as it was, and a folder that is not a pack is never replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from simforge.cli import app
from simforge.synth.pack.files import MANIFEST, SCENARIO

ROOT = Path(__file__).resolve().parents[2]

KILL_AT_SCENARIO = """
import os, signal, sys
sys.path.insert(0, {tests!r})
import yaml
from simforge.synth.pack import files as pack_files
from simforge.synth.pipeline import synthesize
from conftest import shop_episodes

dump = yaml.dump
def dying_dump(data, *args, **kwargs):
    if isinstance(data, dict) and "tasks" in data:  # scenario.yaml: killed as it is written
        os.kill(os.getpid(), signal.SIGKILL)
    return dump(data, *args, **kwargs)
pack_files.yaml.dump = dying_dump
synthesize([], {out!r}, data=[{data!r}], episodes=shop_episodes()[:2])
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_synth_killed_while_writing_leaves_the_previous_pack_intact(shop_pack, snapshot_dir):
    before = _files(shop_pack)
    assert SCENARIO in before
    script = KILL_AT_SCENARIO.format(tests=str(ROOT / "tests" / "synth"), out=str(shop_pack),
                                     data=str(snapshot_dir))
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert _files(shop_pack) == before
    # what was in progress is a hidden sibling, never a pack under the real name
    leftovers = [p.name for p in shop_pack.parent.iterdir() if p.name.startswith(".pack.")]
    assert all(name.endswith(".tmp") for name in leftovers)


def test_a_folder_that_is_not_a_pack_is_refused_and_left_alone(tmp_path, snapshot_dir):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    result = CliRunner().invoke(app, ["synth", str(trace), "--out", str(folder),
                                      "--data", str(snapshot_dir)])
    assert result.exit_code == 2, result.output
    assert "not a pack" in result.output and MANIFEST in result.output
    assert _files(folder) == {"notes.txt": b"keep me"}


def test_a_pack_is_replaced_whole(shop_pack, snapshot_dir):
    from simforge.synth.pipeline import synthesize

    from .conftest import shop_episodes

    (shop_pack / "policy.md").write_text("a policy of an older synth\n")
    synthesize([], shop_pack, data=[snapshot_dir], episodes=shop_episodes())
    assert not (shop_pack / "policy.md").exists()  # nothing of the old pack is left behind
    assert (shop_pack / SCENARIO).is_file()
