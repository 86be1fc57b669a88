"""The mean-field PDE on S^{d−1} for zonal densities (acceptance of issue 17's core):
against the full S² and S¹ solvers, the linear theory, and the conservation laws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield_pde import ConfigError
from meanfield_pde.cli import main
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
    m_sph, m_zon = MeanFieldModel.funk_hecke(sph, kind, beta, nu), MeanFieldModel.funk_hecke(zon, kind, beta, nu)
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
    m_cir, m_zon = MeanFieldModel.funk_hecke(cir, kind, beta, nu), MeanFieldModel.funk_hecke(zon, kind, beta, nu)
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
    model = MeanFieldModel.funk_hecke(g, kind, beta, nu)
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
    model = MeanFieldModel.funk_hecke(g, "USA", beta)
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
    model = MeanFieldModel.funk_hecke(g, kind, beta)
    u0 = vmf(g, math.sqrt(d))
    model.transport(u0)
    # CFL number <= 0.05, and a run to σ_max t = 0.1: much further on the bump collapses
    # towards the pole below the resolution of L = 32 (near the pole of S^{d−1} the flow
    # contracts d − 1 directions: in high d that needs many more degrees)
    dt = min(0.05 / (model.max_speed * g.lmax), 0.001 / np.max(model.growth_rates()))
    u = run(model, u0, dt, 100, 5)
    # still resolved: the top four degrees' coefficients stay far below the bump's O(1) ones
    assert np.max(np.abs(u[-1][-4:])) < 1e-10
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
    model = MeanFieldModel.funk_hecke(g, "USA", beta, nu)
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
    model = MeanFieldModel.funk_hecke(g, "SA", 8.0, 0.01)
    copy = pickle.loads(pickle.dumps(model))
    u = vmf(g, 8.0)
    assert copy.geometry.dimension == 64
    assert np.array_equal(copy.rhs(u), model.rhs(u))


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

def _sa_bound(message: str) -> float:
    import re
    return float(re.search(r"must be <= ([0-9.]+) at this lmax and d", message).group(1))


def test_sa_at_beta_700_in_d_512_is_refused_before_any_work_saying_why(tmp_path, capsys):
    """It ran and stopped at t = 0, "kernel potential Φ is not positive: the density has lost
    positivity (resolution lost)" (and a larger lmax, which the kernel check asked for, fails
    the same way). The reason is float64: round-off in the coefficients, amplified by the
    Gegenbauer basis at the outer nodes, exceeds Φ. Refused before the kernel's check (no lmax
    helps), with the largest β at this lmax and the largest in d with its lmax."""
    out = tmp_path / "o.nc"
    assert main(["run", "zonal_vmf_collapse_d512", "--set", "model.beta=700", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert ("model.beta = 700: too large for SA in d = 512 at domain.lmax = 128: SA divides by the "
            "potential Φ") in err and "so no state keeps it positive; must be <= " in err, err
    assert "kernel needs lmax" not in err and "resolution lost" not in err
    assert list(tmp_path.iterdir()) == []
    import re
    best, lmax = re.search(r"SA takes beta <= ([0-9.]+) in d = 512, at domain.lmax = (\d+)$", err.strip()).groups()
    from meanfield_pde.runs.cases import load_case
    config = load_case("zonal_vmf_collapse_d512", {"model.beta": float(best), "domain.lmax": int(lmax),
                                                   "initial.concentrations": [1.0]})
    assert config.model.beta == float(best)  # the advice passes both checks (kernel and Φ)


def test_sa_at_the_largest_beta_grows_at_the_linear_rate_and_just_above_is_refused(tmp_path):
    """At the edge: β = the bound runs, a uniform density perturbed in degree 1 grows at σ_1 of
    linear theory (meanfield_pde.theory.linear), and 1.001 times it is refused naming it."""
    import xarray as xr
    import numpy as np
    from meanfield_pde.runs.config import from_dict
    from meanfield_pde.runs.runner import run
    from meanfield_pde.theory.linear import growth_rates
    case = {"model": {"kind": "SA", "beta": 700.0},
            "domain": {"manifold": "sphere_zonal", "dimension": 128, "lmax": 64, "kernel_tol": 1.0},
            "initial": {"type": "spherical_harmonic", "degree": 1, "amplitude": 1e-6},
            "time": {"t_end": 1.0, "dt": 1e-3, "rtol": 1e-8}, "output": {"every": 0.25, "plot": False}}
    with pytest.raises(ConfigError) as info:
        from_dict(case)
    beta = _sa_bound(str(info.value))
    case["model"]["beta"] = beta * 1.001
    with pytest.raises(ConfigError, match=rf"must be <= {beta:g} at this lmax and d"):
        from_dict(case)
    case["model"]["beta"] = beta
    ds = run(from_dict(case), tmp_path / "edge.nc", progress=False)
    assert ds.attrs["stop_reason"] == "completed"
    sigma = growth_rates("SA", beta, 0.0, 1, "sphere_zonal", 128)[1]
    growth = ds.coef_real.values[:, 1] / ds.coef_real.values[0, 1]
    # local errors of rtol = 1e-8 per step, ~100 steps: <= 1e-6 of e^{σt}; the nonlinear part
    # is O(amplitude) = 1e-6 of it too; a wrong multiplier or Φ would be off by O(1)
    np.testing.assert_allclose(growth, np.exp(sigma * ds.time.values), rtol=2e-6)
    assert growth[-1] > 1.3 and ds.time.values[-1] == 1.0  # e^σ = 1.31: mode 1 grows


def test_an_initial_density_whose_potential_is_below_round_off_is_refused_with_its_bound():
    """A vMF (κ = 45) in d = 512 at β = 330.5, lmax = 129 passes the uniform bound but its Φ far
    from the cluster is 1e-7 of uniform, within the round-off of its sum: the run stopped at
    t = 0.001 ("the density has lost positivity"). Refused when the run is built, naming the
    largest β for this density; that β builds."""
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs.simulation import build
    config = load_case("zonal_vmf_collapse_d512", {"model.beta": 330.5, "domain.lmax": 129})
    with pytest.raises(ConfigError, match=r"^model.beta = 330.5: too large for SA with this initial "
                                          r"density in d = 512: .* is within the round-off of its "
                                          r"spectral sum there .*; must be <= ([0-9.]+) for this "
                                          r"initial density at domain.lmax = 129$") as info:
        build(config)
    import re
    beta = float(re.search(r"must be <= ([0-9.]+)", str(info.value)).group(1))
    assert 100 < beta < 330.5
    build(load_case("zonal_vmf_collapse_d512", {"model.beta": beta, "domain.lmax": 129}))
    with pytest.raises(ConfigError, match="too large for SA with this initial density"):
        build(load_case("zonal_vmf_collapse_d512", {"model.beta": beta * 1.001, "domain.lmax": 129}))


def test_a_potential_lost_in_round_off_during_a_run_is_named_so():
    """Where a state reached in a run has Φ within its round-off, the stop said "the density has
    lost positivity (resolution lost)": it now says what happened and what to change."""
    import numpy as np
    from meanfield_pde.core.errors import NumericalFault
    from meanfield_pde.core.geometry import ZonalSphere
    from meanfield_pde.core.kernels import vmf_zonal_coefficients
    from meanfield_pde.numerics.models import MeanFieldModel
    g = ZonalSphere(129, 512)
    model = MeanFieldModel.funk_hecke(g, "SA", 330.5)
    coef = vmf_zonal_coefficients(45.255, 129, 512)
    noise = np.random.default_rng(0).standard_normal(coef.size) * 1e-16 * np.abs(coef).max()
    noise[:2] = 0.0  # round-off in the coefficients, as a step leaves it (mass and mean kept)
    with pytest.raises(NumericalFault, match=r"^kernel potential Φ is not positive: Φ/λ_0 = .* is within "
                                             r"the round-off of its spectral sum there .*: it spans more "
                                             r"than float64 holds at this β \(lower model.beta\)$"):
        model.transport((coef + noise).astype(complex))
