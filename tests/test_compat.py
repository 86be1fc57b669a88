"""The old flat module paths still import for one release (the only test that uses them),
and the public API of the package root is unchanged."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import meanfield_pde
from meanfield_pde import _compat


@pytest.mark.parametrize("old", sorted(set(_compat.MOVED) - set(dir(meanfield_pde))))
def test_old_path_is_the_new_module(old):
    with pytest.warns(DeprecationWarning, match=f"meanfield_pde.{old} is now"):
        sys.modules.pop(f"meanfield_pde.{old}", None)
        module = importlib.import_module(f"meanfield_pde.{old}")
    assert module is importlib.import_module(f"meanfield_pde.{_compat.MOVED[old]}")
    assert module.__name__ == f"meanfield_pde.{_compat.MOVED[old]}"  # the real module, untouched


def test_old_path_named_like_a_root_function():
    """meanfield_pde.resume is the function; the old module path still imports and does not
    rebind it."""
    from meanfield_pde.resume import resume_point
    from meanfield_pde.runs.resume import resume_point as new
    from meanfield_pde.runs.restart import resume
    assert resume_point is new and meanfield_pde.resume is resume


def test_submodule_of_an_old_subpackage_is_not_loaded_twice():
    import meanfield_pde.particles.normalisation.schemes as new
    with pytest.warns(DeprecationWarning):
        sys.modules.pop("meanfield_pde.normalisation.schemes", None)
        old = importlib.import_module("meanfield_pde.normalisation.schemes")
    assert old is new
    from meanfield_pde.numerics.steppers.tableaus import TABLEAUS
    with pytest.warns(DeprecationWarning):
        sys.modules.pop("meanfield_pde.steppers.tableaus", None)
        assert importlib.import_module("meanfield_pde.steppers.tableaus").TABLEAUS is TABLEAUS


@pytest.mark.parametrize("old, names", [
    ("long_context", ["one_layer_inner_product", "direct_inner_products", "equiangular_tokens"]),
    ("phase", ["save_sweep_figure", "crossing_time", "critical_noise_fit",
               "equiangular_transition_time"]),
    ("runner", ["run", "resume", "build", "check_run_arguments"]),
    ("particle_runner", ["run_particles", "resume_particles", "run_comparison", "comparison_paths"]),
])
def test_split_module_offers_every_part(old, names):
    with pytest.warns(DeprecationWarning):
        sys.modules.pop(f"meanfield_pde.{old}", None)
        module = importlib.import_module(f"meanfield_pde.{old}")
    for name in names:
        assert callable(getattr(module, name)), name


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


def test_old_paths_in_a_fresh_interpreter():
    """A fresh process (no module imported yet) imports the old paths the README used to show."""
    code = ("import warnings; warnings.simplefilter('ignore', DeprecationWarning)\n"
            "from meanfield_pde.linear import growth_rates\n"
            "from meanfield_pde.particle_runner import run_particles, run_comparison\n"
            "from meanfield_pde.normalisation import simulate\n"
            "from meanfield_pde import long_context as lc\n"
            "print(lc.one_layer_inner_product(0.5, 2.0, 1e8))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout.split()[-1]) - 0.8) < 1e-6  # 4ρ/(1+3ρ) at ρ = 1/2, critical line


@pytest.mark.parametrize("where, old, new", [(w, o, n) for w, names in _compat.RENAMED.items()
                                             for o, n in names.items()])
def test_renamed_public_name_still_works_with_a_warning(where, old, new):
    """SCHEMES, Scheme, get_scheme, simulate, velocity each meant different things in
    different modules; the renamed ones answer under the old name for one release."""
    module = importlib.import_module(f"meanfield_pde.{where}")
    with pytest.warns(DeprecationWarning, match=f"{where}.{old} is now meanfield_pde.{where}.{new}"):
        value = getattr(module, old)
    assert value is getattr(module, new)


def test_each_renamed_public_name_has_one_meaning():
    """No two modules export the new names for different objects."""
    seen = {}
    for where, names in _compat.RENAMED.items():
        module = importlib.import_module(f"meanfield_pde.{where}")
        for new in names.values():
            assert seen.setdefault(new, getattr(module, new)) is getattr(module, new), new
