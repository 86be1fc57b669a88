"""Fixtures shared by the folders of the suite. The shared functions, constants and error
bounds are in the package ``helpers`` (tests/helpers/; ``pythonpath`` in pyproject.toml puts
tests/ on sys.path), imported by name: ``from helpers.bounds import EPS``."""

import shutil
from pathlib import Path

import pytest

# the helpers' own asserts (assert_user_error, one_error, assert_mass_kept, ...) report their
# values as the tests' do: registered before any test module imports them
pytest.register_assert_rewrite("helpers")

import meanfield_pde as mf  # noqa: E402

from helpers.cases import CASE, SETS, make_config  # noqa: E402


@pytest.fixture
def config_factory():
    return make_config


# -- a completed tiny circle run file, copied for each test (tests/runs: file safety, checksums,
# links, salvage, resume) ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A completed tiny run file (t = 0, 0.25, ..., 1)."""
    out = tmp_path_factory.mktemp("ref") / "run.nc"
    mf.run(mf.load_case(CASE, SETS), out, progress=False)
    return out


@pytest.fixture
def run_file(reference, tmp_path) -> Path:
    out = tmp_path / "run.nc"
    shutil.copy(reference, out)
    return out


# -- a short circle run as a Dataset (analysis on loaded outputs: tests/analysis, tests/runs; found
# through the README's "Python API" and "Output: loading a run" tours). Not the synthetic Dataset
# helpers.datasets.circle_run of the figures' tests.
@pytest.fixture(scope="module")
def circle_run():
    """A short circle run (seconds): 3 snapshots."""
    return mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.1, "output.every": 0.05}),
                  progress=False)
