"""Scenarios become Gymnasium ids without ``import simforge`` importing Gymnasium.

Gymnasium (with NumPy and its vector utilities) costs about 0.12 s of CPU to import: an eighth of
the budget of a cold ``simforge.make``, spent by every worker process and Ray task that never
touches Gymnasium. So :func:`register_when_imported` registers the scenarios at once when
Gymnasium is already imported, and otherwise the moment it is: ``import simforge`` then
``import gymnasium; gymnasium.make("acme/refund-damaged-order-v1")`` works in either order.

Gymnasium 1.x has no plugin entry points for environments, and the standard library has no
post-import hook, hence this small meta-path finder (hand-written: the one library that offers
such hooks, ``wrapt``, is not otherwise a dependency). It finds nothing itself: on the first
import of ``gymnasium`` it asks the other finders for the spec and wraps its loader so that
the callback runs once the module has executed, then steps out of ``sys.meta_path``. A
callback that fails warns and leaves Gymnasium imported: its failure is simforge's, not the
import's.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

MODULE = "gymnasium"


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, after: Callable[[], Any]) -> None:
        self.inner = inner
        self.after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # the module's own loader again, for anything that later inspects or reloads it
        module.__loader__ = self.inner
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        _run(self.after)


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, after: Callable[[], Any]) -> None:
        self.name = name
        self.after = after

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        self.remove()
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self.after)
                return spec
        return None

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def _run(after: Callable[[], Any]) -> None:
    try:
        after()
    except Exception as exc:  # a broken scenario folder must not break `import gymnasium`
        warnings.warn(f"simforge: registering scenarios with Gymnasium failed: "
                      f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)


def register_when_imported(after: Callable[[], Any], module: str = MODULE) -> bool:
    """Run ``after`` now if ``module`` is imported, else right after its first import.
    Returns whether it ran now. Installing the same callback twice is a no-op."""
    if module in sys.modules:
        _run(after)
        return True
    if not any(isinstance(f, _AfterImport) and f.name == module and f.after is after
               for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(module, after))
    return False
