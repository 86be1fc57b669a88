"""Resource bombs refused before work with their estimate (issue 13, item 11; meanfield_pde.runs.budget)."""

import time

import numpy as np
import pytest
import xarray as xr

from helpers.cases import CIRCLE, make_config
from helpers.commands import assert_user_error, cli
from meanfield_pde.core.errors import ConfigError



@pytest.fixture
def budget():
    """The estimator module (imported per test, so the CLI tests also run against a main without it)."""
    from meanfield_pde.runs import budget
    return budget


@pytest.fixture
def case(tmp_path):
    (tmp_path / "c.toml").write_text(CIRCLE)
    return tmp_path / "c.toml"


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    # 1e6 snapshots at lmax 255: 3.4 MB each
    (["--set", "domain.manifold='sphere'", "--set", "domain.lmax=255", "--set", "time.t_end=1",
      "--set", "output.every=1e-6"], ["output.every = 1e-06", "1e+06 snapshots of 3.41 MB",
                                      "writes about 3.41 TB", "free", "--force"]),
    (["--set", "run.kind='particles'", "--set", "particles.n=10000000"],
     ["particles.n = 10000000", "days per velocity", "the cap is 24 h"]),
    (["--set", "time.t_end=1e300"], ["time.t_end = 1e+300", "e+298 steps of the CFL step at unit speed",
                                     "time.max_steps = 10000000",
                                     "stop before storing anything"]),
])
def test_run_bombs_exit_2_with_the_estimate(tmp_path, case, args, words):
    start = time.perf_counter()
    proc = cli("run", case, "-o", "x.nc", *args, cwd=tmp_path)
    assert_user_error(proc, *words)
    assert not (tmp_path / "x.nc").exists() and time.perf_counter() - start < 30


@pytest.mark.slow
def test_normalisation_study_of_4096_tokens_in_4096_dimensions_is_refused(tmp_path):
    proc = cli("run", "normalisation_schemes", "--set", "transformer.n=4096",
               "--set", "transformer.dimension=4096", "-o", "n.nc", cwd=tmp_path)
    assert_user_error(proc, "transformer.n = 4096", "of memory; the machine has")


@pytest.mark.slow
def test_a_million_point_sweep_is_refused_before_any_point_is_built(tmp_path, case):
    start = time.perf_counter()
    proc = cli("sweep", case, "--grid", "model.beta=0:1:1000", "--grid", "model.nu=0:1:1000",
               "-o", "sw", cwd=tmp_path)
    assert_user_error(proc, "1e+06 points", "the cap is 10000")
    assert not (tmp_path / "sw").exists() and time.perf_counter() - start < 30


@pytest.mark.slow
def test_huge_case_file_and_description_are_refused(tmp_path, case):
    (tmp_path / "huge.toml").write_text('description = "' + "x" * 100_000_000 + '"\n' + CIRCLE)
    assert_user_error(cli("run", "huge.toml", cwd=tmp_path), "bytes; a case must be at most 1048576")
    (tmp_path / "desc.toml").write_text('description = "' + "x" * 20_000 + '"\n' + CIRCLE)
    assert_user_error(cli("run", "desc.toml", cwd=tmp_path), "description: 20000 characters", "10000")


@pytest.mark.slow
def test_compare_projections_beyond_the_cap_are_refused(tmp_path, case, budget):
    assert cli("run", case, "-o", "p.nc", "-q", "--set", "run.kind='particles'",
               "--set", "particles.n=20", cwd=tmp_path).returncode == 0
    assert cli("run", case, "-o", "f.nc", "-q", cwd=tmp_path).returncode == 0
    start = time.perf_counter()
    proc = cli("compare", "p.nc", "f.nc", "-o", "c.nc", "--projections", "100000000", cwd=tmp_path)
    assert_user_error(proc, "--projections 100000000", "the cap is 100000")
    assert not (tmp_path / "c.nc").exists() and time.perf_counter() - start < 30
    est = budget.projections_estimate(10**8, 1000, 1536, 51)  # the 9 GiB after 85 s
    # the great circles are taken in blocks: what grows is a number per pair and circle, and time
    assert est.memory > 16 * 51 * 10**8 and est.seconds > budget.MAX_HOURS * 3600


def test_force_lets_a_refused_case_through(case, budget):
    from meanfield_pde.runs.cases import load_case
    config = load_case(case, ["time.t_end=1e300"])
    with pytest.raises(ConfigError, match="time.max_steps"):
        budget.check_case(config)
    assert budget.check_case(config, force=True).seconds > 0
    with pytest.raises(ConfigError, match="force = 'yes'"):
        budget.check_case(config, force="yes")


@pytest.mark.parametrize("manifold, lmax, every", [("sphere", 31, 0.05), ("circle", 64, 0.01)])
def test_disk_estimate_matches_the_written_file(tmp_path, manifold, lmax, every, budget):
    """The estimate is the data the file holds: within 10% of the real size (headers aside)."""
    from meanfield_pde import run
    config = make_config(domain={"lmax": lmax, "manifold": manifold}, time={"t_end": 0.5},
                         output={"every": every},
                         initial={"type": "perturbed_uniform", "degree_max": 4, "amplitude": 1e-3})
    ds = run(config, output=tmp_path / "r.nc", progress=False)
    assert ds.attrs["status"] == "completed"
    est = budget.pde_estimate(config)
    real = (tmp_path / "r.nc").stat().st_size
    assert ds.sizes["time"] == budget.snapshots(config) - 1 or ds.sizes["time"] == budget.snapshots(config)
    assert 0.9 * real < est.disk < 1.1 * real + 20_000, (est.disk, real)
    assert budget.grid_points(manifold, lmax) == int(np.prod(ds.density.shape[1:]))


@pytest.mark.slow
def test_a_tokens_sweep_of_a_million_tokens_is_refused(tmp_path):
    proc = cli("sweep", "phase_tokens_sa", "--set", "particles.n=1000000", "-o", "tk", cwd=tmp_path)
    assert_user_error(proc, "particles.n = 1000000, sweep.dimension = 128", "per velocity",
                      "summed over the", "the cap is 24 h")
    assert not (tmp_path / "tk").exists()


def test_a_small_first_step_of_an_adaptive_run_is_not_a_bomb(tmp_path):
    """time.dt of an adaptive run is only its first step (the controller grows it): dt = 1e-9
    was refused as "5e+08 steps to the first snapshot" (found by a new user). The same dt with
    fixed steps is refused: it would take 1e9 steps."""
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs import budget
    config = load_case("sa_beta5_uniform", ["time.dt=1e-9", "time.t_end=1"])
    assert budget.check_case(config).seconds < 60
    with pytest.raises(ConfigError, match="time.dt = 1e-09.*steps"):
        budget.check_case(load_case("sa_beta5_uniform", ["time.dt=1e-9", "time.t_end=1",
                                                         "time.adaptive=false"]))


def test_every_exceeded_limit_is_named_in_one_message(tmp_path):
    """A case over the disk and the time cap names both (it named only the first, so whether
    the time cap showed depended on the free disk of the machine running the tests)."""
    from meanfield_pde.runs import budget
    est = budget.Estimate(memory=1.0, disk=1e30, seconds=1e12,
                          why={"disk": "particles.n = 5: disk", "seconds": "particles.n = 5: time"})
    with pytest.raises(ConfigError) as info:
        budget.check(est, tmp_path)
    msg = str(info.value)
    assert "writes about" in msg and "the cap is" in msg and msg.count("pass --force") == 1
    assert budget.check(est, tmp_path, force=True) is est
