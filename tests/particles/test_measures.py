"""Particle clouds ↔ densities: sampling reproduces the density's moments; smoothing is e^{sΔ}."""

import numpy as np
import pytest

from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.numerics.initial import von_mises_fisher
from meanfield_pde.particles.measures import density_from_particles, sample_density

from helpers.bounds import EPS


@pytest.mark.parametrize("geometry,centres", [(Sphere(12), [[0, 0, 1], [1, 0, 0]]),
                                              (Circle(24), [[0, 1], [1, 0]])])
def test_samples_of_a_pde_density_have_its_coefficients(geometry, centres):
    coef = von_mises_fisher(geometry, centres, [4.0, 2.0], [0.7, 0.3])
    n = 10_000
    x = sample_density(geometry, coef, n, seed=1)
    emp = geometry.empirical_coefficients(x)
    low = geometry.degree <= 3
    # each empirical coefficient is a mean of n bounded terms: error ~ |Y|/√n
    bound = 5 * np.sqrt((2 * 3 + 1) / geometry.area) / np.sqrt(n)
    assert np.max(np.abs(emp[low] - coef[low])) < bound


def test_smoothing_is_the_heat_semigroup_and_keeps_mass():
    g = Sphere(16)
    x = sample_density(g, von_mises_fisher(g, [[0, 0, 1]], [3.0]), 5000, seed=2)
    raw = density_from_particles(g, x, 0.0)
    smooth = density_from_particles(g, x, 0.05)
    # e^{−s l(l+1)}: the two arguments within 2ε of s L(L+1), then the products
    rel = (2 * 0.05 * g.lmax * (g.lmax + 1) + 3) * EPS
    np.testing.assert_allclose(smooth, raw * np.exp(-0.05 * g.degree * (g.degree + 1)), rtol=rel)
    # the heat keeps f_00; √(4π) times the mean of n values Y_00 = 1/√(4π): n + 3 roundings
    assert g.mass(smooth) == pytest.approx(1.0, rel=(x.shape[0] + 3) * EPS)
    assert np.min(g.synthesis(smooth)) > 0  # heat smoothing of a cloud is positive here
