"""The tools a scenario offers its agent, and the policy it hands over.

A pack may hold far more tools than one agent should see (acme has 167; OpenAI's chat API takes
at most 128 per request, and a model given every tool of a company is not how anyone deploys
one). What a task offers is, in order of precedence:

1. the task's ``tools:`` (names and ``fnmatch`` globs);
2. the scenario's ``tools:``;
3. by default, per scenario (never per task: a per-task default would tell the agent which tools
   solve it): the tools its tasks' reference solutions call and its validators name (forbidden
   actions and policy rules are minefields an agent must be able to step on), then the other
   tools of those tools' systems as distractors, in catalog order, at most :data:`MAX_TOOLS`.

A ``tools:`` list may name more than :data:`MAX_TOOLS` (``["*"]`` serves a whole pack to a load
test); such a scenario is then not usable against an API with that limit, which the audit says.

A tool of the pack that is not offered does not exist for the agent: ``obs["tools"]`` leaves it
out, and a call answers 404 like an unknown name. Scoring still sees the whole pack.

The policy is the scenario's ``policy`` (markdown, or a file beside the scenario), else the
pack's: its general part and the parts for the systems the scenario offers
(:attr:`simforge.tools.pack.Pack.policy`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from simforge.errors import UserError
from simforge.scenario.model import PolicyFile, Scenario, Task
from simforge.tools.pack import Pack, ToolCatalog

MAX_TOOLS = 128
"""The most tools one request of OpenAI's chat-completions API may carry."""


class OfferError(UserError, ValueError):
    """A ``tools:`` entry that matches nothing, or a task whose reference solution needs a tool
    it does not offer; ``loc`` is the field path in the scenario file."""

    def __init__(self, loc: list[Any], message: str) -> None:
        super().__init__(message)
        self.loc = loc


def select(patterns: Iterable[str], catalog: Mapping[str, Any], loc: list[Any]) -> list[str]:
    """Tool names matching ``patterns`` (names or globs), in catalog order; a pattern that
    matches nothing is an :class:`OfferError` (a typo would otherwise hide a tool)."""
    names = list(catalog)
    chosen: set[str] = set()
    for i, pattern in enumerate(patterns):
        if pattern in catalog:
            chosen.add(pattern)
            continue
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise OfferError([*loc, i], f"tools: {pattern!r} matches no tool of the pack")
        chosen.update(matched)
    return [n for n in names if n in chosen]


def named_tools(value: Any, catalog: Mapping[str, Any]) -> set[str]:
    """Every string inside validator settings that is the name of a tool of the pack (the
    ``tool`` of a forbidden action or a policy rule, ``outward_tools``, ...). Globs such as
    ``*`` name no tool in particular and are left out."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item in catalog:
                found.add(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _oracle_tools(task: Task) -> set[str]:
    return {call.tool for step in task.oracle for call in step.calls}


def default_tools(scenario: Scenario, catalog: ToolCatalog) -> list[str]:
    """The scenario's default offer (see the module docstring)."""
    core: set[str] = set()
    for task in scenario.tasks:
        core |= {name for name in _oracle_tools(task) if name in catalog}
        for config in task.validators:
            core |= named_tools(config.params, catalog)
    for config in scenario.validators:
        core |= named_tools(config.params, catalog)
    if not core:
        return list(catalog)[:MAX_TOOLS]
    systems = {catalog[name].outline.system for name in core}
    names = [n for n in catalog if n in core]
    if len(names) > MAX_TOOLS:
        return names[:MAX_TOOLS]
    for name, tool in catalog.items():
        if len(names) >= MAX_TOOLS:
            break
        if name not in core and tool.outline.system in systems:
            names.append(name)
    order = {n: i for i, n in enumerate(catalog)}
    return sorted(names, key=order.__getitem__)


def offered_tools(scenario: Scenario, pack: Pack) -> dict[str, tuple[str, ...]]:
    """``{task id: tool names}`` for every task; raises :class:`OfferError` (with the field's
    path) for a pattern that matches nothing or an oracle call to a tool not offered."""
    catalog = pack.catalog
    if scenario.tools is not None:
        base = select(scenario.tools, catalog, ["tools"])
    else:
        base = default_tools(scenario, catalog)
    out: dict[str, tuple[str, ...]] = {}
    for t, task in enumerate(scenario.tasks):
        names = base if task.tools is None else select(task.tools, catalog, ["tasks", t, "tools"])
        offered = set(names)
        for i, step in enumerate(task.oracle):
            for k, call in enumerate(step.calls):
                if call.tool in catalog and call.tool not in offered:
                    raise OfferError(
                        ["tasks", t, "oracle", i, "calls", k, "tool"],
                        f"task {task.id!r}: the reference solution calls {call.tool!r}, which "
                        "the task does not offer (add it to tools:)",
                    )
        out[task.id] = tuple(names)
    return out


def policy_text(scenario: Scenario, pack: Pack, offered: Iterable[str], base: Path | None) -> str:
    """The policy the agent is given (empty when neither scenario nor pack has one)."""
    policy = scenario.policy
    if isinstance(policy, str):
        return policy.strip()
    if isinstance(policy, PolicyFile):
        path = Path(policy.file)
        if not path.is_absolute() and base is not None:
            path = base / path
        return path.read_text(encoding="utf-8").strip()
    sections = pack.policy
    if not sections:
        return ""
    catalog = pack.catalog
    systems = {catalog[name].spec.system or "" for name in offered if name in catalog}
    parts = [sections[""]] if sections.get("") else []
    parts += [text for system, text in sorted(sections.items()) if system and system in systems]
    return "\n\n".join(p.strip() for p in parts if p.strip())
