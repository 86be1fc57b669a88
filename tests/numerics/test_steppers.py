"""IMEX schemes: order conditions of the tableaus, observed convergence order on a
smooth nonlinear run, and adaptive stepping against fixed steps (acceptance 5)."""

import numpy as np
import pytest

from meanfield_pde.runs.runner import build
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import TABLEAUS as SCHEMES

from helpers.bounds import EPS, fitted_slope
from helpers.cases import make_config


def order_conditions(a_exp, b_exp, a_imp, b_imp, c):
    """Residuals of the IMEX RK order conditions up to order 4, the coupling conditions
    included: every tree with each of its nodes explicit or implicit (Kennedy & Carpenter
    2003, §3; the trees of Hairer, Nørsett & Wanner I, §II.2, Table 2.1; with equal
    c for both parts, as here)."""
    bs, As = (b_exp, b_imp), (a_exp, a_imp)
    res = {1: [b.sum() - 1 for b in bs],
           2: [b @ c - 0.5 for b in bs]}
    res[3] = [b @ (c**2) - 1 / 3 for b in bs]
    res[3] += [b @ A @ c - 1 / 6 for b in bs for A in As]
    res[4] = [b @ (c**3) - 1 / 4 for b in bs]
    res[4] += [b @ (c * (A @ c)) - 1 / 8 for b in bs for A in As]
    res[4] += [b @ A @ (c**2) - 1 / 12 for b in bs for A in As]
    res[4] += [b @ A @ A2 @ c - 1 / 24 for b in bs for A in As for A2 in As]
    return res


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_tableau_order_conditions(name):
    t = SCHEMES[name]
    # Round-off: the coefficients are rationals rounded to double (ε relative each); a condition
    # is a sum of at most s⁴ products of at most 4 of them, so its residual is bounded by
    # (s⁴ + 4)ε times the same condition evaluated on the absolute values (its terms' sizes)
    s = t.stages
    roundoff = (s ** 4 + 4) * EPS
    np.testing.assert_allclose(t.a_exp.sum(axis=1), t.c, rtol=0, atol=(s + 1) * EPS * np.abs(t.a_exp).sum(axis=1).max())
    np.testing.assert_allclose(t.a_imp.sum(axis=1), t.c, rtol=0, atol=(s + 1) * EPS * np.abs(t.a_imp).sum(axis=1).max())
    assert np.all(np.triu(t.a_exp) == 0) and np.all(np.triu(t.a_imp, 1) == 0)
    res = order_conditions(t.a_exp, t.b_exp, t.a_imp, t.b_imp, t.c)
    sizes = order_conditions(*(np.abs(m) for m in (t.a_exp, t.b_exp, t.a_imp, t.b_imp, t.c)))
    for p in range(1, t.order + 1):  # sizes[p] + 1: the terms and the constant subtracted (<= 1)
        assert np.all(np.abs(res[p]) <= roundoff * (np.abs(sizes[p]) + 1)), (p, res[p])
    if t.order < 4:
        assert np.max(np.abs(res[t.order + 1])) > 1e-3  # genuinely of its order, no higher
    if t.embedded:
        emb = order_conditions(t.a_exp, t.b_hat_exp, t.a_imp, t.b_hat_imp, t.c)
        sizes = order_conditions(*(np.abs(m) for m in (t.a_exp, t.b_hat_exp, t.a_imp, t.b_hat_imp, t.c)))
        for p in range(1, t.embedded_order + 1):
            assert np.all(np.abs(emb[p]) <= roundoff * (np.abs(sizes[p]) + 1)), (p, emb[p])


SMOOTH = dict(model={"kind": "USA", "beta": 2.0, "nu": 0.05}, domain={"lmax": 15},
              initial={"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8]],
                       "concentrations": [3.0, 2.0]})


def final_state(scheme, dt, t_end, adaptive=False, rtol=1e-6, **sections):
    cfg = make_config(**{**SMOOTH, **sections},
                      time={"t_end": t_end, "dt": dt, "scheme": scheme, "adaptive": adaptive,
                            "rtol": rtol, "atol": 1e-14},
                      output={"every": t_end})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, t_end, every=t_end, dt=dt, cfl=0.5)
    assert res.completed, res.status
    return sim.geometry, res


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_observed_order(name):
    t_end = 0.5
    g, ref = final_state("ARS443", 2.5e-4, t_end)
    dts = np.array([0.05, 0.025, 0.0125, 0.00625])
    errors = []
    for dt in dts:
        _, res = final_state(name, dt, t_end)
        diff = res.coef - ref.coef
        errors.append(np.sqrt(g.inner(diff, diff)))
    slope = fitted_slope(dts, errors)
    assert abs(slope - SCHEMES[name].order) <= 0.2, (slope, errors)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_adaptive_beats_fixed_step_at_equal_accuracy(name):
    """SA from a perturbed uniform density: slow linear growth, then fast clustering.

    Every scheme needs fewer steps adaptively; with an embedded estimate
    (ARK324) also fewer right-hand-side evaluations. Step doubling (the other
    schemes) costs 3 steps per attempt and is not cheaper in evaluations here.
    """
    setup = dict(model={"kind": "SA", "beta": 5.0}, domain={"lmax": 31},
                 initial={"type": "perturbed_uniform", "amplitude": 1e-3, "degree_max": 6})
    t_end = 10.0
    g, ref = final_state("ARS443", 0.1, t_end, adaptive=True, rtol=1e-11, **setup)
    err = lambda res: np.sqrt(g.inner(res.coef - ref.coef, res.coef - ref.coef))  # noqa: E731
    _, adaptive = final_state(name, 0.1, t_end, adaptive=True, rtol=1e-5, **setup)
    target = err(adaptive)
    # compare work: right-hand-side evaluations (step doubling costs 3 steps per attempt)
    sim = build(make_config(**{**SMOOTH, **setup}, time={"t_end": 1.0, "scheme": name}))
    work_adaptive = (adaptive.steps + adaptive.rejected) * sim.control.rhs_per_attempt
    dt = 0.5
    while True:
        _, fixed = final_state(name, dt, t_end, **setup)
        if err(fixed) <= target:
            break
        dt /= 2
    work_fixed = fixed.steps * sim.control.stepper.explicit_calls
    assert adaptive.steps + adaptive.rejected < fixed.steps, (adaptive.steps, fixed.steps, target)
    if SCHEMES[name].embedded:
        assert work_adaptive < work_fixed, (work_adaptive, work_fixed, target)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_one_step_is_the_imex_stability_function(name):
    """On u' = λ_E u + λ_I u (λ_E complex, explicit; λ_I <= 0, implicit) per coefficient, one
    step multiplies u by R(z_E, z_I) = 1 + (z_E b_E + z_I b_I)ᵀ (I − z_E A_E − z_I A_I)⁻¹ 1,
    z = dt λ (Ascher, Ruuth & Spiteri 1997, §2; Hairer & Wanner II, §IV.3 for one tableau),
    and the embedded estimate is (z_E (b_E − b̂_E) + z_I (b_I − b̂_I))ᵀ Y u with the same stage
    factors Y: the stage combinations, the implicit division and the error weights at once."""
    from meanfield_pde.numerics.steppers import IMEXRungeKutta

    t = SCHEMES[name]
    rng = np.random.default_rng(3)
    n = 40
    lam_e = rng.normal(size=n) * 3 + 1j * rng.normal(size=n) * 5
    lam_i = -rng.uniform(0, 50, size=n)
    lam_i[:3] = 0.0  # a few coefficients without implicit part
    u = rng.normal(size=n) + 1j * rng.normal(size=n)

    def explicit(v, out):
        np.multiply(lam_e, v, out=out)
        return out

    stepper = IMEXRungeKutta(t, explicit, lam_i)
    for dt in (0.01, 0.037):  # a second step size: the cached weights and factors follow it
        new, error = stepper.step(u, dt)
        s = t.stages
        for k in range(n):
            ze, zi = dt * lam_e[k], dt * lam_i[k]
            m = np.eye(s) - ze * t.a_exp - zi * t.a_imp
            y = np.linalg.solve(m, np.ones(s))
            r = 1 + (ze * t.b_exp + zi * t.b_imp) @ y
            # the stepper and this reference solve the same s×s triangular system their own way
            # (forward substitution: s² ε relative, times its condition) and sum s stages
            bound = 2 * (s * s + s + 4) * EPS * np.linalg.cond(m) * abs(u[k])
            size = 1 + np.abs(ze * t.b_exp + zi * t.b_imp) @ np.abs(y)
            assert abs(new[k] - r * u[k]) <= bound * size
            if t.embedded:
                be, bi = t.b_exp - t.b_hat_exp, t.b_imp - t.b_hat_imp
                e = (ze * be + zi * bi) @ y
                assert abs(error[k] - e * u[k]) <= bound * (1 + np.abs(ze * be + zi * bi) @ np.abs(y))
        assert error is None or t.embedded


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_last_evaluated_is_the_last_stage_the_explicit_part_saw(name):
    """After a step, ``last_evaluated`` is the very array of the last explicit evaluation, still
    holding that stage (what the time loop bounds the new state's min f from), or None where a
    later stage overwrote it; the stage values are those of the stability function's stages."""
    from meanfield_pde.numerics.steppers import IMEXRungeKutta

    t = SCHEMES[name]
    rng = np.random.default_rng(5)
    n = 12
    lam_e = rng.normal(size=n) + 1j * rng.normal(size=n)
    lam_i = -rng.uniform(0, 5, size=n)
    u = rng.normal(size=n) + 1j * rng.normal(size=n)
    seen = []

    def explicit(v, out):
        seen.append((v, v.copy()))
        np.multiply(lam_e, v, out=out)
        return out

    stepper = IMEXRungeKutta(t, explicit, lam_i)
    dt = 0.05
    stepper.step(u, dt)
    last, value = seen[-1]
    used = [i for i in range(t.stages) if stepper._needs_N[i]]
    if used[-1] == t.stages - 1 or (used[-1] == 0 and len(used) == 1):
        assert stepper.last_evaluated is last and np.array_equal(last, value)
        # the stage U_j = Y_j u of the stage equations U = u + dt (A_E λ_E + A_I λ_I) U
        j = used[-1]
        for k in range(n):
            m = np.eye(t.stages) - dt * lam_e[k] * t.a_exp - dt * lam_i[k] * t.a_imp
            y = np.linalg.solve(m, np.ones(t.stages))
            # as the stability function above: two solutions of one triangular system
            s = t.stages
            bound = 2 * (s * s + s + 4) * EPS * np.linalg.cond(m) * abs(u[k]) * max(1.0, abs(y[j]))
            assert abs(value[k] - y[j] * u[k]) <= bound
    else:
        assert stepper.last_evaluated is None
    # a step that fails in its explicit part leaves no stale stage behind
    def failing(v, out):
        raise FloatingPointError("boom")

    stepper.explicit = failing
    with pytest.raises(FloatingPointError):
        stepper.step(u, dt)
    assert stepper.last_evaluated is None
