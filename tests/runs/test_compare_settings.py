"""One meaning for `compare` (issue 35 item 2): the compare run and `meanfield-pde compare` of its
two files take their defaults from one place (meanfield_pde.runs.compare_settings), state them in
`--help`, record them in the file, and give the same numbers; and `compare` shows its progress
when its output goes to a file (item 1)."""

import inspect
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield_pde.analysis import compare as compare_module
from meanfield_pde.analysis.compare import compare
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs import compare_settings
from meanfield_pde.runs.config.study_sections import ParticlesConfig

from helpers.commands import cli

# a short compare run: L = 31 (4608 grid points: the grid is binned), n = 100, 3 snapshots
SHORT = ["--set", "particles.n=100", "--set", "time.t_end=0.2", "--set", "domain.lmax=31",
         "--set", "output.plot=false"]


@pytest.fixture(scope="module")
def compare_run(tmp_path_factory):
    """`meanfield-pde run particles_usa_beta4_vmf` (a compare run, defaults untouched), its
    stdout and stderr going to a file."""
    folder = tmp_path_factory.mktemp("compare_run")
    with open(folder / "run.log", "w") as log:
        proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "particles_usa_beta4_vmf",
                               "-o", "r.nc", *SHORT], cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                              timeout=600)
    assert proc.returncode == 0, (folder / "run.log").read_text()
    return folder


@pytest.mark.slow
def test_the_compare_run_and_compare_of_its_two_files_give_the_same_numbers(compare_run):
    proc = cli("compare", "r.nc", "r_particles.nc", "-o", "c.nc", "--no-plot", "-q", cwd=compare_run)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(compare_run / "r_compare.nc") as run_side, \
            xr.open_dataset(compare_run / "c.nc") as command_side:
        assert set(run_side.data_vars) == set(command_side.data_vars)
        assert {"l2_distance", "expected_statistical_l2", "sliced_wasserstein",
                "sliced_wasserstein_floor"} <= set(run_side.data_vars)
        for name in run_side.data_vars:  # the same computation on the same numbers: bit for bit
            np.testing.assert_array_equal(run_side[name].values, command_side[name].values, err_msg=name)
        for side in (run_side, command_side):  # the settings used, recorded
            assert side.attrs["smoothing"] == compare_settings.SMOOTHING
            assert side.attrs["n_projections"] == compare_settings.PROJECTIONS
            assert side.attrs["seed"] == compare_settings.SEED
            assert side.attrs["wasserstein_p"] == compare_settings.POWER


@pytest.mark.slow
def test_compare_prints_progress_into_a_file(compare_run):
    """Output redirected to a file: lines of progress (no carriage returns), from the
    standalone command and from the compare run; none with --quiet."""
    log = compare_run / "compare.log"
    with open(log, "w") as out:
        proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "compare", "r.nc",
                               "r_particles.nc", "-o", "p.nc", "--no-plot"], cwd=compare_run,
                              stdout=out, stderr=subprocess.STDOUT, timeout=300)
    text = log.read_text()
    assert proc.returncode == 0, text
    for written in (text, (compare_run / "run.log").read_text()):
        assert "\r" not in written
        assert f"compare: sliced Wasserstein: 0/{compare_settings.PROJECTIONS} great circles" in written
        assert f"{compare_settings.PROJECTIONS}/{compare_settings.PROJECTIONS} great circles (100%)" in written
    quiet = cli("compare", "r.nc", "r_particles.nc", "-o", "q.nc", "--no-plot", "-q", cwd=compare_run)
    assert quiet.returncode == 0 and quiet.stderr == "" and "sliced Wasserstein:" not in quiet.stdout


def test_help_states_the_defaults_of_the_one_place(tmp_path):
    text = " ".join(cli("compare", "--help", cwd=tmp_path).stdout.split())
    assert (f"default: {compare_settings.SMOOTHING:g} when either run is a particle run, as "
            "particles.smoothing of a compare run; 0 between two PDE runs") in text
    assert f"default: {compare_settings.PROJECTIONS})" in text
    assert f"(default: {compare_settings.SEED})" in text
    # the case's [particles] section and the Python function take the same defaults
    particles = ParticlesConfig()
    assert particles.smoothing == compare_settings.SMOOTHING
    assert particles.projections == compare_settings.PROJECTIONS
    defaults = inspect.signature(compare).parameters
    assert defaults["n_projections"].default == compare_settings.PROJECTIONS
    assert defaults["seed"].default == compare_settings.SEED
    assert defaults["p"].default == compare_settings.POWER
    assert defaults["smoothing"].default is None  # = default_smoothing(a particle run or not)
    assert compare_settings.default_smoothing(True) == compare_settings.SMOOTHING
    assert compare_settings.default_smoothing(False) == 0.0


@pytest.mark.parametrize("flag, value, words", [
    ("--smoothing", "-0.1", "must be a number >= 0"), ("--smoothing", "nan", "must be a number >= 0"),
    ("--seed", "-1", "must be a whole number >= 0"), ("--seed", "1.5", "must be a whole number >= 0"),
])
def test_bad_flags_name_the_flag_and_the_range(tmp_path, flag, value, words):
    proc = cli("compare", "a.nc", "b.nc", "-o", "c.nc", f"{flag}={value}", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"argument {flag}: '{value}': {words}" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kwargs, field", [
    (dict(smoothing=-0.5), "smoothing = -0.5"), (dict(smoothing=float("inf")), "smoothing = inf"),
    (dict(n_projections=-1), "n_projections = -1"), (dict(n_projections=2.5), "n_projections = 2.5"),
    (dict(seed=-2), "seed = -2"), (dict(p=3), "p = 3"),
])
def test_bad_settings_are_refused_before_any_work(compare_run, monkeypatch, kwargs, field):
    def no_work(*args, **kw):
        raise AssertionError("the comparison started before its settings were checked")
    with xr.open_dataset(compare_run / "r.nc") as pde, \
            xr.open_dataset(compare_run / "r_particles.nc") as tokens:
        monkeypatch.setattr(compare_module, "common_times", no_work)
        with pytest.raises(ConfigError, match=field):
            compare(pde, tokens, **kwargs)
