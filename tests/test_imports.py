"""The import contracts in pyproject.toml hold (import-linter, deferred imports included): the
layers of docs/architecture.md, each importing only those below it; library code never imports
the root CLI; the environment's path no CLI or server stack. And no two modules import each
other, directly or through others."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is a test dependency (pip install -e '.[dev]')"
    result = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other():
    """Deferred imports inside functions count (they run); imports under ``TYPE_CHECKING`` do
    not (they never run), as in the import-linter configuration."""
    graph = grimp.build_graph("simforge", cache_dir=None, exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    """The check above can fail: a package of three modules importing in a ring is one cycle."""
    package = tmp_path / "ringpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from ringpkg import b\n")
    (package / "b.py").write_text("def f():\n    from ringpkg import c\n")
    (package / "c.py").write_text("import ringpkg.a\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    import ringpkg.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("ringpkg", cache_dir=None, exclude_type_checking_imports=True)
    assert _cycles(graph) == [["ringpkg.a", "ringpkg.b", "ringpkg.c"]]
