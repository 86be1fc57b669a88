"""The named cases of general attention (cases/attention_*.toml) show what their "What you should
see" says, run as a user runs them (`meanfield-pde run CASE`, then `meanfield-pde plot`)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield_pde import load_case
from meanfield_pde.core.attention import Head
from meanfield_pde.particles import simulate
from meanfield_pde.particles.clusters import weighted_clusters
from meanfield_pde.runs.particle_runner import run_particles

from helpers.bounds import EPS

LINK, MIN_MASS = 0.1, 0.02  # a cluster: tokens linked within 0.1 rad, >= 2% of them (the case files' words)
CASES = ["attention_power_method", "attention_rotating_clusters", "attention_two_heads", "attention_beta_warmup"]


def clusters(x):
    return weighted_clusters(x, angle=LINK, min_mass=MIN_MASS)


def run_case(tmp_path, name: str) -> xr.Dataset:
    """The case's particle run (its file; the figure is the CLI test's)."""
    ds = run_particles(load_case(name, ["output.plot=false"]), tmp_path / f"{name}.nc")
    assert ds.attrs["status"] == "completed" and "heads" in ds.attrs
    return ds


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_the_cli_runs_and_plots_the_case(tmp_path, name):
    """`meanfield-pde run NAME` writes the file and its figure; `meanfield-pde plot` draws it again."""
    out = tmp_path / f"{name}.nc"
    for args in (["run", name, "-o", str(out), "-q"], ["plot", str(out), "-o", str(tmp_path / "again.png")]):
        proc = subprocess.run([sys.executable, "-m", "meanfield_pde", *args], capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / f"{name}.png").stat().st_size > 0 and (tmp_path / "again.png").stat().st_size > 0


def at(ds, t):
    return ds.positions.sel(time=t).values


def test_attention_power_method(tmp_path):
    ds = run_case(tmp_path, "attention_power_method")
    v = np.array(load_case("attention_power_method").attention.heads[0].V)
    lam = np.sort(np.linalg.eigvals(v).real)[::-1]
    assert np.allclose(v @ [1, 0, 0], [1, 0, 0]) and lam[0] == 1.0  # φ₁ = e₁, the case's words
    psi = np.array([1.0, 0.5, 0.1])
    assert np.allclose(v.T @ psi, psi)  # ψ₁, the dominant left eigenvector
    x0, x = at(ds, 0.0), at(ds, 6.5)
    assert np.all(np.degrees(np.arccos(np.abs(x[:, 0]))) < 5.0)
    found = clusters(x)
    assert len(found.masses) == 2 and np.all(np.abs(found.masses - 0.5) < 0.1)
    assert np.mean(np.sign(x0 @ psi) == np.sign(x[:, 0])) >= 0.9
    # a sharp cluster's angle to ±e₁ falls at λ₁ − λ₂ = 0.8 (the power method)
    a6, a8 = (np.arccos(np.abs(clusters(at(ds, t)).centres[:, 0])) for t in (6.0, 8.0))
    rates = np.log(a6 / a8) / 2.0
    assert np.all(np.abs(rates - (lam[0] - lam[1])) <= 0.05 * (lam[0] - lam[1])), rates
    assert "energy" not in ds and ds.attrs["energy_note"].startswith("no energy")


def test_attention_rotating_clusters(tmp_path):
    ds = run_case(tmp_path, "attention_rotating_clusters")
    a = np.array(load_case("attention_rotating_clusters").attention.heads[0].K)
    theta = np.arctan2(a[1, 0], a[0, 0])
    # the literals are cos 20°, sin 20° rounded (relative ε/2 each): atan2 moves by
    # sin·cos·ε ≤ ε/2, its own rounding and radians() add an ulp of θ each
    tol = (0.5 + 2 * np.radians(20.0)) * EPS
    assert theta == pytest.approx(np.radians(20.0), abs=tol) and not np.allclose(a, a.T)
    c14, c16 = clusters(at(ds, 14.0)), clusters(at(ds, 16.0))
    assert len(c14.masses) == len(c16.masses) == 2
    assert np.all(np.degrees(np.abs(np.arcsin(c16.centres[:, 2]))) < 1.0)  # on the equator
    advance = np.angle(np.exp(1j * (np.arctan2(c16.centres[:, 1], c16.centres[:, 0])
                                    - np.arctan2(c14.centres[:, 1], c14.centres[:, 0]))))
    assert np.all(np.abs(advance - 2 * np.sin(theta)) <= 0.01 * 2 * np.sin(theta)), advance
    assert "energy" not in ds and "energy_note" in ds.attrs


def test_attention_two_heads(tmp_path):
    ds = run_case(tmp_path, "attention_two_heads")
    config = load_case("attention_two_heads")
    assert [h.beta for h in config.heads.layers[0].heads] == [1.0, 12.0]
    assert len(clusters(at(ds, 2.0)).masses) >= 5
    assert len(clusters(at(ds, 6.0)).masses) == 1 and ds.order_parameter.sel(time=6.0) > 0.99
    # the sharp head alone, from the same tokens
    alone = simulate(at(ds, 0.0), "SA", None, 0.0, 8.0, config.time.dt, 8.0, heads=Head(12.0, dimension=3))
    assert len(clusters(alone.final).masses) >= 5


def test_attention_beta_warmup(tmp_path):
    ds = run_case(tmp_path, "attention_beta_warmup")
    config = load_case("attention_beta_warmup")
    layer = config.heads.layers[0]
    assert (layer.heads[0].beta, layer.beta_end, layer.ramp_end) == (1.0, (12.0,), 8.0)
    constant = simulate(at(ds, 0.0), "SA", None, 0.0, 16.0, config.time.dt, 16.0,
                        heads=Head(12.0, dimension=3))
    warm, cold = clusters(at(ds, 16.0)), clusters(constant.final)
    assert (len(warm.masses), len(cold.masses)) == (3, 7)
    assert ds.order_parameter.sel(time=16.0) == pytest.approx(0.58, abs=0.005)
    assert constant.order_parameter[-1] == pytest.approx(0.12, abs=0.005)
