"""Tokens in R^d against the zonal PDE on S^{d−1} (issue 17, item 3): the initial laws agree,
the sampling levels are the exact expectations, and a short run stays within them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ive

from meanfield_pde.analysis.zonal_tokens import (ZonalLaw, sample_vmf_tokens, sample_zonal_tokens,
                                                 smoothed_l2, smoothed_l2_level, wasserstein_level,
                                                 wasserstein_t)
from meanfield_pde.core.geometry import ZonalSphere
from meanfield_pde.core.kernels import vmf_zonal_coefficients
from meanfield_pde.numerics.initial import spherical_harmonic


@pytest.mark.parametrize("d", [8, 64, 512])
def test_the_pde_law_of_t_has_the_vmf_mean(d):
    """Quantile atoms of the PDE law of a vMF: mean A_d(κ) = I_{d/2}/I_{d/2−1} (Mardia & Jupp)."""
    kappa = 2 * math.sqrt(d)
    g = ZonalSphere(40, d)
    law = ZonalLaw(g, vmf_zonal_coefficients(kappa, 40, d))
    assert law.mass_error < 1e-8
    assert np.mean(law.atoms()) == pytest.approx(ive(d / 2, kappa) / ive(d / 2 - 1, kappa), abs=1e-6)


def test_the_smoothed_l2_level_is_the_expected_distance_of_n_draws():
    """E‖e^{sΔ}(μ_n − f̄)‖² = level²: Monte Carlo over 400 samples of n = 50 draws (inverse CDF)."""
    d, L = 16, 20
    g = ZonalSphere(L, d)
    coef = vmf_zonal_coefficients(3.0, L, d)
    law, s = ZonalLaw(g, coef), 1.0 / (6 * (6 + d - 2))
    rng = np.random.default_rng(1)
    sq = [smoothed_l2(law.sample(50, rng), g, coef, s) ** 2 for _ in range(400)]
    level = smoothed_l2_level(g, coef, s, 50)
    assert np.mean(sq) == pytest.approx(level**2, rel=4 * np.std(sq) / math.sqrt(400) / level**2)


@pytest.mark.parametrize("d", [8, 64, 512])
def test_tokens_sampled_from_the_zonal_vmf_match_the_pde_law(d):
    g = ZonalSphere(40, d)
    kappa = 2 * math.sqrt(d)
    coef = vmf_zonal_coefficients(kappa, 40, d)
    law, s, n = ZonalLaw(g, coef), 1.0 / (6 * (6 + d - 2)), 2000
    x = sample_vmf_tokens(n, d, [[1]], [kappa], seed=3)
    assert x.shape == (n, d)
    mean, std = wasserstein_level(law, n)
    assert wasserstein_t(x[:, -1], law) < mean + 4 * std
    assert smoothed_l2(x[:, -1], g, coef, s) < 3 * smoothed_l2_level(g, coef, s, n)


def test_rejection_sampling_of_a_perturbed_uniform_density():
    d = 64
    g = ZonalSphere(8, d)
    coef = spherical_harmonic(g, 2, 0, 0.3)
    x = sample_zonal_tokens(g, coef, 4000, seed=0)
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0)
    law, s = ZonalLaw(g, coef), 1.0 / (6 * (6 + d - 2))
    mean, std = wasserstein_level(law, 4000)
    assert wasserstein_t(x[:, -1], law) < mean + 4 * std
    assert smoothed_l2(x[:, -1], g, coef, s) < 3 * smoothed_l2_level(g, coef, s, 4000)
