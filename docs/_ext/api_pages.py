"""The API reference: one page per public module of meanfield_pde, written when the build starts.

A module is public when no part of its dotted name after ``meanfield_pde`` starts with an
underscore. Each page is an ``automodule`` with its own members (autodoc's default options in
``conf.py``: every public function and class the module defines, with its docstring);
a package's page also lists its modules. The top-level names (``meanfield_pde.__all__``) are
documented on ``api/index`` under their short names (``meanfield_pde.run``).

The pages are generated into ``docs/api/generated`` (not in git). ``docs/check_build.py``
checks the result the other way round: every public function and class found in the source
is in the built reference's inventory.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


def public_modules(package: str = "meanfield_pde") -> list[str]:
    """Dotted names of the package's public modules (packages included), sorted."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


def is_package(name: str) -> bool:
    return hasattr(importlib.import_module(name), "__path__")


def page(name: str, modules: list[str]) -> str:
    """The reST text of one module's page."""
    title = f"``{name}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {name}", ""]
    if name == "meanfield_pde":  # the top-level names, loaded on first use: documented one by one
        lines += ["   :no-members:", ""] + top_level()
    # the subpackages of the top level are listed on api/index
    children = [m for m in modules if m.rpartition(".")[0] == name and name != "meanfield_pde"]
    if children:
        lines += [".. rubric:: Modules", "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {m}" for m in children] + [""]
    return "\n".join(lines)


def top_level() -> list[str]:
    """Lines documenting every name of ``meanfield_pde.__all__`` under its short name."""
    import inspect

    import meanfield_pde
    lines = [".. rubric:: The functions and classes of ``import meanfield_pde as mf``", "",
             ".. autosummary::", ""]
    lines += [f"   {n}" for n in meanfield_pde.__all__] + [""]
    for n in meanfield_pde.__all__:
        obj = getattr(meanfield_pde, n)
        if inspect.isclass(obj):
            kind = "autoexception" if issubclass(obj, BaseException) else "autoclass"
            lines += [f".. {kind}:: meanfield_pde.{n}", "   :no-members:", "   :no-index:", ""]
        else:
            lines += [f".. autofunction:: meanfield_pde.{n}", "   :no-index:", ""]
    return lines


def alias_top_level(app, env) -> None:
    """``meanfield_pde.run`` etc. as aliases of their documented definitions.

    The top-level page shows them without index entries (:func:`top_level`): documented
    twice, a reference to ``Config`` or ``ConfigError`` would have two targets. As aliases
    they resolve (``meanfield_pde.run``) and are in the inventory, and a short reference
    finds the one definition."""
    import meanfield_pde
    from sphinx.domains.python import ObjectEntry
    objects = env.get_domain("py").objects
    for n in meanfield_pde.__all__:
        obj = getattr(meanfield_pde, n)
        entry = objects.get(f"{obj.__module__}.{obj.__qualname__}")
        if entry is not None:
            objects[f"meanfield_pde.{n}"] = ObjectEntry(entry.docname, entry.node_id,
                                                       entry.objtype, aliased=True)


def write_pages(app) -> None:
    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    modules = public_modules()
    wanted = {f"{m}.rst": page(m, modules) for m in modules}
    for old in out.glob("*.rst"):
        if old.name not in wanted:
            old.unlink()
    for fname, text in wanted.items():
        path = out / fname
        if not path.exists() or path.read_text() != text:  # unchanged pages are not re-read
            path.write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    app.connect("env-updated", alias_top_level)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
