"""The package's layers hold: every import (also inside functions and under
``if TYPE_CHECKING``) goes to the same layer or a lower one, the module graph has
no cycle, and no private name (leading underscore) crosses a module boundary.

Layers, lowest first (siblings in braces may not import each other)::

    core -> theory -> {numerics, particles} -> runs -> analysis -> {studies, plotting} -> cli

The package root and ``__main__`` sit on top with the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import meanfield_pde

PACKAGE = "meanfield_pde"
ROOT = Path(meanfield_pde.__file__).resolve().parent

# rank of each layer; equal ranks are siblings, which must not import each other
LAYERS = {"core": 0, "theory": 1, "numerics": 2, "particles": 2, "runs": 3, "analysis": 4,
          "studies": 5, "plotting": 5, "cli": 6}
# The package root and __main__ are entry points: they count as the cli layer.
ENTRY_POINTS = (PACKAGE, f"{PACKAGE}.__main__")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def layer(module: str) -> tuple[str, int]:
    """(layer name, rank) of a module of the package."""
    parts = module.split(".")
    if module in ENTRY_POINTS:
        return "cli", LAYERS["cli"]
    if len(parts) == 1 or parts[1] not in LAYERS:
        return "none", -1
    return parts[1], LAYERS[parts[1]]


def imports(module: str, source: str, is_package: bool) -> list[tuple[str, str | None]]:
    """Every (imported module, imported name or None) of the package in ``source``,
    from all import statements at any depth. ``from a import b`` where ``a.b`` is a
    module counts as an import of ``a.b``."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == PACKAGE:
                found += [(target, a.name) for a in node.names]
    return found


def package_graph(root: Path = ROOT) -> dict[str, list[tuple[str, str | None]]]:
    """module -> its imports, for every .py file under ``root``."""
    graph = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        graph[name] = imports(name, path.read_text(encoding="utf-8"), path.name == "__init__.py")
    return graph


def resolve(graph, target: str, name: str | None) -> str:
    """The module an import refers to: ``from pkg import mod`` names the module pkg.mod."""
    if name is not None and f"{target}.{name}" in graph:
        return f"{target}.{name}"
    return target


def problems(graph) -> list[str]:
    """Upward or sideways imports, cycles (strongly connected components of more than one
    module; a package's ``__init__`` re-exporting its own modules is not a cycle of
    modules, so edges from a package to its own submodules are left out) and private
    names imported across modules."""
    found = []
    edges: dict[str, set[str]] = {m: set() for m in graph}
    for module, deps in graph.items():
        name_m, rank_m = layer(module)
        for target, name in deps:
            dep = resolve(graph, target, name)
            name_d, rank_d = layer(dep)
            if rank_d > rank_m or (rank_d == rank_m and name_d != name_m):
                found.append(f"upward: {module} ({name_m}) imports {dep} ({name_d})")
            # a package may import its own private submodule
            own_module = dep == f"{target}.{name}" and target in (module, module.rpartition(".")[0])
            if name is not None and name.startswith("_") and not name.startswith("__") \
                    and not own_module:
                found.append(f"private: {module} imports {name} from {target}")
            if dep in edges and dep != module and not dep.startswith(module + "."):
                edges[module].add(dep)
    found += [f"cycle: {' <-> '.join(sorted(c))}" for c in strongly_connected(edges) if len(c) > 1]
    return found


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative), components of the directed graph ``edges``."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]; counter[0] += 1
                    stack.append(child); on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop(); on_stack.discard(member); component.append(member)
                        if member == node:
                            break
                    out.append(component)
    return out


def test_every_module_is_in_a_layer():
    """No flat module left beside the layers except the package's entry points."""
    loose = [m for m in package_graph() if layer(m)[0] == "none"]
    assert loose == []


def test_layers_hold():
    assert problems(package_graph()) == []


def _write(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / PACKAGE
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("files, expected", [
    # an upward import, hidden inside a function
    ({"core/__init__.py": "", "core/a.py": "def f():\n    from ..runs.b import g\n",
      "runs/__init__.py": "", "runs/b.py": "def g(): ...\n"}, "upward: meanfield_pde.core.a"),
    # an import between siblings, under TYPE_CHECKING
    ({"numerics/__init__.py": "", "particles/__init__.py": "",
      "numerics/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from meanfield_pde.particles import b\n",
      "particles/b.py": ""}, "upward: meanfield_pde.numerics.a"),
    # a cycle inside one layer
    ({"runs/__init__.py": "", "runs/a.py": "from .b import g\n",
      "runs/b.py": "def g():\n    from .a import f\n"}, "cycle: meanfield_pde.runs.a <-> meanfield_pde.runs.b"),
    # a private name across modules
    ({"core/__init__.py": "", "core/a.py": "def _f(): ...\n",
      "core/b.py": "from .a import _f\n"}, "private: meanfield_pde.core.b imports _f"),
])
def test_detector_finds_each_fault(tmp_path, files, expected):
    """The detector itself: each synthetic fault is reported, a clean graph is not."""
    found = problems(package_graph(_write(tmp_path, files)))
    assert any(p.startswith(expected) for p in found), found


def test_detector_accepts_downward_imports(tmp_path):
    root = _write(tmp_path, {"core/__init__.py": "from .a import f\n", "core/a.py": "def f(): ...\n",
                             "runs/__init__.py": "", "runs/b.py": "from ..core import a\nfrom ..core.a import f\n",
                             "__init__.py": "from . import _c\nfrom .runs.b import f\n", "_c.py": ""})
    assert problems(package_graph(root)) == []
