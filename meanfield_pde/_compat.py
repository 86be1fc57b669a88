"""The old flat module paths (``meanfield_pde.runner``, ``meanfield_pde.linear``, ...),
kept for one release as aliases of the layered modules; importing one warns
(DeprecationWarning) and names the new path.

The public names that meant different things in different modules and were
renamed (``RENAMED``: ``SCHEMES``, ``Scheme``, the steppers' ``get_scheme``,
the normalisation ``simulate`` and ``velocity``) answer under their old names
the same way, through a module ``__getattr__``.

This is the only place that knows the old layout and names. It sits at the top with the
package root and the command line: nothing in the package imports an old path.

``import meanfield_pde.runner`` returns the module ``meanfield_pde.runs.runner``
itself (so the module is the same object under both names). The few old modules
that were split between layers (``long_context``, ``phase``, ``runner``,
``particle_runner``) become a read-only merge of the public names of
their parts.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings

PACKAGE = "meanfield_pde"

# old flat name -> new module (a subpackage alias also covers its submodules)
MOVED = {
    "errors": "core.errors", "threads": "core.threads", "signals": "core.signals",
    "kernels": "core.kernels", "geometry": "core.geometry",
    "linear": "theory.linear", "equiangular": "theory.equiangular",
    "models": "numerics.models", "limits": "numerics.limits", "steppers": "numerics.steppers",
    "initial": "numerics.initial", "diagnostics": "numerics.diagnostics", "solver": "numerics.solver",
    "observers": "numerics.observers",
    "stationary": "numerics.stationary",
    "measures": "particles.measures", "normalisation": "particles.normalisation",
    "config": "runs.config", "cases": "runs.cases", "io": "runs.io", "runfile": "runs.runfile",
    "outputs": "runs.outputs", "runcheck": "runs.runcheck", "resume": "runs.resume",
    "budget": "runs.budget",
    "compare": "analysis.compare", "clusters": "analysis.clusters",
    "sweep": "studies.sweep", "limit_sweep": "studies.limit_sweep",
    "transformer_study": "studies.transformer_study",
    "plot": "plotting.plot", "plot_compare": "plotting.plot_compare",
    "transformer_plot": "plotting.transformer_plot",
}
# (``meanfield_pde.cli`` and ``meanfield_pde.particles`` keep their names: the cli
# package exports ``main``, the entry point of the old cli module.)

# old modules split between layers -> their parts (the first one named in the warning)
SPLIT = {
    "long_context": ("theory.long_context", "particles.long_context"),
    "phase": ("plotting.phase", "analysis.phase", "theory.equiangular"),
    "runner": ("runs.runner", "runs.restart", "runs.budget"),
    "particle_runner": ("runs.particle_runner", "studies.compare_particles"),
}

# public names that meant different things in different modules, renamed so that each
# name has one meaning: module -> {old name: new name}
_TABLEAU = {"SCHEMES": "TABLEAUS", "get_scheme": "get_tableau"}
_INTEGRATOR = {"SCHEMES": "INTEGRATORS", "Scheme": "Integrator"}
_NORMALISATION = {"SCHEMES": "NORMALISATIONS", "Scheme": "NormalisationScheme"}
_SCHEME_RUN = {"simulate": "simulate_scheme", "velocity": "scheme_velocity"}
RENAMED = {
    "numerics.steppers.tableaus": _TABLEAU, "numerics.steppers": _TABLEAU,
    "particles.integrators": _INTEGRATOR, "particles": _INTEGRATOR,
    "particles.normalisation.schemes": _NORMALISATION,
    "particles.normalisation.dynamics": {**_SCHEME_RUN, "Scheme": "NormalisationScheme"},
    "particles.normalisation": {**_NORMALISATION, **_SCHEME_RUN},
}


def _renamed_attribute(module, names: dict):
    """A module ``__getattr__`` (PEP 562) answering the old names with a DeprecationWarning."""
    previous = module.__dict__.get("__getattr__")

    def __getattr__(name):
        if name in names:
            warnings.warn(f"{module.__name__}.{name} is now {module.__name__}.{names[name]}; "
                          "the old name goes in the next release", DeprecationWarning, stacklevel=2)
            return getattr(module, names[name])
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
    return __getattr__


def new_name(old: str) -> str | None:
    """The layered module behind an old dotted path ``meanfield_pde.X[.Y]`` (None: not old)."""
    parts = old.split(".")
    if len(parts) < 2 or parts[0] != PACKAGE:
        return None
    if parts[1] in MOVED:
        return ".".join([PACKAGE, MOVED[parts[1]], *parts[2:]])
    if parts[1] in SPLIT and len(parts) == 2:
        return f"{PACKAGE}.{SPLIT[parts[1]][0]}"
    return None


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # a fresh module; exec_module puts the real one in its place

    def exec_module(self, module):
        old = module.__name__
        target = new_name(old)
        warnings.warn(f"{old} is now {target}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=2)
        head = old.split(".")[1]
        if head in SPLIT:
            for part in SPLIT[head]:
                real = importlib.import_module(f"{PACKAGE}.{part}")
                for name, value in vars(real).items():
                    if not name.startswith("_"):
                        module.__dict__.setdefault(name, value)
            return
        # the import system returns whatever sys.modules holds after exec_module
        sys.modules[old] = importlib.import_module(target)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader())


class _RenamingLoader(importlib.abc.Loader):
    """The real loader of a module of RENAMED, which then answers the old names too."""

    def __init__(self, loader, names: dict):
        self.loader, self.names = loader, names

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _add_renames(module, self.names)


class _RenamingFinder(importlib.abc.MetaPathFinder):
    """Gives the modules of RENAMED their old names when they load, so that the package
    root need not import them (numerics, particles: seconds) to install the aliases."""

    def find_spec(self, fullname, path=None, target=None):
        where = fullname[len(PACKAGE) + 1:] if fullname.startswith(PACKAGE + ".") else None
        if where not in RENAMED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _RenamingLoader(spec.loader, RENAMED[where])
        return spec


def _add_renames(module, names: dict) -> None:
    if not getattr(module.__dict__.get("__getattr__"), "_renames", False):
        module.__getattr__ = _renamed_attribute(module, names)
        module.__getattr__._renames = True


class _Root(types.ModuleType):
    """The package root: importing an old module path named like one of its lazy public names
    (``meanfield_pde.resume``) must not rebind that name to the module, as the import system
    does for every submodule it loads."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in self.__dict__.get("_LAZY", ()):
            return
        super().__setattr__(name, value)


def install(lazy: dict) -> None:
    """Make the old paths importable (idempotent) without importing any module that
    carries them; ``lazy``: the root's names loaded on first use (its ``_LAZY``)."""
    for finder in (_RenamingFinder, _AliasFinder):
        if not any(isinstance(f, finder) for f in sys.meta_path):
            # First: the alias of a subpackage (meanfield_pde.normalisation) has the real
            # package's __path__, where the path finder would load its submodules a second
            # time under the old names. It answers for old names only.
            sys.meta_path.insert(0, finder())
    for where, names in RENAMED.items():  # those loaded before the finder was there
        module = sys.modules.get(f"{PACKAGE}.{where}")
        if module is not None:
            _add_renames(module, names)
    sys.modules[PACKAGE].__class__ = _Root
