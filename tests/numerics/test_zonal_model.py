"""The mean-field PDE on S^{d−1} for zonal densities (acceptance of issue 17's core):
against the full S² and S¹ solvers, the linear theory, and the conservation laws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield_pde.core.geometry import Circle, Sphere, ZonalSphere
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.steppers import IMEXRungeKutta
from meanfield_pde.numerics.steppers.tableaus import get_tableau
from meanfield_pde.theory.linear import growth_rates

from helpers.bounds import (EPS, assert_mass_kept, energy_error, free_energy_error,
                            stepping_round_off)


def run(model, u0, dt, steps, every=1):
    """Fixed-step ARS(4,4,3); the states every ``every`` steps, shape (k, ncoef)."""
    stepper = IMEXRungeKutta.for_model(get_tableau("ARS443"), model)
    u, out = u0.copy(), [u0.copy()]
    for i in range(steps):
        u, _ = stepper.step(u, dt)
        if (i + 1) % every == 0:
            out.append(u.copy())
    return np.array(out)


def vmf(g, kappa, mass=1.0):
    """Coefficients of a mass-``mass`` vMF e^{κt}/∫e^{κt} on the zonal grid."""
    f = np.exp(kappa * (g.t - 1.0))
    return g.analysis(mass * f / g.integrate(f))


@pytest.mark.parametrize("kind,beta,nu", [("SA", 4.0, 0.0), ("USA", 2.0, 0.05)])
def test_dimension_three_equals_the_sphere_solver_on_zonal_data(kind, beta, nu):
    """A zonal density on S² (m = 0 only) stays zonal; the S² solver and the d = 3 zonal
    solver, mapped by f̄ = 4π f (probability measure) and p_l = √(4π) Y_l0, agree to round-off."""
    L = 24
    sph, zon = Sphere(L), ZonalSphere(L, 3)
    m_sph, m_zon = MeanFieldModel(sph, kind, beta, nu), MeanFieldModel(zon, kind, beta, nu)
    # a two-bump zonal density: one cluster at each pole, unequal
    t = np.cos(sph.colatitude)[:, None] * np.ones((1, sph.nphi))
    u_sph = sph.analysis((np.exp(3 * (t - 1)) + 0.5 * np.exp(-2 * (t + 1)) + 0.2) / (4 * np.pi))
    u_sph[sph.order != 0] = 0.0
    l0 = [sph.index(l, 0) for l in range(L + 1)]
    u_zon = math.sqrt(4 * np.pi) * u_sph[l0]
    a = run(m_sph, u_sph, 0.01, 60, 20)[:, l0]
    b = run(m_zon, u_zon, 0.01, 60, 20) / math.sqrt(4 * np.pi)
    assert np.max(np.abs(b[-1] - b[0])) > 1e-3  # it moved
    bound = stepping_round_off((m_sph, m_zon), (u_sph, u_zon), 0.01, 60) * np.max(np.abs(a))
    assert np.max(np.abs(a - b)) <= bound, np.max(np.abs(a - b))


@pytest.mark.parametrize("kind,beta,nu", [("SA", 5.0, 0.0), ("USA", 3.0, 0.1)])
def test_dimension_two_equals_the_circle_solver_on_even_data(kind, beta, nu):
    """Even densities on S¹ (f(θ) = f(−θ)) are zonal for d = 2: with p_l = √2 cos lθ and
    e_k = e^{ikθ}/√(2π), f̄ = 2π f and f̄_l = 2√π f_k (l >= 1), f̄_0 = √(2π) f_0."""
    L = 24
    cir, zon = Circle(L), ZonalSphere(L, 2)
    m_cir, m_zon = MeanFieldModel(cir, kind, beta, nu), MeanFieldModel(zon, kind, beta, nu)
    th = cir.theta
    u_cir = cir.analysis((np.exp(2 * np.cos(th)) + 0.7 * np.exp(1.5 * np.cos(th - np.pi))) / 30.0)
    u_cir = u_cir.real + 0j  # even data: real Fourier coefficients
    scale = np.where(np.arange(L + 1) == 0, math.sqrt(2 * np.pi), 2 * math.sqrt(np.pi))
    a = run(m_cir, u_cir, 0.01, 60, 20)
    b = run(m_zon, scale * u_cir, 0.01, 60, 20) / scale
    assert np.max(np.abs(b[-1] - b[0])) > 1e-3
    bound = stepping_round_off((m_cir, m_zon), (u_cir, scale * u_cir), 0.01, 60) * np.max(np.abs(a))
    assert np.max(np.abs(a - b)) <= bound, np.max(np.abs(a - b))


@pytest.mark.parametrize("d", (3, 8, 64, 512))
@pytest.mark.parametrize("kind", ("SA", "USA"))
def test_rhs_linearised_at_uniform_reproduces_sigma_l(kind, d):
    """(RHS(1 + ε p_l) − RHS(1))/ε = σ_l ε p_l: the transport is quadratic in f, so the
    central difference has no O(ε) error (no error at all for USA, whose transport is
    quadratic); σ_l from the theory module."""
    beta, nu, L = 30.0, 0.01, 12
    g = ZonalSphere(L, d)
    model = MeanFieldModel(g, kind, beta, nu)
    sigma = growth_rates(kind, beta, nu, L, "sphere_zonal", d)
    one = g.zeros_coef()
    one[0] = 1.0
    for l in range(1, L + 1):
        eps = 1e-5  # SA divides by Φ: the central difference errs by O(ε²)
        du = g.zeros_coef()
        du[l] = eps
        lin = (model.rhs(one + du) - model.rhs(one - du)).real / (2 * eps)
        expected = np.zeros(L + 1)
        expected[l] = sigma[l]
        scale = max(abs(sigma[l]), l * (l + d - 2) * nu)
        assert np.max(np.abs(lin - expected)) <= 1e-8 * scale, (l, lin[l], sigma[l])


@pytest.mark.parametrize("d,l", [(3, 2), (8, 2), (64, 1), (512, 1)])
def test_small_perturbation_grows_at_sigma_l(d, l):
    """A run of 1 + 1e-7 p_l (USA, no noise) over σ_l t = 2: the degree-l coefficient
    grows by e^{σ_l t} to 1e-5 (nonlinear terms are O(1e-7) relative)."""
    beta = 12.0
    g = ZonalSphere(16, d)
    model = MeanFieldModel(g, "USA", beta)
    sigma = growth_rates("USA", beta, 0.0, 16, "sphere_zonal", d)[l]
    assert sigma > 0
    u0 = g.zeros_coef()
    u0[0], u0[l] = 1.0, 1e-7
    steps = 200
    dt = 2.0 / sigma / steps
    u = run(model, u0, dt, steps, steps)[-1]
    rate = math.log(u[l].real / 1e-7) / (steps * dt)
    assert rate == pytest.approx(sigma, rel=1e-5)


@pytest.mark.parametrize("d", (2, 3, 8, 64, 512))
@pytest.mark.parametrize("kind", ("SA", "USA"))
def test_mass_conserved_and_energy_increases_without_noise(kind, d):
    """Mass = √|S| f_0 (the weak divergence has no l = 0 row); E_β non-decreasing."""
    g = ZonalSphere(32, d)
    beta = math.sqrt(d)  # attention strong enough to move a width-d^{−1/2} bump
    model = MeanFieldModel(g, kind, beta)
    u0 = vmf(g, math.sqrt(d))
    model.transport(u0)
    # CFL number <= 0.05, and a run to σ_max t = 0.1: much further on the bump collapses
    # towards the pole below the resolution of L = 32 (near the pole of S^{d−1} the flow
    # contracts d − 1 directions: in high d that needs many more degrees)
    dt = min(0.05 / (model.max_speed * g.lmax), 0.001 / np.max(model.growth_rates()))
    u = run(model, u0, dt, 100, 5)
    assert np.max(np.abs(u[-1][-4:])) < 1e-10  # still resolved
    mass = np.array([g.mass(x) for x in u])
    energy = np.array([model.energy(x) for x in u])
    # vmf(): f_0 = Σ w f / Σ w f, two N-term sums of the same terms and a quotient
    assert_mass_kept(mass, (2 * g.npoints + 1) * EPS)
    err = energy_error(g, energy)
    assert np.all(np.diff(energy) >= -(err[1:] + err[:-1])), np.diff(energy).min()
    assert energy[-1] > energy[0] * (1 + 1e-3)


@pytest.mark.parametrize("d", (3, 8, 64, 512))
def test_free_energy_decreases_for_noisy_usa(d):
    """F = ν ∫ f log f dσ̄ − E_β is non-increasing (Wasserstein gradient flow)."""
    g = ZonalSphere(32, d)
    beta, nu = 1.0, 2.0 / d  # noise above ν_1 ≈ 1/d: the cluster spreads out
    model = MeanFieldModel(g, "USA", beta, nu)
    u = run(model, vmf(g, 1.5 * math.sqrt(d)), 0.05, 80, 4)
    F = np.array([model.free_energy(x, g.synthesis(x)) for x in u])
    err = np.array([free_energy_error(g, x, g.synthesis(x), nu, model.energy(x)) for x in u])
    assert np.all(np.diff(F) <= err[1:] + err[:-1]), np.diff(F).max()
    assert F[-1] < F[0] - 1e-6
    assert_mass_kept([g.mass(x) for x in u], (2 * g.npoints + 1) * EPS)  # as above


def test_zonal_geometry_and_model_pickle_by_parameters():
    """For dask workers: the copy's right-hand side equals the original's bit for bit."""
    import pickle
    g = ZonalSphere(16, 64)
    model = MeanFieldModel(g, "SA", 8.0, 0.01)
    copy = pickle.loads(pickle.dumps(model))
    u = vmf(g, 8.0)
    assert copy.geometry.dimension == 64
    assert np.array_equal(copy.rhs(u), model.rhs(u))
