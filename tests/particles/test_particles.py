"""Particle simulations of SA/USA (meanfield_pde.particles), tested against mathematics.

Each test checks a property of the exact dynamics (docs/mathematics/model.md (Model)): the order
of the integrators, the equiangular reduction, the Kuramoto form on the
circle, the Langevin stationary state of the noisy β = 0 system, energy
growth, and the numerical guards (chunking, overflow, input validation).
"""

import functools
import importlib
import math
import re
import tracemalloc

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.particles import (INTEGRATORS as SCHEMES, attention, energy, equiangular,
                                     kuramoto_velocity, order_parameter, simulate, sphere_exp,
                                     uniform_sphere, velocity, von_mises_fisher_mixture)
from meanfield_pde.theory.equiangular import solve_equiangular

from helpers.bounds import EPS, energy_rounding, sum_rounding, unit_rounding

# the submodule, not the function `simulate` that the package exports under the same name
simulate_module = importlib.import_module("meanfield_pde.particles.simulate")

KINDS = ("SA", "USA")


def naive_velocity(x, kind, beta):
    """The defining double sum, dense and unguarded (small n, moderate β only)."""
    n = len(x)
    v = np.zeros_like(x)
    for i in range(n):
        w = np.array([math.exp(beta * float(x[i] @ x[j])) for j in range(n)])
        a = (w @ x) / (w.sum() if kind == "SA" else n)
        v[i] = a - (x[i] @ a) * x[i]
    return v


def max_unit_deviation(x):
    return float(np.max(np.abs(np.linalg.norm(x, axis=-1) - 1.0)))


# -- the velocity field ----------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("beta", [0.0, 0.7, 3.0])
def test_velocity_is_the_defining_sum_and_tangent(kind, beta):
    x = uniform_sphere(9, 4, seed=3)
    v = velocity(x, kind, beta)
    assert v.shape == (9, 4)
    # the terms' sizes: Σ_j e^{β⟨x_i,x_j⟩}/n <= e^β for USA, 1 for SA (after the division); each
    # path's A errs by sum_rounding of them, the projection A − ⟨x,A⟩x by at most twice more
    size = math.exp(beta) if kind == "USA" else 1.0
    np.testing.assert_allclose(v, naive_velocity(x, kind, beta), rtol=0,
                               atol=2 * 3 * sum_rounding(9, beta, 4) * size)
    # ⟨v_i,x_i⟩ = ⟨A_i,x_i⟩(1 − |x_i|²) + the rounding of two 4-term dot products and a product
    assert np.max(np.abs(np.einsum("ij,ij->i", v, x))) <= (2 * 4 + 4 + unit_rounding(4) / EPS) * EPS * size


def test_sa_equals_usa_up_to_the_row_normalisation():
    """USA A_i = (Z_i/n) · SA A_i with Z_i = Σ_j e^{β⟨x_i,x_j⟩}; at β = 0 they coincide."""
    x = uniform_sphere(30, 3, seed=4)
    beta = 2.5
    z = np.exp(beta * (x @ x.T)).sum(axis=1)
    # both sides sum the 30 terms e^{β⟨x_i,x_j⟩}x_j of total size z_i (three sums: the test's z
    # too), each row to sum_rounding of z_i/30
    difference = attention(x, "USA", beta) - attention(x, "SA", beta) * (z / 30)[:, None]
    assert np.all(np.abs(difference) <= 3 * sum_rounding(30, beta, 3) * (z / 30)[:, None])
    np.testing.assert_array_equal(velocity(x, "SA", 0.0), velocity(x, "USA", 0.0))


@pytest.mark.parametrize("kind", KINDS)
def test_beta_700_is_finite(kind):
    """β = 700: USA carries e^700 ≈ 1e304 (factored out), SA is a stable softmax."""
    spread = uniform_sphere(50, 3, seed=5)
    cluster = sphere_exp(np.tile([0.0, 0.0, 1.0], (50, 1)),
                         1e-3 * np.column_stack([uniform_sphere(50, 2, seed=6), np.zeros(50)]))
    for x in (spread, cluster):
        v = velocity(x, kind, 700.0)
        assert np.all(np.isfinite(v))
        assert np.all(np.isfinite(velocity(x, kind, 700.0, chunk_rows=7)))
        assert math.isfinite(energy(x, 700.0)) and energy(x, 700.0) > 0
        if kind == "SA":
            # a convex combination of unit vectors, projected: |v| <= 1 to the sums' rounding
            assert np.max(np.linalg.norm(v, axis=1)) <= 1.0 + 3 * sum_rounding(50, 700.0, 3)
    theta = np.random.default_rng(7).uniform(0, 2 * np.pi, 40)
    assert np.all(np.isfinite(kuramoto_velocity(theta, kind, 700.0)))
    if kind == "SA":  # a short SA run at β = 700 stays finite and on the sphere
        run = simulate(spread, "SA", 700.0, 0.0, 0.1, 0.01, 0.05)
        assert np.all(np.isfinite(run.positions)) and max_unit_deviation(run.positions) <= unit_rounding(3)


# -- chunking and memory ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_chunked_equals_unchunked(kind):
    x = uniform_sphere(3000, 3, seed=8)
    beta = 4.0
    whole = velocity(x, kind, beta, chunk_rows=3000)
    scale = np.max(np.abs(whole))
    # Round-off: BLAS sums a block's rows in an order that depends on the block shape; each
    # path errs by sum_rounding of the terms' sizes Σ_j e^{β⟨x_i,x_j⟩}/n (USA) or 1 (SA), and
    # the projection by at most twice that
    sizes = np.exp(beta * x @ x.T).mean(axis=1) if kind == "USA" else np.ones(3000)
    bound = 2 * 3 * sum_rounding(3000, beta, 3) * sizes[:, None]
    for chunk in (7, 1000, None):
        err = np.abs(velocity(x, kind, beta, chunk_rows=chunk) - whole)
        assert np.all(err <= bound), (chunk, np.max(err / bound))
    assert abs(energy(x, beta, chunk_rows=7) - energy(x, beta, chunk_rows=3000)) <= energy_rounding(x, None, beta)
    theta = np.random.default_rng(9).uniform(0, 2 * np.pi, 500)
    np.testing.assert_allclose(kuramoto_velocity(theta, kind, beta, chunk_rows=13),
                               kuramoto_velocity(theta, kind, beta, chunk_rows=500),
                               rtol=0, atol=2 * 3 * sum_rounding(500, beta, 2) * math.exp(beta))  # sizes <= e^β


@pytest.mark.slow
def test_large_n_never_allocates_the_gram_matrix():
    """n = 20 000: the n×n Gram matrix would be 3.2 GB; the default chunks stay ≈ 256 MiB."""
    n = 20_000
    x = uniform_sphere(n, 3, seed=10)
    tracemalloc.start()
    try:
        v = velocity(x, "SA", 5.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert v.shape == (n, 3) and np.all(np.isfinite(v))
    assert peak < 2**30, f"peak {peak / 2**20:.0f} MiB"
    assert peak < 8 * n * n / 4  # well below one n×n float64 array


# -- integrators: order and the sphere constraint -----------------------------------
ORDER_CASE = dict(n=16, d=3, beta=2.0, t_end=1.0)


@functools.lru_cache(maxsize=None)
def _order_problem(kind):
    """x0 and the reference x(t_end): DOP853 at rtol 1e-12 on the ambient ODE, no projection."""
    n, d, beta, t_end = (ORDER_CASE[k] for k in ("n", "d", "beta", "t_end"))
    x0 = uniform_sphere(n, d, seed=1)
    sol = solve_ivp(lambda t, y: velocity(y.reshape(n, d), kind, beta).ravel(), (0.0, t_end),
                    x0.ravel(), method="DOP853", rtol=1e-12, atol=1e-14)
    assert sol.success
    return x0, sol.y[:, -1].reshape(n, d)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_integrators_show_their_order(kind, scheme):
    """Slope of log(error at t = 1) vs log(dt) within 0.2 of the nominal order.

    Measured (n = 16, d = 3, β = 2, max-norm error at t = 1, dt = 0.1 … 0.0125):
    heun 1.98 (SA) / 2.01 (USA), rk4 3.98 / 3.99, lie_midpoint 1.98 / 1.97,
    euler_maruyama at ν = 0 (geodesic Euler, dt = 0.02 … 0.0025) 1.00 / 1.00.
    The reference is accurate to ~1e-13, below the smallest error (6e-12, rk4).
    """
    x0, ref = _order_problem(kind)
    spec = SCHEMES[scheme]
    dts = np.array([0.1, 0.05, 0.025, 0.0125])
    if spec.deterministic_order < 2:
        dts = dts / 5
    errors = []
    for dt in dts:
        run = simulate(x0, kind, ORDER_CASE["beta"], 0.0, ORDER_CASE["t_end"], dt,
                       ORDER_CASE["t_end"], scheme=scheme)
        assert run.steps == round(ORDER_CASE["t_end"] / dt)
        errors.append(np.max(np.abs(run.final - ref)))
    slope = np.polyfit(np.log(dts), np.log(errors), 1)[0]
    assert abs(slope - spec.deterministic_order) < 0.2, (slope, errors)
    assert errors[-1] > 1e-12  # still in the asymptotic range, above the reference error


@pytest.mark.slow
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_tokens_stay_on_the_sphere_for_ten_thousand_steps(scheme):
    x0 = uniform_sphere(6, 3, seed=11)
    nu = 0.3 if SCHEMES[scheme].stochastic else 0.0
    run = simulate(x0, "SA", 2.0, nu, 100.0, 0.01, 1.0, scheme=scheme, seed=1)
    assert run.steps == 10_000
    # every step ends with a normalisation: the rounding of one, whatever the number of steps
    assert max_unit_deviation(run.positions) <= unit_rounding(3)
    assert max_unit_deviation(run.final) <= unit_rounding(3)


def test_noise_is_seeded_and_reproducible():
    x0 = uniform_sphere(20, 3, seed=12)
    args = (x0, "USA", 1.0, 0.1, 1.0, 0.01, 0.25)
    a = simulate(*args, scheme="euler_maruyama", seed=5)
    b = simulate(*args, scheme="euler_maruyama", seed=5)
    c = simulate(*args, scheme="euler_maruyama", seed=6)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.energy, b.energy)
    assert np.max(np.abs(a.final - c.final)) > 1e-3
    np.testing.assert_array_equal(x0, uniform_sphere(20, 3, seed=12))  # x0 untouched too


# -- exact reductions -------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_equiangular_particles_follow_the_rho_ode(kind, beta):
    """n = d = 6 tokens with all ⟨x_i,x_j⟩ = ρ0 keep a common ρ(t) = solve_equiangular(...).

    rk4 at dt = 1e-3 up to t = 3 (measured max error ≲ 1e-11 except USA, β = 4, ρ0 = −0.1,
    whose collapse rate 2e^4 ≈ 109 makes it ~1e-9 at this dt).
    """
    n = d = 6
    for rho0 in (0.1, -0.1):
        x0 = equiangular(n, d, rho0, seed=2)
        off = ~np.eye(n, dtype=bool)
        assert np.max(np.abs((x0 @ x0.T)[off] - rho0)) <= (d + unit_rounding(d) / EPS) * EPS  # d-term dot products of unit rows
        run = simulate(x0, kind, beta, 0.0, 3.0, 1e-3, 0.25)
        gram = np.einsum("tid,tjd->tij", run.positions, run.positions)[:, off]
        rho = solve_equiangular(kind, rho0, beta, n, run.times)
        err = np.max(np.abs(gram - rho[:, None]))
        assert err <= 1e-8, (rho0, err)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("beta", [0.0, 2.0, 700.0])
def test_circle_velocity_is_the_kuramoto_form(kind, beta):
    """d = 2, x = (cos θ, sin θ): v_i = θ̇_i (−sin θ_i, cos θ_i) pointwise.

    The two paths differ by rounding only: cos(θ_i − θ_j) and ⟨x_i, x_j⟩ agree to a few ε, which
    β amplifies in the exponent (at β = 700 that dominates: measured 7e-14 relative), then the
    12-term sums; in units of the terms' sizes (e^β for USA, 1 for SA).
    """
    theta = np.random.default_rng(13).uniform(0, 2 * np.pi, 12)
    x = np.column_stack([np.cos(theta), np.sin(theta)])
    tangent = np.column_stack([-np.sin(theta), np.cos(theta)])
    v = velocity(x, kind, beta)
    w = kuramoto_velocity(theta, kind, beta)
    tol = 2 * 3 * sum_rounding(12, beta, 2) * (math.exp(beta) if kind == "USA" else 1.0)
    assert np.max(np.abs(v - w[:, None] * tangent)) <= tol
    assert np.max(np.abs(np.einsum("ij,ij->i", v, tangent) - w)) <= tol


@pytest.mark.parametrize("kind", KINDS)
def test_circle_trajectories_match_the_kuramoto_ode(kind):
    """Ambient d = 2 system and angle ODE, both by DOP853 at rtol 1e-13 / atol 1e-14, β = 2.

    Reached (12 tokens, t <= 3, displacements ~1): 9e-12 (SA), 8e-13 (USA); asserted 1e-10.
    """
    n, beta, t_end = 12, 2.0, 3.0
    theta0 = np.random.default_rng(14).uniform(0, 2 * np.pi, n)
    x0 = np.column_stack([np.cos(theta0), np.sin(theta0)])
    t_eval = np.linspace(0.0, t_end, 7)
    kw = dict(method="DOP853", rtol=1e-13, atol=1e-14, t_eval=t_eval)
    amb = solve_ivp(lambda t, y: velocity(y.reshape(n, 2), kind, beta).ravel(), (0, t_end),
                    x0.ravel(), **kw)
    ang = solve_ivp(lambda t, y: kuramoto_velocity(y, kind, beta), (0, t_end), theta0, **kw)
    assert amb.success and ang.success
    xa = amb.y.T.reshape(-1, n, 2)
    xk = np.stack([np.cos(ang.y.T), np.sin(ang.y.T)], axis=-1)
    assert np.max(np.abs(xa[-1] - xa[0])) > 0.5  # the tokens really move
    assert np.max(np.abs(xa - xk)) <= 1e-10  # two DOP853 solutions at rtol 1e-13 (the docstring)


# -- energy -----------------------------------------------------------------------
def test_energy_formula_and_beta_zero_convention():
    x = uniform_sphere(40, 3, seed=15)
    m = x.mean(axis=0)
    beta = 3.0
    direct = np.expm1(beta * (x @ x.T)).sum() / (2 * beta * 40**2)
    assert abs(energy(x, beta) - direct) <= energy_rounding(x, None, beta)
    assert abs(energy(x, 0.0) - 0.5 * m @ m) <= energy_rounding(x, None, 0.0)
    # β → 0: E_β → |m|²/2 continuously (the constant 1/(2β) is not part of E_β)
    small = 1e-6
    assert energy(x, small) == pytest.approx(0.5 * m @ m, abs=1e-6)
    assert abs(order_parameter(x) - np.linalg.norm(m)) <= 2 * (40 + 4) * EPS  # n-term sums of unit rows


@pytest.mark.parametrize("kind", KINDS)
def test_energy_grows_at_the_exact_rate(kind):
    """dE/dt = (1/n²) Σ_i Z_i^{SA} |v_i|² (SA) or (1/n) Σ_i |v_i|² (USA), Z_i = Σ_j e^{β⟨x_i,x_j⟩}.

    (d/dt of (1/2βn²) Σ_ij e^{β⟨x_i,x_j⟩} is (1/n²) Σ_i ⟨ẋ_i, Σ_j e^{β⟨x_i,x_j⟩} x_j⟩.)
    Checked with a central difference of the recorded energy (rk4, dt = 1e-3).
    """
    x0 = uniform_sphere(30, 3, seed=16)
    beta, h = 2.0, 1e-3
    run = simulate(x0, kind, beta, 0.0, 0.5, h, h)
    assert np.all(np.diff(run.energy) > 0)
    k = 250
    fd = (run.energy[k + 1] - run.energy[k - 1]) / (2 * h)
    x = run.positions[k]
    v = velocity(x, kind, beta)
    n = len(x)
    z = np.exp(beta * (x @ x.T)).sum(axis=1)
    rate = (np.sum(z * np.sum(v * v, axis=1)) / n**2 if kind == "SA"
            else np.sum(v * v) / n)
    assert fd == pytest.approx(rate, rel=1e-5)


# -- noise: the Langevin stationary state ----------------------------------------------
@pytest.mark.slow
def test_noisy_beta_zero_order_parameter_solves_the_langevin_equation():
    """β = 0, ν = 0.2, d = 3: the stationary |m| solves |m| = coth(|m|/ν) − ν/|m| (≈ 0.725882).

    At β = 0 the n-particle system is reversible with invariant law ∝ exp(n|m|²/2ν);
    as n → ∞ each token's law is vMF(m, |m|/ν) with the self-consistent |m| above.
    The run starts from that law (n = 2000, scipy vMF draws) and time-averages
    |m| over t ∈ [2, 142] (snapshots every 0.1); the standard error comes from
    20 batch means of length 7 (the autocorrelation time of |m| is ~1).

    Biases, measured offline with n = 4000 over t ≈ 400 per run: the geodesic
    Euler–Maruyama stationary bias is ≈ −0.1·dt in |m| (−0.0021, −0.0011, −0.0002
    at dt = 0.02, 0.01, 0.005); dt = 0.005 is used, so it is ≈ −5e-4, about half a
    standard error (SE ≈ 1e-3 here). The finite-n bias is O(1/n) ≈ 2e-4.
    """
    nu, n, dt, burn, t_end = 0.2, 2000, 0.005, 2.0, 142.0
    m_star = brentq(lambda m: 1 / math.tanh(m / nu) - nu / m - m, 0.1, 1.0, xtol=1e-15)
    assert m_star == pytest.approx(0.725882, abs=1e-6)
    x0 = von_mises_fisher_mixture(n, [[0.0, 0.0, 1.0]], [m_star / nu], seed=100)
    run = simulate(x0, "USA", 0.0, nu, t_end, dt, 0.1, scheme="euler_maruyama", seed=1,
                   store_positions=False)
    op = run.order_parameter[run.times > burn + 1e-9]
    assert op.size == 1400
    batches = op.reshape(20, -1).mean(axis=1)
    mean, se = batches.mean(), batches.std(ddof=1) / math.sqrt(batches.size)
    assert 2e-4 < se < 3e-3  # a sane error bar: fluctuations ~ 1/sqrt(n a), a ≈ 8.7
    assert abs(mean - m_star) <= 3 * se, (mean, se, m_star)


# -- sampling -------------------------------------------------------------------------
def test_samplers_are_unit_seeded_and_have_the_right_law():
    u = uniform_sphere(20_000, 3, seed=17)
    assert max_unit_deviation(u) <= unit_rounding(3)
    np.testing.assert_array_equal(u, uniform_sphere(20_000, 3, seed=17))
    # uniform: E x = 0, E x xᵀ = I/3, each component of the mean has SE 1/sqrt(3n)
    assert np.max(np.abs(u.mean(axis=0))) < 4 / math.sqrt(3 * 20_000)
    # vMF on S²: E⟨μ, x⟩ = coth κ − 1/κ, Var⟨μ,x⟩ <= 1/3
    kappa, mu = 5.0, np.array([0.0, 0.6, 0.8])
    x = von_mises_fisher_mixture(20_000, [mu], [kappa], seed=18)
    assert max_unit_deviation(x) <= unit_rounding(3)
    mean_cos = (x @ mu).mean()
    assert abs(mean_cos - (1 / math.tanh(kappa) - 1 / kappa)) < 4 * math.sqrt(1 / 3 / 20_000)
    # mixture weights: well separated narrow components, counted by nearest centre
    centres = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 0, 1.0]])
    w = np.array([0.5, 0.3, 0.2])
    y = von_mises_fisher_mixture(10_000, centres, [50.0, 50.0, 50.0], weights=w, seed=19)
    frac = np.bincount(np.argmax(y @ centres.T, axis=1), minlength=3) / 10_000
    assert np.all(np.abs(frac - w) < 4 * np.sqrt(w * (1 - w) / 10_000))
    np.testing.assert_array_equal(y, von_mises_fisher_mixture(10_000, centres, [50.0] * 3,
                                                              weights=w, seed=19))
    # equiangular: exact Gram matrix, random orientation depends on the seed
    e = equiangular(5, 8, -0.2, seed=3)
    # Gram entries: 8-term dot products of unit rows built with a few operations each
    np.testing.assert_allclose(e @ e.T, 1.2 * np.eye(5) - 0.2, rtol=0, atol=(8 + unit_rounding(8) / EPS) * EPS)
    assert np.max(np.abs(e - equiangular(5, 8, -0.2, seed=4))) > 0.1


# -- input validation -----------------------------------------------------------------
GOOD = dict(x0=uniform_sphere(4, 3, seed=0), kind="SA", beta=1.0, nu=0.0, t_end=1.0, dt=0.1,
            every=0.5)


@pytest.mark.parametrize("change, match", [
    ({"x0": np.ones((4, 3))}, r"x0.*unit"),
    ({"x0": uniform_sphere(1, 3)}, r"x0.*n = 1.*>= 2"),
    ({"x0": np.ones((4, 1))}, r"x0.*d = 1.*>= 2"),
    ({"x0": np.ones(3)}, r"x0.*shape"),
    ({"x0": np.full((4, 3), np.nan)}, r"x0.*finite"),
    ({"kind": "MHA"}, r"kind.*SA.*USA"),
    ({"beta": -1.0}, r"beta.*\[0, 700\]"),
    ({"beta": 701.0}, r"beta.*\[0, 700\]"),
    ({"beta": float("nan")}, r"beta.*\[0, 700\]"),
    ({"nu": -0.1}, r"nu.*>= 0"),
    ({"t_end": -1.0}, r"t_end.*>= 0"),
    ({"dt": 0.0}, r"dt.*> 0"),
    ({"dt": float("inf")}, r"dt.*finite"),
    ({"every": -1.0}, r"every.*> 0"),
    ({"scheme": "rk45"}, r"scheme.*rk4"),
    ({"nu": 0.1}, r"scheme.*deterministic.*euler_maruyama"),
    ({"seed": -3}, r"seed.*>= 0"),
    ({"chunk_rows": 0}, r"chunk_rows.*>= 1"),
])
def test_simulate_rejects_bad_input_before_any_work(monkeypatch, change, match):
    def no_work(*args, **kwargs):
        raise AssertionError("work started before validation")

    monkeypatch.setattr(simulate_module, "order_parameter", no_work)
    for name in ("__call__", "energy"):  # the velocity and energy of the checked tokens' field
        monkeypatch.setattr(simulate_module.TokenField, name, no_work)
    args = {**GOOD, **change}
    with pytest.raises(ValueError, match=match) as info:
        simulate(**args)
    assert isinstance(info.value, ConfigError)


def test_other_functions_reject_bad_input():
    x = uniform_sphere(4, 3)
    with pytest.raises(ConfigError, match="kind"):
        velocity(x, "sa", 1.0)
    with pytest.raises(ConfigError, match="beta"):
        velocity(x, "SA", 800.0)
    with pytest.raises(ConfigError, match="chunk_rows"):
        velocity(x, "SA", 1.0, chunk_rows=2.5)
    with pytest.raises(ConfigError, match="theta"):
        kuramoto_velocity(np.zeros((2, 2)), "SA", 1.0)
    with pytest.raises(ConfigError, match="d = 4.*d >= n"):
        equiangular(6, 4, 0.1)
    with pytest.raises(ConfigError, match="rho"):
        equiangular(3, 3, -0.5)
    with pytest.raises(ConfigError, match="concentrations"):
        von_mises_fisher_mixture(10, [[0, 0, 1]], [-1.0])
    with pytest.raises(ConfigError, match="weights"):
        von_mises_fisher_mixture(10, [[0, 0, 1], [1, 0, 0]], [1.0, 1.0], weights=[1.0, -1.0])
    with pytest.raises(ConfigError, match="d = 1"):
        uniform_sphere(3, 1)


def test_snapshots_and_outputs():
    x0 = uniform_sphere(10, 4, seed=20)
    run = simulate(x0, "USA", 1.0, 0.0, 1.05, 0.1, 0.25)
    # snapshot times k·0.25 and the end: one product each (ε relative), the last step's sum a few ε
    np.testing.assert_allclose(run.times, [0, 0.25, 0.5, 0.75, 1.0, 1.05], rtol=0, atol=4 * 1.05 * EPS)
    assert run.positions.shape == (6, 10, 4) and run.energy.shape == (6,)
    assert run["order_parameter"] is run.order_parameter
    np.testing.assert_array_equal(run.positions[0], x0)
    np.testing.assert_array_equal(run.positions[-1], run.final)
    assert simulate(x0, "SA", 1.0, 0.0, 0.0, 0.1, 0.5).times.tolist() == [0.0]
    ds = run.to_dataset()
    assert ds["positions"].dims == ("time", "particle", "xyz") and ds.attrs["kind"] == "USA"


def test_small_beta_energy_is_continuous():
    """E_β = (1/(2βn²)) Σ (e^{β⟨x_i,x_j⟩} − 1) at every β: continuous across SMALL_BETA and
    β = 1 (the switches of its evaluation), and at β = 1e-300 finite and |m|²/2 to O(β)."""
    from meanfield_pde.core.kernels import SMALL_BETA
    from meanfield_pde.particles.dynamics import energy, order_parameter
    x = np.random.default_rng(4).standard_normal((50, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for switch in (SMALL_BETA, 1.0):
        above, below = switch * (1 + 1e-12), switch * (1 - 1e-12)
        # E moves by <= (above − below)·max|dE/dβ| <= 2e-12·switch·e (dE/dβ <= e^β/4 for β <= 1);
        # each branch has its rounding, and the series below SMALL_BETA stops at O(β²)
        bound = (2e-12 * switch * math.e + energy_rounding(x, None, above) + energy_rounding(x, None, below)
                 + SMALL_BETA ** 2)
        assert abs(energy(x, above) - energy(x, below)) <= bound
    assert abs(energy(x, 1e-300) - 0.5 * order_parameter(x) ** 2) <= energy_rounding(x, None, 0.0)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

# -- particles ---------------------------------------------------------------------------------------
def test_token_inputs_are_real_arrays_of_the_right_shapes():
    from meanfield_pde.particles import simulate
    from meanfield_pde.particles.sampling import uniform_sphere, von_mises_fisher_mixture
    x0 = uniform_sphere(8, 3, seed=0)
    with pytest.raises(ConfigError, match="x0: complex"):  # the imaginary parts were dropped
        simulate(x0.astype(complex), "SA", 1.0, 0.0, 1.0, 0.1, 0.5)
    with pytest.raises(ConfigError, match=r"centres: shape \(1, 1, 3\)"):  # "too many values to unpack"
        von_mises_fisher_mixture(10, np.ones((1, 1, 3)), [1.0])
    with pytest.raises(ConfigError, match=r"concentrations: shape \(2,\)"):  # a broadcast error
        von_mises_fisher_mixture(10, [[0, 0, 1]], [1.0, 2.0])
    with pytest.raises(ConfigError, match="concentrations = \\['a'\\]"):
        von_mises_fisher_mixture(10, [[0, 0, 1]], ["a"])
    with pytest.raises(ConfigError, match="centres: complex"):
        von_mises_fisher_mixture(10, [[0, 0, 1j]], [1.0])
    # the order parameter of a vMF(κ) sample on S² is A_3(κ) = coth κ − 1/κ, within sampling
    # error (the variance of one token's component along the centre is below 1)
    n = 20000
    for kappa in (0.5, 5.0):
        m = np.linalg.norm(von_mises_fisher_mixture(n, [[0, 0, 1]], [kappa], seed=1).mean(axis=0))
        assert abs(m - (1 / np.tanh(kappa) - 1 / kappa)) < 4 / np.sqrt(n)


def test_velocity_of_non_finite_tokens_is_refused():
    from meanfield_pde.particles import velocity
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [np.nan, 0.0, 0.0]])
    with pytest.raises(ConfigError, match="x: positions must be finite"):  # was all NaN
        velocity(x, "SA", 1.0)
    # two tokens at β = 0: v_1 = P⊥_{x_1} m, m = (x_1 + x_2)/2, so v_1 = x_2/2 for x_1 ⊥ x_2
    v = velocity(x[:2], "USA", 0.0)
    np.testing.assert_array_equal(v, [[0.0, 0.5, 0.0], [0.5, 0.0, 0.0]])  # sums of 0, 1/2, 1: exact


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

# -- 5. complex token positions ------------------------------------------------------------------
@pytest.mark.parametrize("function", ["velocity", "field_velocity", "attention", "energy"])
def test_particle_functions_refuse_complex_positions(function):
    """particles.velocity of complex positions dropped the imaginary parts with only numpy's
    ComplexWarning (and went on with other tokens than given): refused as simulate refuses a
    complex x0. NaN positions stay field_velocity's integrators' business (a stopped run)."""
    import warnings
    from meanfield_pde import ConfigError
    from meanfield_pde.particles import dynamics
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=complex)
    x[0, 1] = 0.5j
    call = {"energy": lambda y: dynamics.energy(y, 1.0)}.get(
        function, lambda y: getattr(dynamics, function)(y, "SA", 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigError, match=re.escape("x: complex values: token positions (n, d) must be real")):
            call(x)
        with pytest.raises(ConfigError, match=re.escape("x: not an array of real numbers")):
            call([["a", "b"], ["c", "d"]])
    assert np.all(np.isfinite(call(x.real)))


def test_kuramoto_velocity_refuses_complex_angles():
    from meanfield_pde import ConfigError
    from meanfield_pde.particles import kuramoto_velocity
    with pytest.raises(ConfigError, match=re.escape("theta: complex values: angles (n,) must be real")):
        kuramoto_velocity(np.array([0.0, 1.0 + 1j]), "SA", 1.0)
