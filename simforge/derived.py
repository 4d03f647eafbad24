"""JSON schemas derived from a pack's declarations, remembered per pack content hash.

Building a tool's JSON schema (pydantic's ``model_json_schema`` of its argument model, and the
schema of its return type) and an entity's costs about a millisecond each; a pack of 167 tools
and 41 entities spent most of a warm ``make`` on them, in every process. They depend on nothing
but the pack's files, simforge's source and the library versions, so while a pack folder is
imported (:func:`deriving`) each is looked up in one disk-cache entry (:mod:`simforge.cache`)
keyed by the folder's fingerprint, and the entry is written after the import when something had
to be computed. Outside :func:`deriving` (a pack built in code, a test) every schema is computed.

A tool's schemas are made when its spec is first read (:func:`derived_later`,
:attr:`simforge.tools.tool.Tool.spec`), not when it is declared: a scenario offers a few of a
pack's tools (42 of acme's 167), and making the schemas of all of them (an argument model and
its JSON schema each) was half of a cold ``make``. Those made after the import are added to
the entry (rewritten whole) sixteen at a time and when the process exits.

Within one import a declaration is named by a key (its kind, module, qualified name and tool
name). Should two different objects come under the same key (a factory declaring tools in a
loop under one function name), the key is ambiguous: each is computed, and none is stored.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

NAMESPACE = "schemas"

_local = threading.local()


_BATCH = 16
"""Values made after a pack's import that are stored together (a process that ends without
running ``atexit``, a forked worker, leaves fewer than this to be made again)."""

IMPORTED = "<imported>"
"""The marker an entry holds once an import of its pack folder ran to the end without an error."""


class _Import:
    """What one pack import derived: values loaded from disk, the sources met per key."""

    def __init__(self, entry: str | None, values: dict[str, Any], folder: Path) -> None:
        self.entry = entry
        self.values = values
        self.folder = str(folder)
        self.proven = values.get(IMPORTED) is True
        self.sources: dict[str, int] = {}
        self.ambiguous: set[str] = set()
        self.computed = False
        self.finished = False
        self.pending = 0
        self.lock = threading.Lock()

    def claim(self, key: str, source: object) -> None:
        """``source`` declares ``key``; a second source under one key makes it ambiguous."""
        seen = self.sources.get(key)
        if seen is None:
            self.sources[key] = id(source)
        elif seen != id(source):
            self.ambiguous.add(key)
            self.values.pop(key, None)

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        if key in self.ambiguous:
            return compute()
        if key in self.values:
            # a copy: each declaration owns its schema, as when it is computed
            return orjson.loads(orjson.dumps(self.values[key]))
        value = compute()
        self.values[key] = orjson.loads(orjson.dumps(value))
        self.computed = True
        return value

    def later(self, key: str, compute: Callable[[], Any]) -> Any:
        """:meth:`get`, after the import too: values made after it are stored by the
        :data:`_BATCH` (the entry is rewritten whole) and the rest when the process exits."""
        computed = key not in self.values
        value = self.get(key, compute)
        if computed and self.finished:
            self.pending += 1
            if self.pending == 1:
                atexit.register(self.save)
            if self.pending >= _BATCH:
                self.save()
        return value

    def save(self) -> None:
        from simforge import cache

        if self.entry is None or not self.computed:
            return
        keep = {k: v for k, v in self.values.items() if k not in self.ambiguous}
        cache.store(NAMESPACE, self.entry, keep)
        self.computed = False
        if self.pending:
            atexit.unregister(self.save)
            self.pending = 0


@contextmanager
def deriving(folder: Path, fingerprint: str) -> Iterator[None]:
    """Within: schemas of declarations come from (and go to) the disk-cache entry of the pack
    folder whose content hash is ``fingerprint``."""
    from simforge import cache

    entry = cache.entry_key("pack-schemas", fingerprint) if cache.cache_root() else None
    loaded = cache.load(NAMESPACE, entry) if entry is not None else None
    state = _Import(entry, loaded if isinstance(loaded, dict) else {}, folder)
    previous = getattr(_local, "state", None)
    _local.state = state
    try:
        yield
    except BaseException:
        _local.state = previous
        state.finished = True
        state.save()
        raise
    _local.state = previous
    if not state.proven:
        state.values[IMPORTED] = True
        state.computed = True
    state.finished = True
    state.save()


def proven(path: str | None) -> bool:
    """Whether ``path`` (a module's file) lies in the pack folder being imported and an earlier
    import of that folder's very content (same files, simforge source and library versions, the
    key of the entry) ran to the end: what it declares was accepted then and will be again, so
    checks that only repeat what that import did can wait until something needs their result
    (:func:`simforge.world.schema.entity_base`: the SQLAlchemy mapping of entity tables)."""
    state: _Import | None = getattr(_local, "state", None)
    if state is None or not state.proven or not path:
        return False
    return path.startswith(state.folder + os.sep)


def derived(key: str, source: object, compute: Callable[[], Any]) -> Any:
    """``compute()`` (a JSON value), or the value remembered for ``key`` when a pack folder is
    being imported; ``source`` is the object the value is derived from (to tell two declarations
    under one key apart)."""
    state: _Import | None = getattr(_local, "state", None)
    if state is None:
        return compute()
    state.claim(key, source)
    return state.get(key, compute)


def derived_later(key: str, source: object, compute: Callable[[], Any]) -> Callable[[], Any]:
    """What :func:`derived` gives, made when the function returned is called (once: it
    remembers its value): a value wanted only by some processes (a tool's schemas, of the few
    tools a scenario offers) is not made at declaration. Declared while a pack folder is
    imported, the value comes from that folder's entry, and one made later is added to the
    entry at once, for the next process."""
    state: _Import | None = getattr(_local, "state", None)
    if state is None:
        return functools.cache(compute)
    state.claim(key, source)
    made: list[Any] = []

    def value() -> Any:
        with state.lock:
            if not made:
                made.append(state.later(key, compute))
            return made[0]

    return value


def name_of(obj: Any) -> str:
    """``module:qualname`` of a function or class (part of a key)."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"
