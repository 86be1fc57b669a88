"""Normalisation schemes (arXiv:2510.22026; Rigollet arXiv:2512.01868 §6.2) against mathematics.

1. Particles started equiangular follow each scheme's (ρ, r) ODEs to 1e-8.
2. Fitted rates over the last decade of t: Post-LN log(1−ρ) slope −2,
   Pre-LN log–log slope −2, sqrt-scaling 1−ρ ~ e^{−4√t} (within 5%).
3. Discrete layers converge to the continuous model at order >= 1 in h.
Plus: Post-LN is SA (the independent equiangular.solve_equiangular), the
closed-form equiangular moments against a direct attention evaluation, and a
user-registered scheme.
"""

import numpy as np
import pytest

from meanfield_pde.theory.equiangular import solve_equiangular
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.particles.normalisation import (ASYMPTOTIC_LAWS, attention_moments,
                                                   collapse_clock, fitted_rate, get_scheme, layers, register_scheme,
                                                   solve_scheme_equiangular)
from meanfield_pde.particles.normalisation import NORMALISATIONS as SCHEMES
from meanfield_pde.particles.normalisation import NormalisationScheme as Scheme
from meanfield_pde.particles.normalisation import simulate_scheme as simulate
from meanfield_pde.particles import attention
from meanfield_pde.particles.sampling import equiangular, uniform_sphere

from helpers.bounds import EPS

PARAMS = {"mix_ln": {"switch_time": 1.0}}


def scheme(name):
    return get_scheme(name, **PARAMS.get(name, {}))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pre_ln", "peri_ln"])
@pytest.mark.parametrize("r0", [1e-100, 1e-50, 1e-20])
def test_tiny_initial_radii_follow_the_odes_of_schemes_with_a_radius(name, r0):
    """transformer.radius0 may be as small as 1e-100: the angles then move at speed 1/r and a
    trial step of solve_ivp pushed u = log(1−ρ) to 5e14, where expm1 overflowed (a traceback in
    the normalisation study, after the schemes before it had run)."""
    n, d, rho0 = 2, 2, 0.0
    t = np.concatenate([[0.0], np.geomspace(1e-3, 10.0, 9)])
    ode = solve_scheme_equiangular(scheme(name), rho0, 1.0, n, t, r0=r0)
    run = simulate(r0 * equiangular(n, d, rho0, seed=1), scheme(name), 1.0, t)
    assert np.all(np.isfinite(ode.gap)) and np.all(np.diff(ode.gap) <= 0) and ode.gap[-1] < 1e-30
    assert np.abs(run.inner_products - ode.rho[:, None]).max() < 1e-8  # as at r0 = 1.5 below


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_equiangular_particles_follow_the_rho_r_odes(name):
    n, d, beta, rho0, r0 = 8, 8, 1.0, 0.2, 1.5
    t = np.linspace(0.0, 5.0, 11)
    x0 = r0 * equiangular(n, d, rho0, seed=1)
    run = simulate(x0, scheme(name), beta, t)
    ode = solve_scheme_equiangular(scheme(name), rho0, beta, n, t, r0=r0)
    assert np.abs(run.inner_products - ode.rho[:, None]).max() < 1e-8
    assert np.abs(run.radii - ode.radius[:, None]).max() < 1e-8 * ode.radius.max()
    if not (scheme(name).on_sphere or name == "mix_ln"):
        assert ode.radius[-1] > 2.0 * r0  # the radius really moves (tested, not trivially 1)


def test_post_ln_is_sa():
    t = np.linspace(0.0, 8.0, 9)
    ode = solve_scheme_equiangular("post_ln", 0.1, 3.0, 12, t)
    ref = solve_equiangular("SA", 0.1, 3.0, 12, t, gap=True)
    # two ODE solutions of the same law, each at rtol 1e-12 (solve_ivp), their errors grown over t
    assert np.allclose(ode.gap, ref, rtol=1e-9, atol=0)


def test_equiangular_moments_match_a_direct_attention():
    n, beta, rho = 7, 2.5, 0.35
    theta = equiangular(n, n, rho, seed=4)
    a = attention(theta, "SA", beta)
    dot, norm, tang = attention_moments(rho, beta, n)
    # the sampled tokens' Gram matrix is equiangular up to Δ (their construction, and the d-term
    # inner products); a moment, a softmax mean of inner products, moves by <= (3 + 2β)Δ with it;
    # the direct side: Gram entries, e^{βG} (β(d + 1)ε), n-term means and d-term products, the
    # closed forms: a few roundings; all the quantities are <= 1
    d = theta.shape[1]
    delta = np.abs(theta @ theta.T - (rho + (1 - rho) * np.eye(n))).max() + d * EPS
    tol = (3 + 2 * beta) * delta + (n + 2 * d + 2 * beta * (d + 1) + 10) * EPS
    assert np.allclose(np.einsum("ij,ij->i", theta, a), dot, rtol=0, atol=tol)
    assert np.allclose(np.linalg.norm(a, axis=1), norm, rtol=0, atol=tol)
    p = a - np.einsum("ij,ij->i", theta, a)[:, None] * theta   # P⊥A_i
    assert np.isclose(p[0] @ theta[1], (1 - rho) * tang, rtol=0, atol=tol)


@pytest.mark.parametrize("name, kind, t_end, expected", [
    ("post_ln", "exponential", 20.0, -2.0),
    ("pre_ln", "power", 1e4, -2.0),
    ("sqrt_scaling", "stretched", 1e4, -4.0),
    ("peri_ln", "power", 1e4, -2.0),
    ("mix_ln", "power", 1e4, -2.0),
    ("ngpt", "exponential", 20.0, -2.0),
])
def test_fitted_rates_over_the_last_decade(name, kind, t_end, expected):
    t = np.concatenate([[0.0], np.geomspace(t_end / 1e3, t_end, 300)])
    run = solve_scheme_equiangular(scheme(name), 0.2, 1.0, 16, t)
    assert ASYMPTOTIC_LAWS[name][0] == kind
    slope = fitted_rate(run, kind)
    assert slope == pytest.approx(expected, rel=0.05), slope
    assert run.gap[-1] > 0  # resolved in log(1−ρ), not underflowed


CLOCKS = {  # tau(t) = int dt/s at the collapsed state (arXiv:2510.22026 §4), r0 = 1, T = 1
    "post_ln": lambda t: t,
    "ngpt": lambda t: t,
    "pre_ln": lambda t: np.log1p(t),
    "peri_ln": lambda t: np.log1p(t),
    "sqrt_scaling": lambda t: 2 * (np.sqrt(1 + t) - 1),
    "mix_ln": lambda t: np.where(t < 1, t, 1 + np.log(np.maximum(t, 1))),
}


def test_every_registered_scheme_has_a_closed_form():
    assert set(SCHEMES) == set(CLOCKS) == set(ASYMPTOTIC_LAWS)


@pytest.mark.parametrize("name", list(SCHEMES))
def test_collapse_clock_closed_forms_and_gap_asymptotics(name):
    """Each registered scheme against its closed-form clock (parametrized over the registry)."""
    clock = CLOCKS[name]
    # tau(t) = int dt/s at the collapsed state: closed forms, and 1-rho ~ C e^{-2 tau}
    t_end = 15.0 if name in ("post_ln", "ngpt") else 1e4
    t = np.concatenate([[0.0], np.geomspace(0.01, t_end / 2, 60), [t_end]])
    tau = collapse_clock(scheme(name), t)
    # collapse_clock integrates dτ/dt = 1/s_∞ by DOP853 at rtol 1e-12, atol 1e-12 (its docstring):
    # the solver's tolerances grown over t up to 1e4, not rounding
    assert np.allclose(tau, clock(t), rtol=1e-9, atol=1e-11)
    run = solve_scheme_equiangular(scheme(name), 0.2, 1.0, 16, t)
    c = np.log(run.gap) + 2 * tau                   # -> log C (power laws: O(1/t) corrections)
    assert abs(c[-1] - c[-2]) < 1e-3


def test_ngpt_rate_scales_with_alpha():
    t = np.linspace(0.0, 10.0, 201)
    run = solve_scheme_equiangular(get_scheme("ngpt", alpha=0.5), 0.2, 1.0, 16, t)
    assert fitted_rate(run, "exponential") == pytest.approx(-1.0, rel=0.05)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_discrete_layers_converge_at_order_one(name):
    n, d, beta, t_end = 6, 3, 2.0, 1.0
    sch = get_scheme(name, **({"switch_time": 0.5} if name == "mix_ln" else {}))
    x0 = uniform_sphere(n, d, seed=3) * np.linspace(0.8, 1.3, n)[:, None]
    ref = simulate(x0, sch, beta, [0.0, t_end]).positions[-1]
    errors = []
    for h in (0.02, 0.01, 0.005):
        steps = int(round(t_end / h))
        errors.append(np.abs(layers(x0, sch, beta, h, steps, every=steps).positions[-1] - ref).max())
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders >= 0.98), (errors, orders)
    assert errors[-1] < 0.01


def test_a_user_scheme_defined_in_one_place():
    # s = 2: Post-LN at half speed; no layer given -> projected Euler steps
    half = Scheme("half_speed", speed=lambda r, dot, norm, t: 2.0 * np.ones_like(dot))
    register_scheme(half)
    try:
        t = np.linspace(0, 4, 5)
        slow = solve_scheme_equiangular("half_speed", 0.3, 1.0, 5, t)
        fast = solve_scheme_equiangular("post_ln", 0.3, 1.0, 5, t / 2)
        # two ODE solutions (rtol 1e-12 each) of the same trajectory at rescaled times
        assert np.allclose(slow.gap, fast.gap, rtol=1e-9)
        x0 = uniform_sphere(4, 3, seed=0)
        ref = simulate(x0, "half_speed", 1.0, [0, 1.0]).positions[-1]
        err = [np.abs(layers(x0, "half_speed", 1.0, 1 / k, k).positions[-1] - ref).max() for k in (50, 100)]
        assert 1.9 < err[0] / err[1] < 2.1
    finally:
        SCHEMES.remove("half_speed")


@pytest.mark.parametrize("call, match", [
    (lambda: get_scheme("post-ln"), "must be one of"),
    (lambda: get_scheme("mix_ln", switch_time=-1), "switch_time"),
    (lambda: get_scheme("ngpt", alpha=0), "alpha"),
    (lambda: get_scheme("ngpt", beta=1), "ngpt"),
    (lambda: solve_scheme_equiangular("pre_ln", 1.0, 1.0, 4, [0, 1]), "rho0"),
    (lambda: solve_scheme_equiangular("pre_ln", 0.1, 1.0, 4, [0, 1], r0=0), "r0"),
    (lambda: simulate(np.ones((1, 3)), "post_ln", 1.0, [0, 1]), "x: shape"),
    (lambda: simulate(np.eye(3), "post_ln", 1.0, [1, 0]), "increasing"),
    (lambda: layers(np.eye(3), "post_ln", 1.0, 0.0, 3), "h = "),
    (lambda: layers(np.eye(3), "post_ln", -1.0, 0.1, 3), "beta"),
])
def test_bad_arguments_name_the_field(call, match):
    with pytest.raises(ConfigError, match=match):
        call()
