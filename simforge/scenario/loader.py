"""Loading scenario YAML at the border: every error names the file, the line, the field path and
what is allowed, and nothing past this point sees an unchecked scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from simforge.scenario.model import Scenario


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message says where and what."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(
            f"{path}: " + ("\n  " if len(problems) > 1 else "") + "\n  ".join(problems)
        )


def load_scenario(path: Path | str) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    return parse_scenario(text, path)


def parse_scenario(text: str, path: Path | str = "<string>") -> Scenario:
    return parse_model(Scenario, text, path)


def parse_model(model: type[BaseModel], text: str, path: Path | str) -> Any:
    """Parse YAML into ``model``; errors carry ``line N`` of the offending field."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ScenarioError(
            path, [f"{where}invalid YAML: {getattr(exc, 'problem', exc)}"]
        ) from None
    if not isinstance(data, dict):
        raise ScenarioError(
            path, [f"expected a mapping at the top level, found {type(data).__name__}"]
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(
            path, [_describe(err, node) for err in exc.errors(include_url=False)]
        ) from None


def _describe(err: Any, root: yaml.Node | None) -> str:
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p in _UNION_TAGS)]
    field = ".".join(str(p) for p in loc) or "(top level)"
    line = _line_of(root, loc)
    where = f"line {line}: " if line else ""
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    elif err["type"] == "missing":
        message = "required field is missing"
    received = "" if err["type"] in ("missing",) else f" (found {err.get('input')!r})"
    if err["type"] == "extra_forbidden":
        received = ""
    return f"{where}{field}: {message}{received}"


_UNION_TAGS = {"constant", "uniform", "lognormal", "empirical"}


def _line_of(node: yaml.Node | None, loc: list[Any]) -> int | None:
    """The 1-based line of the node at ``loc`` (or of its nearest existing parent)."""
    best = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for key, value in node.value:
                if key.value == str(part):
                    best = key.start_mark.line + 1
                    nxt = value
                    break
            if nxt is None:
                return best
            node = nxt
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            best = node.start_mark.line + 1
        else:
            return best
    return best
