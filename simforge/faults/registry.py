"""The fault kinds simforge knows: the built-ins, then third parties' through the entry-point
group ``simforge.faults`` (each entry point names a :class:`~simforge.faults.kinds.FaultKind`
subclass, or a list of them).

Plugins are loaded once, eagerly, when this module is imported (a rule's ``fault`` is a
discriminated union over every kind, built here), and validated: a subclass of ``FaultKind``
with a ``kind`` field whose default is its name, a known stage, a ``wrapper``
(:class:`~simforge.faults.effects.Wrapper`) that overrides that stage's hook and no other
(:data:`~simforge.faults.effects.HOOKS`; a ``result`` kind may write ``apply`` instead), a name
no other kind has. A
plugin that fails any of that is a :class:`~simforge.errors.PluginError` naming it.
"""

from __future__ import annotations

from typing import Annotated, Any, Union, get_args

from pydantic import Field

from simforge.errors import PluginError
from simforge.faults.data import DATA_KINDS
from simforge.faults.effects import HOOKS, Wrapper
from simforge.faults.kinds import NETWORK_KINDS, FaultKind, Rewrite, Stage
from simforge.faults.surface import SURFACE_KINDS
from simforge.faults.wire import WIRE_KINDS
from simforge.plugins import PLUGINS, entry_points

GROUP = "simforge.faults"
BUILTIN: tuple[type[FaultKind], ...] = (*NETWORK_KINDS, *WIRE_KINDS, *DATA_KINDS, *SURFACE_KINDS)
_STAGES = set(get_args(Stage))


def kind_name(cls: type[FaultKind], where: str) -> str:
    field = cls.model_fields.get("kind")
    name = field.default if field is not None else None
    if not isinstance(name, str) or not name:
        raise PluginError(f"fault kind {where}: needs a `kind` field whose default is its name")
    stage = getattr(cls, "stage", None)
    if stage not in _STAGES:
        raise PluginError(f"fault kind {where}: stage {stage!r} is not one of {sorted(_STAGES)}")
    if stage != "surface":
        _check_wrapper(cls, str(stage), where)
    return name


def _check_wrapper(cls: type[FaultKind], stage: str, where: str) -> None:
    """A call-stage kind's wrapper overrides its stage's hook, and only that one."""
    wrapper = cls.wrapper if cls.wrapper is not None else (Rewrite if stage == "result" else None)
    if not (isinstance(wrapper, type) and issubclass(wrapper, Wrapper)):
        raise PluginError(f"fault kind {where}: `wrapper` must be a Wrapper subclass that "
                          f"overrides `{HOOKS[stage]}` (the {stage} stage's hook)")
    changed = sorted(h for h in HOOKS.values() if getattr(wrapper, h) is not getattr(Wrapper, h))
    if changed != [HOOKS[stage]]:
        raise PluginError(f"fault kind {where}: its wrapper {wrapper.__name__} overrides "
                          f"{changed or 'no hook'}; a {stage} kind's overrides "
                          f"`{HOOKS[stage]}` alone")


def _plugins() -> list[tuple[str, type[FaultKind]]]:
    found: list[tuple[str, type[FaultKind]]] = []
    for ep in entry_points(group=GROUP):
        where = f"{ep.name!r} ({ep.value})"
        try:
            loaded: Any = ep.load()
        except Exception as exc:
            raise PluginError(f"fault kind {where}: failed to load: {type(exc).__name__}: "
                              f"{exc}") from exc
        for cls in loaded if isinstance(loaded, list | tuple) else [loaded]:
            if not (isinstance(cls, type) and issubclass(cls, FaultKind)):
                raise PluginError(f"fault kind {where}: {cls!r} is not a FaultKind subclass")
            found.append((where, cls))
    return found


def _collect() -> dict[str, type[FaultKind]]:
    kinds: dict[str, type[FaultKind]] = {}
    for cls in BUILTIN:
        kinds[kind_name(cls, cls.__name__)] = cls
    for where, cls in _plugins():
        name = kind_name(cls, where)
        if name in kinds:
            raise PluginError(f"fault kind {where}: the name {name!r} is taken")
        kinds[name] = cls
    return kinds


KINDS: dict[str, type[FaultKind]] = PLUGINS.fault_kinds
"""Every fault kind by name, built-ins first (the default registry's table,
:data:`simforge.plugins.PLUGINS`); the set is closed once collected: ``Fault`` below is the
discriminated union of exactly these."""
KINDS.update(_collect())

Fault = Annotated[Union[tuple(KINDS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007
"""A rule's ``fault``: any registered kind, told apart by ``kind``."""
