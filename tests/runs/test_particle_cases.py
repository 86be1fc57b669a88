"""Particle runs from case files and the PDE-versus-particles cases (short versions, via the CLI)."""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield_pde import load_case
from meanfield_pde.runs.particle_runner import run_particles
from meanfield_pde.theory.linear import growth_rates

from helpers.bounds import EPS


def run_cli(tmp_path, case, *overrides):
    cmd = [sys.executable, "-m", "meanfield_pde", "run", case, "--output", str(tmp_path / "r.nc"), "-q",
           "--set", "particles.projections=20"]  # fewer great circles: a fast, coarser Wasserstein
    for o in overrides:
        cmd += ["--set", o]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return proc, {k: xr.open_dataset(tmp_path / f"r{k}.nc") for k in ("", "_particles", "_compare")}


def test_particle_run_has_the_pde_names(tmp_path):
    config = load_case("particles_sa_noisy", ["particles.n=300", "time.t_end=0.2", "output.every=0.1"])
    ds = run_particles(config, tmp_path / "p.nc")
    with xr.open_dataset(tmp_path / "p.nc") as saved:
        for name in ("positions", "coef_real", "coef_imag", "density", "order_parameter", "energy", "mass"):
            assert name in saved, name
        assert saved.positions.shape == (3, 300, 3)
        assert saved.attrs["kind"] == "particles" and saved.attrs["n"] == 300
        # every step ends by normalising (3 squares, a root, a division), as does this norm
        np.testing.assert_allclose(np.linalg.norm(saved.positions.values, axis=-1), 1.0, rtol=0,
                                   atol=2 * (3 + 2) * EPS)
        # empirical coefficients: l = 1 carries the mean position, order parameter = |mean|:
        # two means of n unit vectors (nε of 1) and norms, relative to |m| (the sum cancels to it)
        n = saved.positions.shape[1]
        m = saved.positions.values.mean(axis=1)
        norm = np.linalg.norm(m, axis=1)
        np.testing.assert_allclose(saved.order_parameter.values, norm, rtol=2 * (n + 5) * EPS / norm.min())
        # f_10 = mean of √(3/4π) z_i, times √(4π/3): n terms and the Y_10 evaluation, both sides
        z = saved.coef_real.sel(l=1, m=0).values * np.sqrt(4 * np.pi / 3)
        size = np.abs(saved.positions.values[..., 2]).mean(axis=1)
        np.testing.assert_allclose(z, m[:, 2], rtol=0, atol=(2 * n + 10) * EPS * size.max())
    # √(4π) times the mean of n values Y_00 = 1/√(4π): n + 3 roundings
    assert ds.mass.values == pytest.approx(1.0, rel=(300 + 3) * EPS)


@pytest.mark.slow
def test_particles_mode_from_the_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "particles_sa_noisy",
                           "--set", "run.kind=particles", "--set", "particles.n=200",
                           "--set", "time.t_end=0.1", "--output", str(tmp_path / "t.nc")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "t.nc").is_file() and (tmp_path / "t.png").is_file()


@pytest.mark.slow
def test_usa_beta4_merge_agrees_within_sampling_error(tmp_path):
    n = 300
    _, runs = run_cli(tmp_path, "particles_usa_beta4_vmf", f"particles.n={n}", "time.t_end=0.4",
                      "output.every=0.2", "output.plot=false")
    pde, cmp = runs[""], runs["_compare"]
    assert pde.order_parameter.values[-1] > pde.order_parameter.values[0] + 0.2  # merging
    assert np.max(np.abs(cmp.order_parameter_difference.values)) < 4 / np.sqrt(n)
    # at t = 0 the tokens are an exact sample: the distance is the sampling level
    ratio0 = float(cmp.l2_distance[0] / cmp.expected_statistical_l2[0])
    assert 0.5 < ratio0 < 2.0


@pytest.mark.slow
def test_sa_beta5_uniform_sampling_noise_grows_at_sigma_l_star(tmp_path):
    """The particles' own fluctuations are amplified at the PDE's growth rates: the
    PDE-particle distance on l = 3 grows roughly like e^{σ_3 t} in the linear phase."""
    n = 300
    _, runs = run_cli(tmp_path, "particles_sa_beta5_uniform", f"particles.n={n}", "time.t_end=4",
                      "output.every=0.5", "output.plot=false")
    cmp = runs["_compare"]
    p3 = cmp.degree_power_difference.sel(l=3).values
    rate = 0.5 * np.log(p3[-1] / p3[2]) / (cmp.time.values[-1] - cmp.time.values[2])
    sigma3 = growth_rates("SA", 5.0, 0.0, 3)[3]
    assert 0.5 * sigma3 < rate < 1.5 * sigma3, (rate, sigma3)


@pytest.mark.slow
def test_noisy_sa_agrees_within_sampling_error(tmp_path):
    n = 300
    _, runs = run_cli(tmp_path, "particles_sa_noisy", f"particles.n={n}", "time.t_end=0.5",
                      "output.every=0.25", "output.plot=false")
    cmp = runs["_compare"]
    assert np.max(np.abs(cmp.order_parameter_difference.values)) < 4 / np.sqrt(n)
