"""YAML configuration at the border: parse into a pydantic model, and on any problem raise one
error naming the file, the line, the field path, what is allowed and what was found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError


class NotFound(KeyError):
    """A name (scenario, task, policy, profile) that is not registered; says what is."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message says where and what."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(
            f"{path}: " + ("\n  " if len(problems) > 1 else "") + "\n  ".join(problems)
        )


def load_model(
    model: type[BaseModel], path: Path | str, error: type[ConfigError] = ConfigError
) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(path, [f"cannot read: {exc.strerror or exc}"]) from None
    return parse_model(model, text, path, error)


def parse_model(
    model: type[BaseModel], text: str, path: Path | str, error: type[ConfigError] = ConfigError
) -> Any:
    """Parse YAML into ``model``; errors carry ``line N`` of the offending field."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise error(path, [f"{where}invalid YAML: {getattr(exc, 'problem', exc)}"]) from None
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
        root = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None
    return _locate(root, loc)[1]


def at_line(path: Path | str | None, loc: list[Any], problem: str) -> str:
    """``problem`` prefixed with ``line N: `` when ``loc`` can be found in ``path``."""
    line = line_of(path, loc) if path is not None else None
    return f"line {line}: {problem}" if line else problem


def _describe(err: Any, root: yaml.Node | None) -> str:
    loc, line = _locate(root, list(err["loc"]))
    field = ".".join(str(p) for p in loc) or "(top level)"
    where = f"line {line}: " if line else ""
    kind = err["type"]
    message = {"extra_forbidden": "unknown field", "missing": "required field is missing"}.get(
        kind, err["msg"]
    )
    received = "" if kind in ("missing", "extra_forbidden") else f" (found {err.get('input')!r})"
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
