"""The one registry of what a plugin can add to simforge: validators, invariants, policy checks,
fault kinds, trace formats and pack formats, each a :class:`Table` of one :class:`Plugins`.

Why one object: the layers that use plugins sit below the layers that define the built-ins (the
scenario loader checks validator names that the scorer defines, and loads packs that synthesis
writes), so they cannot import them. They are handed a :class:`Plugins` instead
(``ScenarioRegistry(plugins=...)``, ``load_pack(..., formats=...)``), and the owner of each kind
registers into it: the scorer's ``@validator``, ``@invariant`` and ``@policy_check``, the fault
kinds of :mod:`simforge.faults.registry`, the trace formats of :mod:`simforge.trace.registry`,
and the package's root (:mod:`simforge`), which wires the synthesized-pack format and the
loaders of plugin files and entry points (:meth:`Plugins.add_source`).

:data:`PLUGINS` is the process's default, the one ``simforge.make``, the CLI and the servers
use. A name registered twice by two different plugins is a :class:`~simforge.errors.PluginError`
naming both (two plugins silently replacing each other would change rewards without a trace).
This layer imports nothing of simforge but its errors.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from simforge.errors import PluginError

T = TypeVar("T")


def origin_of(entry: Any) -> str:
    """Where an entry was defined, to name it in errors: ``module.qualname`` of a function or
    class (of the ``fn`` a definition wraps), else its type."""
    target = getattr(entry, "fn", entry)
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None)
    if module and name:
        return f"{module}.{name}"
    return type(entry).__name__


class Table(dict[str, T]):
    """One kind of plugin: name -> entry. A plain ``dict`` for lookups (validators are looked up
    on every scored episode); :meth:`register` is the checked way in."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def register(self, name: str, entry: T, *, origin: str | None = None) -> T:
        """Add ``entry`` under ``name``. The same definition again (a module imported twice,
        as plugin files loaded by path may be) replaces itself; another raises
        :class:`PluginError` naming both."""
        existing = self.get(name)
        if existing is not None:
            before, now = origin_of(existing), origin or origin_of(entry)
            if before != now:
                raise PluginError(
                    f"{self.kind} {name!r} is already registered by {before} (again by {now})"
                )
        self[name] = entry
        return entry

    def lookup(self, name: str) -> T:
        """The entry ``name``; :class:`PluginError` listing the registered names otherwise."""
        try:
            return self[name]
        except KeyError:
            raise PluginError(
                f"unknown {self.kind} {name!r}; registered: {sorted(self)}"
            ) from None


class Plugins:
    """Every kind of plugin, and the sources that register them (plugin files, entry points),
    run eagerly by :meth:`load`."""

    def __init__(self) -> None:
        self.validators: Table[Any] = Table("validator")
        self.invariants: Table[Any] = Table("invariant")
        self.policy_checks: Table[Any] = Table("policy check")
        self.fault_kinds: Table[Any] = Table("fault kind")
        self.trace_formats: Table[Any] = Table("trace format")
        self.pack_formats: Table[Callable[[Any], Any]] = Table("pack format")
        """A pack folder holding the file named by the key is loaded by its value
        (``folder -> Pack``); a hand-written pack (``pack.py``) needs none."""
        self._sources: dict[str, Callable[[], object]] = {}
        self._lock = threading.RLock()
        self.serial = next(_SERIALS)
        """Tells registries apart for as long as the process lives (an ``id`` may be reused)."""

    def copy(self) -> Plugins:
        """A registry that starts with everything this one has (entries and sources) and then
        goes its own way: a scenario with plugins of its own beside the default's."""
        other = Plugins()
        for name in _KINDS:
            getattr(other, name).update(getattr(self, name))
        other._sources.update(self._sources)
        return other

    def add_source(self, name: str, load: Callable[[], object]) -> None:
        """A loader of plugins (e.g. every file of the ``validators/`` folders) that
        :meth:`load` runs before plugins are looked up; ``name`` says what it loads."""
        with self._lock:
            self._sources.setdefault(name, load)

    def load(self) -> None:
        """Run every source. Sources are idempotent (each loads what it has not loaded yet, so
        a plugin folder added since the last call is picked up); a source's error propagates:
        a broken plugin fails here, named."""
        with self._lock:
            for source in list(self._sources.values()):
                source()


def entry_points(*, group: str) -> Any:
    """The installed entry points of ``group`` (``importlib.metadata.EntryPoints``).
    ``importlib.metadata`` reads every installed distribution's metadata for any one group (390
    here, 20 ms); simforge looks up four groups (packs, validators, fault kinds, trace
    formats), each once a process, so the distributions are read once, at the first."""
    return _installed_entry_points().select(group=group)


@cache
def _installed_entry_points() -> Any:
    from importlib.metadata import entry_points as read

    return read()


_SERIALS = itertools.count()
_KINDS = ("validators", "invariants", "policy_checks", "fault_kinds", "trace_formats",
          "pack_formats")

PLUGINS = Plugins()
"""The process's default registry (see the module's docstring)."""
