"""Fixtures shared by the folders of the suite. The shared functions, constants and error
bounds are in the package ``helpers`` (tests/helpers/; ``pythonpath`` in pyproject.toml puts
tests/ on sys.path), imported by name: ``from helpers.bounds import EPS``."""

import shutil
from pathlib import Path

import pytest

# the helpers' own asserts (assert_user_error, one_error, assert_mass_kept, ...) report their
# values as the tests' do: registered before any test module imports them
pytest.register_assert_rewrite("helpers")

import meanfield_pde  # noqa: E402
from meanfield_pde import load_case  # noqa: E402

from helpers.cases import CASE, SETS, make_config  # noqa: E402


@pytest.fixture
def config_factory():
    return make_config


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A completed tiny run file (t = 0, 0.25, ..., 1)."""
    out = tmp_path_factory.mktemp("ref") / "run.nc"
    meanfield_pde.run(load_case(CASE, SETS), out, progress=False)
    return out


@pytest.fixture
def run_file(reference, tmp_path) -> Path:
    out = tmp_path / "run.nc"
    shutil.copy(reference, out)
    return out
