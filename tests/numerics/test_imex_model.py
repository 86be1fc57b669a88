"""The model contract (IMEXModel), the CFL rule and the stepper's returned error estimate.

Every model (mean-field SA/USA on S² and S¹, the four large-β limit models) is
checked against the mathematics of the contract: the uniform density is a
steady state with no velocity, (1 − s L)·implicit_inverse(f, s) = f, the
entropy of the uniform density is −log|S|. The CFL rule is checked on a
closed-form velocity; the embedded error estimate against the pair it comes from.
"""

import math
import pickle

import numpy as np
import pytest
from scipy.special import iv

from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.numerics.cfl import CFL
from meanfield_pde.numerics.imex_model import IMEXModel, implicit_factor
from meanfield_pde.numerics.limits import BackwardHeat, PorousMedium
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.steppers import (IMEXRungeKutta, IMEXTableau, StepControl,
                                             TABLEAUS as SCHEMES)

from helpers.bounds import EPS, quadrature_rounding, transform_rounding

SPHERE, CIRCLE = Sphere(12), Circle(8, npoints=32)

MODELS = {
    "SA sphere": lambda: MeanFieldModel.funk_hecke(SPHERE, "SA", 3.0, nu=0.1, hyperviscosity=2.0),
    "USA sphere": lambda: MeanFieldModel.funk_hecke(SPHERE, "USA", 3.0, nu=0.1),
    "SA circle": lambda: MeanFieldModel.funk_hecke(CIRCLE, "SA", 3.0, nu=0.1),
    "USA circle": lambda: MeanFieldModel.funk_hecke(CIRCLE, "USA", 3.0),
    "backward heat 0": lambda: BackwardHeat(SPHERE, 20.0, 0),
    "backward heat 1": lambda: BackwardHeat(SPHERE, 20.0, 1),
    "porous medium 0": lambda: PorousMedium(SPHERE, 20.0, 0),
    "porous medium 1": lambda: PorousMedium(CIRCLE, 20.0, 1),
}


def perturbed_uniform(g, amplitude=0.2, seed=0):
    """Coefficients of f̄ + a smooth positive perturbation (f > 0 everywhere)."""
    rng = np.random.default_rng(seed)
    coef = g.zeros_coef()
    coef[g.degree == 0] = g.analysis(np.full(np.shape(g.synthesis(coef)), 1.0 / g.area))[g.degree == 0]
    low = (g.degree >= 1) & (g.degree <= 3)
    coef[low] = amplitude / g.area * (rng.standard_normal(low.sum()) + 1j * rng.standard_normal(low.sum()))
    return g.analysis(g.synthesis(coef))  # real-field symmetry restored


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_implements_the_contract(name):
    model = MODELS[name]()
    g = model.geometry
    assert isinstance(model, IMEXModel)
    assert model.linear.shape == (g.ncoef,) and np.all(model.linear <= 0.0)
    assert model.growth_rates().shape == (g.lmax + 1,)

    # the uniform density is steady: N(f̄) = 0, L f̄ = 0, and nothing moves (speed bound 0)
    uniform = g.analysis(np.full(np.shape(g.synthesis(g.zeros_coef())), 1.0 / g.area))
    out = g.zeros_coef()
    assert model.explicit_terms(uniform, out) is out
    # the analysis of the constant leaves rounding δ in degrees l >= 1 (degree 0 moves nothing);
    # N is linear in it at the uniform state, at the explicit part's growth rates, and its
    # transforms round relative to that (the factor 2; O(δ²) is far below)
    delta = np.where(g.degree > 0, np.abs(uniform), 0.0)
    explicit_rates = np.abs(model.growth_rates()[g.degree] - model.linear)
    assert np.max(np.abs(out)) <= 2 * np.max(explicit_rates * delta)
    # L f̄ = 0 exactly in degree 0; in l >= 1 the implicit part multiplies the analysis' δ
    # (zero with shtns >= 3.7, a few ε·f̄ with 3.6.5), one rounding of each product
    assert np.max(np.abs(model.implicit_terms(uniform))) <= (1 + EPS) * np.max(np.abs(model.linear) * delta)
    # the velocity is linear in δ there: N = −div(f̄ v) gives its potential's coefficients
    # σ_l δ_lm/(f̄ λ_l) (σ_l the explicit rates), |∇Y_lm| <= √λ_l s_l, and the synthesis's rounding
    # adds transform_rounding of that sum (SA's division by Φ one ε more)
    lam, f_bar = -g.laplacian[g.degree > 0], 1.0 / g.area
    sizes = (g.parseval_weight * explicit_rates * delta * g.degree_sup_factor()[g.degree])[g.degree > 0]
    tr = transform_rounding(g.lmax, g.points.shape[-2])
    assert model.speed_bound() <= (1 + tr + EPS) * np.sum(sizes / (f_bar * np.sqrt(lam)))
    # ∫ f̄ log f̄ dσ = −log|S|
    density = g.synthesis(uniform)
    # the quadrature of f log f: f's synthesis and the n-term sum (quadrature_rounding, in
    # units of f) times |log f| + 1 (the derivative of f log f, and the products), and log (ε)
    entropy = quadrature_rounding(g, uniform) * (math.log(g.area) + 1) + 4 * EPS * math.log(g.area)
    assert model.entropy(density) == pytest.approx(-math.log(g.area), rel=0, abs=entropy)
    # the same energy (the same sum), ν times the entropy and a difference (2ε of the sizes)
    free = model.nu * -math.log(g.area) - model.energy(uniform)
    bound = model.nu * entropy + 2 * EPS * (model.nu * math.log(g.area) + abs(model.energy(uniform)))
    assert model.free_energy(uniform, density) == pytest.approx(free, rel=0, abs=bound)

    u = perturbed_uniform(g)
    n = model.transport(u)
    assert model.speed_bound() == model.max_speed > 0.0
    np.testing.assert_array_equal(model.explicit_terms(u), n)
    np.testing.assert_array_equal(model.rhs(u), n + model.linear * u)
    np.testing.assert_array_equal(model.implicit_terms(u), model.linear * u)
    # the implicit inverse solves (1 − s L) x = u
    for step in (0.0, 1e-3, 10.0):
        x = model.implicit_inverse(u, step)
        # x = u/(1 − sL) to 3ε (a product, a sum, a reciprocal, a product), and 3 more
        # operations here: 6ε of the terms' sizes |x| + |sLx| (>= |u|, L <= 0)
        residual = x - step * model.linear * x
        assert np.all(np.abs(residual - u) <= 6 * EPS * (np.abs(x) + np.abs(step * model.linear * x)))
    # the energy is the quadratic form Σ w_m (λ_l − |S|δ_l0)/(2β) |f_lm|²: E[2f] = 4 E[f],
    # bit for bit (powers of two scale every term and partial sum exactly)
    assert model.energy(2.0 * u) == 4.0 * model.energy(u)


def test_implicit_factor_closed_form():
    lin = np.array([0.0, -1.0, -4.0, -1e6])
    # the same operations (−0.5·L = 0.5·|L| exactly, + 1, reciprocal): bit for bit
    np.testing.assert_array_equal(implicit_factor(lin, 0.5), 1.0 / (1.0 + 0.5 * np.array([0.0, 1.0, 4.0, 1e6])))


def test_cfl_rule_closed_form():
    """USA on S¹ with f = 1/2π + a cos(kθ): Φ = 2π I_0(β)/2π + 2π I_k(β) a cos(kθ) (Funk–Hecke
    on the circle), V = Φ'/β, so max|V| = 2π I_k(β) a k/β and the rule gives
    dt = C π/(L max|V|) = C β/(2 L I_k(β) a k)."""
    g, beta, a, k, C = CIRCLE, 3.0, 0.05, 2, 0.5
    model = MeanFieldModel.funk_hecke(g, "USA", beta)
    model.transport(g.analysis(1.0 / (2.0 * np.pi) + a * np.cos(k * g.theta)))
    speed = 2.0 * np.pi * iv(k, beta) * a * k / beta
    # the model's multipliers against scipy's (their measured relative difference), a
    # synthesis of V (transform_rounding) and a few products, relative to the speed; and the
    # analysis of f errs by tr ∫|f| sup|e_l| per coefficient, which V carries at l λ_l/β
    from meanfield_pde.core.kernels import scaled_multipliers
    lam = 2 * np.pi * iv(g.degree, beta)
    multipliers = np.max(np.abs(scaled_multipliers(beta, g.lmax, "circle") * np.exp(beta) / lam - 1))
    tr, sup = transform_rounding(g.lmax, g.npoints), g.degree_sup_factor()
    f = 1.0 / (2.0 * np.pi) + a * np.cos(k * g.theta)
    analysis = tr * g.integrate(np.abs(f)) * np.sum(g.parseval_weight * g.degree * lam * sup ** 2) / beta
    relative = multipliers + 2 * tr + 4 * EPS + analysis / speed
    assert model.speed_bound() == pytest.approx(speed, rel=relative)
    rule = CFL(C, g)
    assert rule.active
    # C π/(L·speed) against the closed form: the speed's error and a few products each
    assert rule.max_step(model.speed_bound()) == pytest.approx(C * beta / (2 * g.lmax * iv(k, beta) * a * k),
                                                               rel=relative + 8 * EPS)
    assert rule.max_step(2.0) == C * math.pi / (g.lmax * 2.0)


@pytest.mark.parametrize("cfl, speed", [(None, 1.0), (0.0, 1.0), (0.5, 0.0), (0.5, float("nan"))])
def test_cfl_rule_off(cfl, speed):
    assert CFL(cfl, SPHERE).max_step(speed) == math.inf


@pytest.mark.parametrize("cfl", [-0.1, float("inf"), float("nan")])
def test_cfl_rule_refuses_bad_number(cfl):
    with pytest.raises(ValueError, match="time.cfl"):
        CFL(cfl, SPHERE)


def embedded_as_main(t: IMEXTableau) -> IMEXTableau:
    """The embedded solution of a pair as a scheme of its own (weights b̂ instead of b)."""
    return IMEXTableau(t.name + "-hat", t.embedded_order, t.a_exp, t.a_imp, t.b_hat_exp, t.b_hat_imp, t.c)


@pytest.mark.parametrize("name", sorted(n for n, t in SCHEMES.items() if t.embedded))
def test_step_returns_the_embedded_error(name):
    """u' = a u + b u (a explicit, b implicit): the returned error is u_new − û_new of the
    pair, it is O(dt^{p̂+1}) (p̂ the embedded order) and close to the true local error of û."""
    t = SCHEMES[name]
    a, b = np.array([0.7 + 0.3j]), np.array([-2.0])

    def explicit(u, out):
        np.multiply(a, u, out=out)
        return out

    full, hat = IMEXRungeKutta(t, explicit, b), IMEXRungeKutta(embedded_as_main(t), explicit, b)
    u0 = np.array([1.0 + 0.5j])
    errors, mismatch = [], []
    for dt in (0.04, 0.02, 0.01):
        new, error = full.step(u0, dt)
        hat_new, none = hat.step(u0, dt)
        assert none is None and error.shape == u0.shape
        # the same stages k_j: u + dt Σ b_j k_j, u + dt Σ b̂_j k_j and dt Σ (b_j − b̂_j) k_j each
        # round by (s + 2)ε of their terms' sizes, |u0| and dt (|a| + |b|) Σ |weights| |U_j|
        # with |U_j| <= |u0| e^{(|a| + |b|) dt}
        s, rate = t.stages, abs(a[0]) + abs(b[0])
        weights = np.abs(t.b_exp) + np.abs(t.b_imp) + np.abs(t.b_hat_exp) + np.abs(t.b_hat_imp)
        size = abs(u0[0]) * (1 + dt * rate * weights.sum() * np.exp(rate * dt))
        np.testing.assert_allclose(error, new - hat_new, rtol=0, atol=3 * (s + 2) * EPS * size)
        exact = u0 * np.exp((a + b) * dt)
        # the estimate approaches û's true local error, to relative O(dt) (u_new's is O(dt^{p+1}))
        mismatch.append(abs(error[0] / (exact - hat_new)[0] - 1.0))
        errors.append(abs(error[0]))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    np.testing.assert_allclose(orders, t.embedded_order + 1, atol=0.1)
    assert mismatch[0] < 0.3 and all(m1 < 0.6 * m0 for m0, m1 in zip(mismatch, mismatch[1:])), mismatch


def test_step_control_uses_the_returned_error():
    t = SCHEMES["ARK324"]
    model = MODELS["USA sphere"]()
    stepper = IMEXRungeKutta(t, model.transport, model.linear)
    control = StepControl(stepper, SPHERE, rtol=1e-6)
    u = perturbed_uniform(SPHERE)
    control.start(u)
    new, ratio = control.attempt(u, 0.05)
    expected_new, error = stepper.step(u, 0.05)
    np.testing.assert_array_equal(new, expected_new)
    assert ratio == control.error_ratio(u, error) > 0.0


@pytest.mark.parametrize("name", ["USA sphere", "porous medium 1"])
def test_stepper_for_model_uses_the_contract(name):
    """A stepper built from a model advances u' = N(u) + L u: one step of size dt from u agrees
    with the explicit terms and the implicit part to first order (u_new − u = dt (N + L u) + O(dt²))."""
    model = MODELS[name]()
    stepper = IMEXRungeKutta.for_model(SCHEMES["ARK324"], model)
    np.testing.assert_array_equal(stepper.linear, model.linear)
    u = perturbed_uniform(model.geometry)
    rhs = model.rhs(u)
    slopes = [(stepper.step(u, dt)[0] - u) / dt for dt in (1e-4, 5e-5)]
    dev = [np.max(np.abs(s - rhs)) for s in slopes]
    assert dev[0] < 1e-2 * np.max(np.abs(rhs)) and dev[1] == pytest.approx(dev[0] / 2, rel=0.05)


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.parametrize("manifold", ["sphere", "circle"])
def test_geometry_and_model_pickle_by_parameters_with_the_same_rhs(manifold):
    from meanfield_pde.core.geometry import make_geometry
    from meanfield_pde.numerics.models import MeanFieldModel
    g = make_geometry(manifold, 12, 1)
    model = MeanFieldModel.funk_hecke(g, "SA", 4.0, nu=0.1, hyperviscosity=0.5, hyperviscosity_order=3)
    back = pickle.loads(pickle.dumps(model))
    rng = np.random.default_rng(0)
    coef = g.zeros_coef()
    coef[0] = 1 / np.sqrt(g.area)
    coef[1:] = 1e-3 * (rng.standard_normal(g.ncoef - 1) + 1j * rng.standard_normal(g.ncoef - 1))
    coef[g.order == 0] = coef[g.order == 0].real
    assert type(back.geometry) is type(g) and back.geometry.lmax == 12
    np.testing.assert_array_equal(back.rhs(coef), model.rhs(coef))
    np.testing.assert_array_equal(back.linear, model.linear)
