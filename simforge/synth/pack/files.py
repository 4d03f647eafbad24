"""The pack directory: plain files that anyone can read, diff and edit.

::

    pack.yaml        manifest: name, format, entities (primary key, field schemas, sub-records),
                     file names, the train/holdout split, synthesis statistics
    tools.json       [{"spec": ToolSpec, "handler": learned handler description}]
    world.json.gz    the seed world: {entity: [rows]}
    replay.json.gz   {tool: [{"args", "response": {"result"} | {"error"}}]}
    scenario.yaml    a scenario with ``pack: .`` and one task per source episode (held-out
                     episodes are the ``eval`` split)
    policy.md        the agent policy the traces carried, when they carried one (tau2)
    state.json       the model of state shown only in text (:mod:`.text_state`), when learned
    scenario-nongold.yaml  the training episodes labelled failed, as tasks with nothing to
                     expect (kept out of scenario.yaml, so out of training, by default)

Only ``scenario.yaml`` holds ground truth (expected states, reference actions); the pack loader
never opens it, so nothing the agent side reaches (tool specs, handlers, replay answers) can
carry a task's expected outcome.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import TypeAdapter, ValidationError

from simforge import atomic
from simforge.config import at_line
from simforge.errors import UserError
from simforge.jsonio import dumps
from simforge.synth.pack.models import Manifest, ToolEntry

FORMAT = "simforge-synth/1"
MANIFEST = "pack.yaml"
TOOLS = "tools.json"
WORLD = "world.json.gz"
REPLAY = "replay.json.gz"
SCENARIO = "scenario.yaml"
POLICY = "policy.md"
STATE = "state.json"
NONGOLD = "scenario-nongold.yaml"

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PackFormatError(UserError, ValueError):
    """A pack directory that cannot be read; names the file and what is wrong."""


def write_pack(
    out: Path,
    *,
    manifest: dict[str, Any],
    tools: list[dict[str, Any]],
    world: dict[str, list[dict[str, Any]]],
    replay: dict[str, list[dict[str, Any]]],
    scenario: dict[str, Any],
    policy: str | None = None,
    state: dict[str, Any] | None = None,
    nongold: dict[str, Any] | None = None,
) -> None:
    """Write the pack to ``out`` whole or not at all: into a temporary sibling, renamed onto
    ``out`` once every file is in (:func:`simforge.atomic.replacing`), so that a synth killed
    half way leaves the previous pack as it was. A folder that is not a pack is never replaced
    (``--out`` naming a folder of other things would otherwise lose it)."""
    check_out(out)
    with atomic.replacing(out) as tmp:
        tmp.mkdir()
        files = {"tools": TOOLS, "world": WORLD, "replay": REPLAY, "scenario": SCENARIO}
        if state is not None:
            files["state"] = STATE
        if nongold is not None:
            files["nongold"] = NONGOLD
        manifest = {"format": FORMAT, **manifest, "files": files}
        if state is not None:
            (tmp / STATE).write_bytes(dumps(state, option=orjson.OPT_INDENT_2))
        (tmp / MANIFEST).write_text(yaml.dump(manifest, Dumper=_Dumper, sort_keys=False))
        (tmp / TOOLS).write_bytes(dumps(tools, option=orjson.OPT_INDENT_2))
        (tmp / WORLD).write_bytes(gzip.compress(dumps(world), compresslevel=6, mtime=0))
        (tmp / REPLAY).write_bytes(gzip.compress(dumps(replay), compresslevel=6, mtime=0))
        if policy:
            (tmp / POLICY).write_text(policy if policy.endswith("\n") else policy + "\n")
        (tmp / SCENARIO).write_text(
            yaml.dump(scenario, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        )
        if nongold is not None:
            (tmp / NONGOLD).write_text(
                yaml.dump(nongold, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
            )


def check_out(out: Path) -> None:
    """Raise :class:`PackFormatError` unless ``out`` is free for a pack: missing, an empty
    folder, or a pack (its manifest says so), which is then replaced whole."""
    if not out.exists():
        return
    if out.is_dir():
        if not any(out.iterdir()):
            return
        try:
            read_manifest(out)
            return
        except PackFormatError:
            pass
    raise PackFormatError(
        f"{out}: exists and is not a pack (no {MANIFEST}); --out takes a new folder, an empty "
        "one or a pack to replace"
    )


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not folder.is_dir():
        raise PackFormatError(f"{folder}: no such pack directory")
    if not path.is_file():
        raise PackFormatError(f"{folder}: not a pack directory (no {MANIFEST})")
    try:
        manifest = yaml.load(path.read_text(), Loader=_Loader)
    except (OSError, yaml.YAMLError) as exc:
        raise PackFormatError(f"{path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PackFormatError(f"{path}: expected format: {FORMAT}")
    _validate(Manifest, manifest, path, yaml_file=True)
    return manifest


def read_tools(path: Path) -> list[dict[str, Any]]:
    """``tools.json``, each entry checked against :class:`~.models.ToolEntry`."""
    tools = read_json(path)
    _validate(_TOOL_LIST, tools, path)
    return tools


_TOOL_LIST: TypeAdapter[list[ToolEntry]] = TypeAdapter(list[ToolEntry])


def _validate(model: Any, data: Any, path: Path, *, yaml_file: bool = False) -> None:
    """``data`` checked against ``model``; a misfit names the file, the line (for YAML) and
    the field path of every problem, as :mod:`simforge.config` does."""
    adapter = model if isinstance(model, TypeAdapter) else TypeAdapter(model)
    try:
        adapter.validate_python(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = list(err["loc"])
            where = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc)
            problem = f"{where.replace('.[', '[')}: {err['msg']}"
            problems.append(at_line(path, loc, problem) if yaml_file else problem)
        raise PackFormatError(f"{path}: " + "; ".join(problems)) from None


def read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return orjson.loads(data)
    except (OSError, orjson.JSONDecodeError, EOFError) as exc:
        raise PackFormatError(f"{path}: {exc}") from None
