"""Tool-surface faults (Gaia2's augmentations, ToolSandbox, BFCL multi-turn): the tools an
episode offers are not the tools the agent was written against.

Each is decided once per episode, from the rule's own stream (``(seed, rule)``), and changes
the episode's :class:`SurfaceView`, the catalog the agent sees and calls:

- ``tool_rename``: target tools under other names (a seeded synonym of the verb, or the names
  given), with rewritten descriptions;
- ``distractor_tools``: near-duplicates of target tools that look right and are retired (410);
- ``param_rename``: a parameter offered under another name until ``until`` seconds;
- ``tool_delayed``: target tools missing until ``until`` seconds, then offered.

Calls are recorded under the tools' real names with their real argument names (``metadata.
called_as`` keeps what the agent sent), so validators need no change; reference solutions are
rewritten for the episode's surface (:meth:`SurfaceView.rewrite_call`), so a task stays
solvable and the audit can still check it. A view is only built when a profile has surface
rules (or a token that expires, whose refresh tool it offers); otherwise the session keeps the
plain catalog and the hot path is untouched.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from simforge.faults.kinds import FaultKind, Stage
from simforge.tools.errors import ToolArgumentError, ToolError
from simforge.tools.spec import ToolSpec
from simforge.tools.tool import Tool

if TYPE_CHECKING:
    from simforge.faults.rules import FaultRule

_SYNONYMS = {
    "get": ["fetch", "retrieve", "lookup", "read"],
    "list": ["browse", "enumerate", "query", "all"],
    "search": ["find", "query", "lookup"],
    "find": ["search", "locate", "lookup"],
    "create": ["add", "new", "open", "make"],
    "add": ["create", "append", "insert"],
    "update": ["modify", "edit", "change", "patch"],
    "delete": ["remove", "drop", "purge"],
    "cancel": ["void", "abort", "revoke"],
    "send": ["dispatch", "deliver", "post"],
    "refund": ["reimburse", "repay", "return_money"],
    "check": ["verify", "inspect", "test"],
    "approve": ["accept", "sign_off", "grant"],
    "reject": ["decline", "deny", "refuse"],
}
_DESCRIBE = (
    "Use this to {what}",
    "{What} (service operation).",
    "Operation: {what}. Returns the service's answer.",
    "{What}. May fail when the upstream system is busy.",
)


class SurfaceKind(FaultKind):
    """A fault that changes the tools an episode offers (the ``surface`` stage)."""

    stage: ClassVar[Stage] = "surface"
    renders: ClassVar[dict[str, str]] = {
        "http": "the session's MCP tools/list and its calls; OpenAPI documents the "
                "scenario's own names",
    }

    def change(self, view: SurfaceView, targets: list[str], rng: random.Random) -> None:
        raise NotImplementedError


def _renamed(name: str, rng: random.Random, taken: set[str]) -> str:
    head, _, rest = name.partition("_")
    choices = _SYNONYMS.get(head)
    for _ in range(8):
        if choices and rest:
            new = f"{rng.choice(choices)}_{rest}"
        else:
            new = f"{name}_{rng.choice(['v2', 'svc', 'api', 'op'])}"
        if new not in taken:
            return new
    return f"{name}_{rng.randrange(1000, 9999)}"


def _paraphrase(description: str, rng: random.Random) -> str:
    first = description.strip().split("\n")[0].rstrip(".")
    what = first[:1].lower() + first[1:] if first else "perform the operation"
    return rng.choice(_DESCRIBE).format(what=what, What=what[:1].upper() + what[1:])


class ToolRename(SurfaceKind):
    """Target tools offered under other names (``names``, or a seeded synonym of the verb:
    ``get_order`` as ``fetch_order``), descriptions rewritten unless ``describe`` is false."""

    kind: Literal["tool_rename"] = "tool_rename"
    names: dict[str, str] = Field(default_factory=dict)
    describe: bool = True

    def change(self, view: SurfaceView, targets: list[str], rng: random.Random) -> None:
        for name in targets:
            if name not in view.entries:
                continue
            new = self.names.get(name) or _renamed(name, rng, set(view.entries))
            description = view.entries[name].spec.description
            view.rename(name, new, _paraphrase(description, rng) if self.describe else None)


class DistractorTools(SurfaceKind):
    """Near-duplicates of target tools (the same schema, a plausible name and description) that
    answer 410 ``retired``: an agent must notice and use the real one."""

    kind: Literal["distractor_tools"] = "distractor_tools"
    count: int = Field(1, ge=1, le=10)

    def change(self, view: SurfaceView, targets: list[str], rng: random.Random) -> None:
        chosen = [t for t in targets if t in view.entries]
        rng.shuffle(chosen)
        for name in chosen[: self.count]:
            entry = view.entries[name]
            alias = _renamed(entry.spec.name, rng, set(view.entries))
            spec = entry.spec.model_copy(update={
                "name": alias,
                "description": _paraphrase(entry.spec.description, rng),
            })
            view.add_distractor(spec, entry.tool)


class ParamRename(SurfaceKind):
    """A parameter offered under another name (``rename: {order_id: id}``) until ``until``
    seconds (``null``: all episode): calls with the offered name work; the old one is 422."""

    kind: Literal["param_rename"] = "param_rename"
    rename: dict[str, str] = Field(min_length=1)
    until: float | None = Field(None, gt=0)

    def change(self, view: SurfaceView, targets: list[str], rng: random.Random) -> None:
        for name in targets:
            entry = view.entries.get(view.alias_of(name))
            if entry is None:
                continue
            props = (entry.spec.input_schema.get("properties") or {})
            mapping = {old: new for old, new in self.rename.items() if old in props}
            if mapping:
                view.rename_params(name, mapping, self.until)


class ToolDelayed(SurfaceKind):
    """Target tools are missing (404) until ``until`` seconds, then offered; an observation
    carries the new catalog when it changes."""

    kind: Literal["tool_delayed"] = "tool_delayed"
    until: float = Field(60.0, gt=0)

    def change(self, view: SurfaceView, targets: list[str], rng: random.Random) -> None:
        for name in targets:
            view.delay(name, self.until)


SURFACE_KINDS: tuple[type[FaultKind], ...] = (ToolRename, DistractorTools, ParamRename, ToolDelayed)


class _RefreshArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class Entry:
    """One offered tool: what runs (``tool``), what the agent is shown (``spec``), argument
    names to translate (offered -> real), until when, and from when it is offered."""

    tool: Tool
    spec: ToolSpec
    params: dict[str, str] = field(default_factory=dict)
    params_until: float | None = None
    available_from: float = 0.0


class SurfaceView(Mapping[str, Tool]):
    """The catalog of one episode under surface faults: offered name -> entry."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self.entries: dict[str, Entry] = {n: Entry(t, t.spec) for n, t in tools.items()}
        self.real: dict[str, str] = {n: n for n in tools}
        """offered name -> real name (the real tool's name)."""
        self.delays: list[float] = []
        self.fired: list[dict[str, Any]] = []
        """One record per rule that changed the surface: ``{kind, rule, tools, params}``."""

    # -- building --------------------------------------------------------------------------------

    def alias_of(self, real: str) -> str:
        for offered, name in self.real.items():
            if name == real and self.entries[offered].tool.name == real:
                return offered
        return real

    def rename(self, real: str, new: str, description: str | None) -> None:
        offered = self.alias_of(real)
        entry = self.entries.pop(offered)
        self.real.pop(offered)
        changes: dict[str, Any] = {"name": new}
        if description is not None:
            changes["description"] = description
        entry.spec = entry.spec.model_copy(update=changes)
        self.entries[new] = entry
        self.real[new] = real

    def add_distractor(self, spec: ToolSpec, like: Tool) -> None:
        def retired(ctx: Any, args: Any) -> Any:
            raise ToolError(410, "retired", f"{spec.name} is retired and no longer serves "
                            "requests")

        self.entries[spec.name] = Entry(Tool(spec, like.input_model, retired), spec)
        self.real[spec.name] = spec.name

    def add_tool(self, tool: Tool) -> None:
        self.entries[tool.name] = Entry(tool, tool.spec)
        self.real[tool.name] = tool.name

    def rename_params(self, real: str, mapping: dict[str, str], until: float | None) -> None:
        entry = self.entries[self.alias_of(real)]
        schema = dict(entry.spec.input_schema)
        props = {mapping.get(k, k): v for k, v in (schema.get("properties") or {}).items()}
        schema["properties"] = props
        if "required" in schema:
            schema["required"] = [mapping.get(k, k) for k in schema["required"]]
        entry.spec = entry.spec.model_copy(update={"input_schema": schema})
        entry.params = {new: old for old, new in mapping.items()}
        entry.params_until = until
        if until is not None:
            self.delays.append(until)

    def delay(self, real: str, until: float) -> None:
        entry = self.entries.get(self.alias_of(real))
        if entry is not None:
            entry.available_from = max(entry.available_from, until)
            self.delays.append(until)

    # -- using -----------------------------------------------------------------------------------

    def resolve(self, name: str, args: Any, now: float) -> tuple[Tool | None, Any]:
        """The tool a call to ``name`` runs, with its arguments under their real names;
        ``(None, args)`` for a name not offered now."""
        entry = self.entries.get(name)
        if entry is None or now < entry.available_from:
            return None, args
        renamed = entry.params_until is None or now < entry.params_until
        if entry.params and isinstance(args, dict) and renamed:
            hidden = set(entry.params.values()) - set(entry.params)
            stale = sorted(k for k in args if k in hidden)
            if stale:
                raise ToolArgumentError(name, [
                    {"argument": k, "expected": "no such parameter (see the tool's schema)",
                     "received": args[k]} for k in stale])
            args = {entry.params.get(k, k): v for k, v in args.items()}
        return entry.tool, args

    def offered(self, now: float) -> dict[str, ToolSpec]:
        """Offered name -> the spec the agent is shown, at ``now``."""
        out = {}
        for name, entry in self.entries.items():
            if now < entry.available_from:
                continue
            spec = entry.spec
            if entry.params and entry.params_until is not None and now >= entry.params_until:
                spec = entry.tool.spec.model_copy(update={"name": name,
                                                          "description": spec.description})
            out[name] = spec
        return out

    def version(self, now: float) -> int:
        """How many of the view's scheduled changes have happened by ``now``."""
        return sum(1 for t in self.delays if now >= t)

    def to_openai(self, now: float = 0.0, *, strict: bool = False) -> list[dict[str, Any]]:
        return [spec.to_openai(strict=strict) for spec in self.offered(now).values()]

    def rewrite_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A reference call, written against the real tools, as the agent must make it here."""
        offered = self.alias_of(name)
        entry = self.entries.get(offered)
        if entry is None or not entry.params:
            return offered, args
        back = {old: new for new, old in entry.params.items()}
        return offered, {back.get(k, k): v for k, v in args.items()}

    # -- Mapping: what the session's lookups need -------------------------------------------------

    def __getitem__(self, name: str) -> Tool:
        return self.entries[name].tool

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def get(self, name: str, default: Any = None) -> Any:
        entry = self.entries.get(name)
        return entry.tool if entry is not None else default

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def build_view(
    tools: Mapping[str, Tool], rules: list[FaultRule], seed: int, state: dict[str, Any]
) -> SurfaceView | None:
    """The episode's surface under ``rules`` (surface kinds, and the refresh tool of a token
    that expires), or ``None`` when nothing changes it. Each rule decides once, from its own
    stream, whether it fires (``probability``) and how."""
    from simforge.faults.data import TokenExpiry

    surface = [r for r in rules if isinstance(r.fault, SurfaceKind)]
    tokens = [r for r in rules if isinstance(r.fault, TokenExpiry)]
    if not surface and not tokens:
        return None
    view = SurfaceView(tools)
    for rule in surface:
        rng = random.Random(f"{seed}\x1fsurface\x1f{rule.id}")
        if rng.random() >= rule.probability:
            continue
        targets = [n for n, t in tools.items() if rule.applies_to(t.spec)]
        assert isinstance(rule.fault, SurfaceKind)
        before = {n: (e.spec, e.available_from) for n, e in view.entries.items()}
        rule.fault.change(view, targets, rng)
        touched = sorted(
            n for n, e in view.entries.items() if before.get(n) != (e.spec, e.available_from)
        )
        view.fired.append({"kind": rule.fault.kind, "rule": rule.id, "tools": touched,
                           "params": rule.fault.model_dump(exclude={"kind"})})
    for rule in tokens:
        fault = rule.fault
        assert isinstance(fault, TokenExpiry)
        if fault.tool in view:
            continue
        rule_state = state.setdefault(rule.id, {})

        def refresh(ctx: Any, args: Any, fault: TokenExpiry = fault,
                    rule_state: dict[str, Any] = rule_state) -> dict[str, Any]:
            return {"refreshed": True, "expires_in": round(
                fault.refreshed(rule_state, ctx.now) - ctx.now, 6)}

        spec = ToolSpec(
            name=fault.tool,
            description="Refresh the session's access token when a call answers "
                        "token_expired; then retry the call.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            kind="read",
        )
        view.add_tool(Tool(spec, _RefreshArgs, refresh))
    return view

