"""YAML configuration at the border: parse into a pydantic model, and on any problem raise one
error naming the file, the line, the field path, what is allowed and what was found.

YAML from outside is bounded before anything walks it: aliases make a few kilobytes stand for
an exponential tree (a "billion laughs" file), which PyYAML builds as shared objects but which
validation, scoring and any dump would then walk in full. The composed node graph is measured
first (its size with every alias expanded and its depth: counted by walking it while that
stays small, else in linear time with memoisation), and a file over :data:`MAX_YAML_NODES` or
:data:`MAX_YAML_DEPTH` is refused in milliseconds, naming the limit. The file is parsed
once (compose, then construct from the nodes), not twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from simforge.errors import UserError

MAX_YAML_NODES = 2_000_000
"""Nodes a configuration may expand to, aliases counted each time they are used."""
MAX_YAML_DEPTH = 100
"""Nesting a configuration may reach (scenarios nest about 12 levels)."""
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FIELD_PREFIX = re.compile(r"^([A-Za-z_][\w]*(?:\[\d+\]|\.[A-Za-z_][\w]*)*): ")
_FOUND_MAX = 120


class NotFound(UserError, KeyError):
    """A name (scenario, task, policy, profile) that is not registered; says what is."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class ConfigError(UserError, ValueError):
    """A configuration file that cannot be used; the message says where and what."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(
            f"{path}: " + ("\n  " if len(problems) > 1 else "") + "\n  ".join(problems)
        )


def read_text(path: Path, error: type[ConfigError] = ConfigError) -> str:
    """A configuration file's text; unreadable or not UTF-8 is an ``error`` naming the line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(path, [f"cannot read: {exc.strerror or exc}"]) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(path, [f"line {line}, column {column}: not UTF-8 (byte "
                           f"0x{raw[exc.start]:02x}); save the file as UTF-8"]) from None


def load_model(
    model: type[BaseModel], path: Path | str, error: type[ConfigError] = ConfigError
) -> Any:
    path = Path(path)
    return parse_model(model, read_text(path, error), path, error)


def compose(text: str, path: Path | str, error: type[ConfigError] = ConfigError) -> Any:
    """The YAML node graph of ``text``, bounded (see the module docstring)."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise error(path, [f"{where}invalid YAML: {getattr(exc, 'problem', exc)}"]) from None
    except RecursionError:
        raise error(path, [f"nested too deep (the limit is {MAX_YAML_DEPTH} levels)"]) from None
    if node is not None:
        _bounded(node, path, error)
    return node


_WALK_NODES = 100_000
"""Nodes :func:`_bounded` counts by walking before it measures instead (milliseconds)."""


def _bounded(root: yaml.Node, path: Path | str, error: type[ConfigError]) -> None:
    """Refuse a node graph that expands past the limits. Walking it level by level, aliases
    expanded, counts what :func:`_measured` computes, in a tenth of the time for a file the
    size of a scenario (parsing the 33 on a cold cache spent some 0.1 s measuring): a graph
    within the depth limit and :data:`_WALK_NODES` is settled so; any other (a large file, an
    alias bomb, one over a limit) is measured, linear in its distinct nodes, which names the
    node over a limit."""
    mapping, sequence = yaml.MappingNode, yaml.SequenceNode
    budget = min(_WALK_NODES, MAX_YAML_NODES)
    level: list[yaml.Node] = [root]
    depth = count = 0
    while level:
        depth += 1
        count += len(level)
        if depth > MAX_YAML_DEPTH or count > budget:
            return _measured(root, path, error)
        below: list[yaml.Node] = []
        for node in level:
            if isinstance(node, mapping):
                for pair in node.value:
                    below.extend(pair)
            elif isinstance(node, sequence):
                below.extend(node.value)
        level = below
    return None


def _measured(root: yaml.Node, path: Path | str, error: type[ConfigError]) -> None:
    """The graph's size with every alias expanded, per node (memoised) and its depth; the first
    node over a limit is refused, naming its line."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            total = 1 + sum(size[id(c)] for c in children)
            size[key] = total
            if total > MAX_YAML_NODES:
                raise error(path, [f"line {node.start_mark.line + 1}: expands to more than "
                                   f"{MAX_YAML_NODES:,} values (aliases of aliases?)"])
            continue
        if key in size:
            continue
        if depth > MAX_YAML_DEPTH:
            raise error(path, [f"line {node.start_mark.line + 1}: nested deeper than "
                               f"{MAX_YAML_DEPTH} levels"])
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) not in size:
                stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def parse_model(
    model: type[BaseModel], text: str, path: Path | str, error: type[ConfigError] = ConfigError
) -> Any:
    """Parse YAML into ``model``; errors carry ``line N`` of the offending field."""
    node = compose(text, path, error)
    try:
        data = _LOADER(text).construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise error(path, [f"{where}invalid YAML: {getattr(exc, 'problem', exc)}"]) from None
    except RecursionError:
        raise error(path, [f"nested too deep (the limit is {MAX_YAML_DEPTH} levels)"]) from None
    if not isinstance(data, dict):
        raise error(path, [f"expected a mapping at the top level, found {type(data).__name__}"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(path, [_describe(err, node) for err in exc.errors(include_url=False)]) from None


def line_of(path: Path | str, loc: list[Any]) -> int | None:
    """The 1-based line of the field at ``loc`` in the YAML file ``path`` (or of its nearest
    existing parent), for problems found after the file was parsed: unknown tools and entities,
    bad seed rows. ``None`` when the file cannot be read again."""
    try:
        root = compose(read_text(Path(path)), path)
    except ConfigError:
        return None
    return _locate(root, loc)[1]


def at_line(path: Path | str | None, loc: list[Any], problem: str) -> str:
    """``problem`` prefixed with ``line N: `` when ``loc`` can be found in ``path``."""
    line = line_of(path, loc) if path is not None else None
    return f"line {line}: {problem}" if line else problem


def _describe(err: Any, root: yaml.Node | None) -> str:
    raw_loc = list(err["loc"])
    kind = err["type"]
    message = {"extra_forbidden": "unknown field", "missing": "required field is missing"}.get(
        kind, err["msg"]
    )
    if not raw_loc:
        # A model-level check that names its field in its message ("tasks[3].id: ..."): that
        # field's line, and none of the whole document's input.
        text = message.removeprefix("Value error, ")
        match = _FIELD_PREFIX.match(text)
        if match:
            raw_loc = [int(p) if p.isdigit() else p
                       for p in re.split(r"[.\[\]]+", match.group(1)) if p]
            message = text[match.end():]
        loc, line = _locate(root, raw_loc)
        where = f"line {line}: " if line and raw_loc else ""
        field = ".".join(str(p) for p in loc) or "(top level)"
        return f"{where}{field}: {message}"
    loc, line = _locate(root, raw_loc)
    field = ".".join(str(p) for p in loc) or "(top level)"
    where = f"line {line}: " if line else ""
    found = repr(err.get("input"))
    if len(found) > _FOUND_MAX:
        found = found[: _FOUND_MAX - 3] + "..."
    received = "" if kind in ("missing", "extra_forbidden") else f" (found {found})"
    return f"{where}{field}: {message}{received}"


def _locate(node: yaml.Node | None, loc: list[Any]) -> tuple[list[Any], int | None]:
    """The field path as the user wrote it, and the 1-based line of its node (or of its nearest
    existing parent). Pydantic puts the tag of a discriminated union into the path (``fault.
    latency.multiplier``); a part equal to the mapping's ``kind`` value is that tag, not a field."""
    path: list[Any] = []
    best = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            values = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            kind = values.get("kind")
            if kind is not None and isinstance(kind[1], yaml.ScalarNode) and kind[1].value == part:
                continue
            path.append(part)
            if str(part) in values:
                key, node = values[str(part)]
                best = key.start_mark.line + 1
            else:
                node = None
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            path.append(part)
            node = node.value[part]
            best = node.start_mark.line + 1
        else:
            path.append(part)
            node = None
    return path, best
