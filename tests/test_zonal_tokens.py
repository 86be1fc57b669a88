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


def test_a_short_token_run_stays_within_the_sampling_level_of_the_pde():
    """The acceptance run in short (benchmarks/zonal_tokens.py: n = 2000, 5 seeds, d = 8, 64,
    512): d = 64, n = 500, 2 seeds, SA β = 2 from f̄ = 1 + a p_1 to t = 2 (the degree-1 part
    grows ~e^{σ_1 t}, σ_1 ≈ 1). Tokens against the PDE are within twice the distance of
    two independent token runs / √2 (the sampling fluctuation carried by the dynamics, which
    amplifies the initial one like the perturbation itself), in W₁ and in L²; at t = 0
    within the i.i.d. level."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from zonal_tokens import rows
    table = list(rows(64, 500, 2, t_end=2.0, snapshots=2, lmax=24))
    assert len(table) == 3 and table[-1]["mean_t"] > 3 * table[0]["mean_t"]  # the PDE moved
    assert table[0]["w1"] < table[0]["w1_iid"] + 4 * table[0]["w1_iid_sd"]
    assert table[0]["l2"] < 3 * table[0]["l2_iid"]
    for r in table[1:]:
        assert r["w1"] < 2 * r["w1_pair"], r
        assert r["l2"] < 2 * r["l2_pair"], r
