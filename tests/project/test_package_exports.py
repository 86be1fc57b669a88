"""The packages runs/config/ and studies/sweep/ (split from one module each) keep one import
path: every public name defined in one of their modules is importable from the package, as
before the split (callers, tests and README import from ``meanfield_pde.runs.config`` and
``meanfield_pde.studies.sweep`` only). The package root offers the public functions, and a
name that says which registry it is (``TABLEAUS``, ``INTEGRATORS``, ...) is one object in every
module that offers it."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

import pytest

import meanfield_pde

PACKAGES = ["meanfield_pde.runs.config", "meanfield_pde.studies.sweep"]


def own_public_names(module) -> set[str]:
    """Public names that ``module`` itself defines at top level (def, class, assignment)."""
    names = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_re_exports_every_public_name_of_its_modules(package):
    pkg = importlib.import_module(package)
    modules = [importlib.import_module(f"{package}.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)]
    assert modules, f"{package} has no modules"
    for module in modules:
        for name in own_public_names(module):
            assert getattr(pkg, name, None) is getattr(module, name), f"{package}.{name} ({module.__name__})"


def test_the_names_imported_before_the_split_are_still_there():
    """The names that code, tests and README imported from the two modules before the split."""
    config = importlib.import_module("meanfield_pde.runs.config")
    for name in ("Config", "from_dict", "parse_toml", "parse_override", "apply_overrides",
                 "parse_grid_item", "parse_values", "time_unit", "RUN_KINDS", "SECTIONS",
                 "INITIAL_TYPES", "MAX_DESCRIPTION", "SWEEP_MEASURES",
                 "VonMisesFisher", "PerturbedUniform", "SphericalHarmonic", "LimitConfig",
                 "SweepConfig", "TransformerConfig", "BETA_MAX", "RTOL_MIN", "CFL_MIN"):
        assert hasattr(config, name), name
    assert set(config.__all__) <= set(dir(config))
    sweep = importlib.import_module("meanfield_pde.studies.sweep")
    for name in ("run_sweep", "plan_sweep", "run_point", "parse_grid_item", "dask_client",
                 "check_scheduler", "combine", "summarise", "final_coefficients", "grid_of",
                 "dim_names", "Plan", "Point", "MEASURES", "ALLOWED_FAILURES", "_fmt",
                 "_run_sweep"):
        assert hasattr(sweep, name), name


def test_public_api_of_the_root():
    from meanfield_pde.core.errors import ConfigError, NumericalFault, RunStoppedWarning
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs.config import Config, from_dict
    from meanfield_pde.runs.restart import resume
    from meanfield_pde.runs.runner import run
    assert (meanfield_pde.run, meanfield_pde.resume, meanfield_pde.load_case, meanfield_pde.from_dict,
            meanfield_pde.Config, meanfield_pde.ConfigError, meanfield_pde.NumericalFault,
            meanfield_pde.RunStoppedWarning) == (run, resume, load_case, from_dict, Config,
                                                 ConfigError, NumericalFault, RunStoppedWarning)
    from meanfield_pde.cli import main  # the entry point named in pyproject.toml
    assert callable(main)


# the registries and functions whose names say which one they are (TABLEAUS, INTEGRATORS,
# NORMALISATIONS, ...): module -> the names it offers, each one object wherever it is offered
ONE_MEANING = {
    "numerics.steppers.tableaus": ("TABLEAUS", "get_tableau"), "numerics.steppers": ("TABLEAUS", "get_tableau"),
    "particles.integrators": ("INTEGRATORS", "Integrator"), "particles": ("INTEGRATORS", "Integrator"),
    "particles.normalisation.schemes": ("NORMALISATIONS", "NormalisationScheme"),
    "particles.normalisation.dynamics": ("simulate_scheme", "scheme_velocity", "NormalisationScheme"),
    "particles.normalisation": ("NORMALISATIONS", "NormalisationScheme", "simulate_scheme", "scheme_velocity"),
}


def test_each_public_name_has_one_meaning():
    """No two modules offer one of these names for different objects."""
    seen = {}
    for where, names in ONE_MEANING.items():
        module = importlib.import_module(f"meanfield_pde.{where}")
        for name in names:
            assert seen.setdefault(name, getattr(module, name)) is getattr(module, name), (where, name)
