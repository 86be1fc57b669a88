"""The PDE run matched to one token seed (issue 16, tokens against a hand-off run).

Mean-field theory compares n tokens with the PDE started from the same low-degree perturbation:
the projection of their empirical measure on degrees <= l_p,
f_lm = (1/n) Σ_i conj(Y_lm(x_i)) for l <= l_p (docs/user-guide/handoff.md (Past lost resolution)). Checked here
against a direct sum of scipy's harmonics, against the sampling variance 1/n per real
orthonormal mode, and at the start of a matched run (benchmarks/handoff_tokens.py).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy.special import sph_harm_y

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.particles.measures import density_from_particles
from meanfield_pde.particles.sampling import uniform_sphere
from meanfield_pde.runs.config import from_dict

from helpers import REPO
from helpers.bounds import EPS

SCRIPT = REPO / "benchmarks" / "handoff_tokens.py"


def benchmark():
    spec = importlib.util.spec_from_file_location("handoff_tokens", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_projection_is_the_mean_of_the_tokens_harmonics_up_to_degree_max():
    g = Sphere(12)
    x = uniform_sphere(37, 3, seed=4)
    coef = density_from_particles(g, x, 0.0, degree_max=4)
    theta, phi = np.arccos(np.clip(x[:, 2], -1, 1)), np.arctan2(x[:, 1], x[:, 0])
    n = x.shape[0]
    for l in range(13):
        # each side a mean of n values |Y_lm| <= S_l = √((2l+1)/4π) (nε of S_l), each Y_lm from l
        # recurrence steps (3lε) at angles within πε (|∇Y_lm| <= (l + 1) S_l: 2π(l + 1)ε)
        atol = 2 * (n + 3 * l + 2 * np.pi * (l + 1) + 2) * EPS * np.sqrt((2 * l + 1) / (4 * np.pi))
        for m in range(l + 1):
            direct = np.mean(np.conj(sph_harm_y(l, m, theta, phi))) if l <= 4 else 0.0
            assert coef[g.index(l, m)] == pytest.approx(direct, abs=atol), (l, m)
    # √(4π) times the mean of n values Y_00 = 1/√(4π): n + 3 roundings
    assert g.mass(coef) == pytest.approx(1.0, rel=(n + 3) * EPS)


def test_projected_sampling_noise_has_variance_one_over_n_per_mode():
    """δ = 4π f − 1 of n uniform tokens on degrees 1..l_p: E[RMS(δ)²] = N/n, N = (l_p + 1)² − 1
    modes each of variance Var(Y)/n = 1/(4π n) (times |S|² / |S| from δ's normalisation)."""
    g, n, lp, seeds = Sphere(10), 400, 6, 100
    modes = (lp + 1) ** 2 - 1
    rms2 = []
    for seed in range(seeds):
        coef = density_from_particles(g, uniform_sphere(n, 3, seed=seed), 0.0, degree_max=lp)
        coef[0] = 0.0
        rms2.append(g.inner(coef, coef) * g.area)  # (1/|S|) ∫ δ² with δ = |S| (f − 1/|S|)
    # RMS² is a sum of 48 near-χ² terms: relative std sqrt(2/48) = 0.2 per seed, / sqrt(100)
    assert np.mean(rms2) == pytest.approx(modes / n, rel=5 * np.sqrt(2 / modes / seeds))


@pytest.mark.parametrize("bad", [-1, 13, 2.5])
def test_projection_degree_out_of_range_is_refused(bad):
    with pytest.raises(ConfigError, match=r"degree_max = .*\[0, 12\]"):
        density_from_particles(Sphere(12), uniform_sphere(5, 3, seed=0), 0.0, degree_max=bad)


def small_case(t_end=0.05):
    return from_dict({"description": "matched run test", "model": {"kind": "USA", "beta": 10.0},
                      "domain": {"lmax": 31},
                      "initial": {"type": "perturbed_uniform", "amplitude": 1e-3, "degree_max": 5, "seed": 2},
                      "time": {"t_end": t_end, "dt": 5e-5}, "output": {"every": 0.002, "plot": False},
                      "handoff": {"enabled": True, "t_end": 2 * t_end, "per_decade": 5}}, name="matched")


@pytest.mark.slow
def test_matched_pde_run_starts_from_the_tokens_low_degrees():
    """The run of one seed starts with that seed's (1/n) Σ conj(Y_lm(x_i)) on l <= degree_max and
    nothing above (not the case's own δ of amplitude 1e-3); positive at n = 2000, l_p = 5."""
    bench = benchmark()
    config = small_case(t_end=0.001)
    g = Sphere(31)
    tokens = bench.seed_tokens(config, g, seed=3, n=2000)
    ds, low = bench.matched_pde_run(config, g, tokens, 0.002)
    start = ds.coef_real.isel(time=0).values + 1j * ds.coef_imag.isel(time=0).values
    emp = g.empirical_coefficients(tokens)
    for l, m in [(1, 0), (1, 1), (3, 2), (5, 5), (6, 0), (20, 7)]:
        want = emp[g.index(l, m)] if l <= 5 else 0.0
        assert start[l, m] == want, (l, m)  # the run stores its initial coefficients as given
    # the tokens' perturbation (RMS ~ sqrt(35/2000) = 0.13), not the case's 1e-3
    assert 0 < low < (1 - 0.1) / (4 * np.pi)

