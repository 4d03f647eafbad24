"""JSON schemas derived from a pack's declarations, remembered per pack content hash.

Building a tool's JSON schema (pydantic's ``model_json_schema`` of its argument model, and the
schema of its return type) and an entity's costs about a millisecond each; a pack of 167 tools
and 41 entities spent most of a warm ``make`` on them, in every process. They depend on nothing
but the pack's files, simforge's source and the library versions, so while a pack folder is
imported (:func:`deriving`) each is looked up in one disk-cache entry (:mod:`simforge.cache`)
keyed by the folder's fingerprint, and the entry is written after the import when something had
to be computed. Outside :func:`deriving` (a pack built in code, a test) every schema is computed.

Within one import a declaration is named by a key (its kind, module, qualified name and tool
name). Should two different objects come under the same key (a factory declaring tools in a
loop under one function name), the key is ambiguous: each is computed, and none is stored.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

NAMESPACE = "schemas"

_local = threading.local()


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

    def get(self, key: str, source: object, compute: Callable[[], Any]) -> Any:
        seen = self.sources.get(key)
        if seen is None:
            self.sources[key] = id(source)
        elif seen != id(source):
            self.ambiguous.add(key)
            self.values.pop(key, None)
            return compute()
        if key in self.values:
            # a copy: each declaration owns its schema, as when it is computed
            return orjson.loads(orjson.dumps(self.values[key]))
        value = compute()
        self.values[key] = orjson.loads(orjson.dumps(value))
        self.computed = True
        return value

    def save(self) -> None:
        from simforge import cache

        if self.entry is None or not self.computed:
            return
        keep = {k: v for k, v in self.values.items() if k not in self.ambiguous}
        cache.store(NAMESPACE, self.entry, keep)


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
        state.save()
        raise
    _local.state = previous
    if not state.proven:
        state.values[IMPORTED] = True
        state.computed = True
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
    return state.get(key, source, compute)


def name_of(obj: Any) -> str:
    """``module:qualname`` of a function or class (part of a key)."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"
