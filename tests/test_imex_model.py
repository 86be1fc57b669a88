"""The model contract (IMEXModel), the CFL rule and the stepper's returned error estimate.

Every model (mean-field SA/USA on S² and S¹, the four large-β limit models) is
checked against the mathematics of the contract: the uniform density is a
steady state with no velocity, (1 − s L)·implicit_inverse(f, s) = f, the
entropy of the uniform density is −log|S|. The CFL rule is checked on a
closed-form velocity; the embedded error estimate against the pair it comes from.
"""

import math

import numpy as np
import pytest
from scipy.special import iv

from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.numerics.cfl import CFL
from meanfield_pde.numerics.imex_model import IMEXModel, implicit_factor
from meanfield_pde.numerics.limits import BackwardHeat, PorousMedium
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.steppers import TABLEAUS as SCHEMES, IMEXRungeKutta, IMEXTableau, StepControl

SPHERE, CIRCLE = Sphere(12), Circle(8, npoints=32)

MODELS = {
    "SA sphere": lambda: MeanFieldModel(SPHERE, "SA", 3.0, nu=0.1, hyperviscosity=2.0),
    "USA sphere": lambda: MeanFieldModel(SPHERE, "USA", 3.0, nu=0.1),
    "SA circle": lambda: MeanFieldModel(CIRCLE, "SA", 3.0, nu=0.1),
    "USA circle": lambda: MeanFieldModel(CIRCLE, "USA", 3.0),
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
    assert np.max(np.abs(out)) < 1e-12 * np.max(np.abs(uniform))
    assert np.max(np.abs(model.implicit_terms(uniform))) == 0.0
    assert model.speed_bound() < 1e-10
    # ∫ f̄ log f̄ dσ = −log|S|
    density = g.synthesis(uniform)
    assert model.entropy(density) == pytest.approx(-math.log(g.area), rel=1e-12)
    assert model.free_energy(uniform, density) == pytest.approx(
        model.nu * -math.log(g.area) - model.energy(uniform), rel=1e-12, abs=1e-14)

    u = perturbed_uniform(g)
    n = model.transport(u)
    assert model.speed_bound() == model.max_speed > 0.0
    np.testing.assert_array_equal(model.explicit_terms(u), n)
    np.testing.assert_array_equal(model.rhs(u), n + model.linear * u)
    np.testing.assert_array_equal(model.implicit_terms(u), model.linear * u)
    # the implicit inverse solves (1 − s L) x = u
    for step in (0.0, 1e-3, 10.0):
        x = model.implicit_inverse(u, step)
        np.testing.assert_allclose(x - step * model.linear * x, u, rtol=1e-13, atol=1e-15)
    # the energy is the quadratic form Σ w_m (λ_l − |S|δ_l0)/(2β) |f_lm|²: E[2f] = 4 E[f]
    assert model.energy(2.0 * u) == pytest.approx(4.0 * model.energy(u), rel=1e-14)


def test_implicit_factor_closed_form():
    lin = np.array([0.0, -1.0, -4.0, -1e6])
    np.testing.assert_allclose(implicit_factor(lin, 0.5), 1.0 / (1.0 + 0.5 * np.array([0.0, 1.0, 4.0, 1e6])),
                               rtol=1e-15)


def test_cfl_rule_closed_form():
    """USA on S¹ with f = 1/2π + a cos(kθ): Φ = 2π I_0(β)/2π + 2π I_k(β) a cos(kθ) (Funk–Hecke
    on the circle), V = Φ'/β, so max|V| = 2π I_k(β) a k/β and the rule gives
    dt = C π/(L max|V|) = C β/(2 L I_k(β) a k)."""
    g, beta, a, k, C = CIRCLE, 3.0, 0.05, 2, 0.5
    model = MeanFieldModel(g, "USA", beta)
    model.transport(g.analysis(1.0 / (2.0 * np.pi) + a * np.cos(k * g.theta)))
    speed = 2.0 * np.pi * iv(k, beta) * a * k / beta
    assert model.speed_bound() == pytest.approx(speed, rel=1e-12)
    rule = CFL(C, g)
    assert rule.active
    assert rule.max_step(model.speed_bound()) == pytest.approx(C * beta / (2 * g.lmax * iv(k, beta) * a * k),
                                                               rel=1e-12)
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
        # new − û cancels to a few ulp of |u| ~ 1
        np.testing.assert_allclose(error, new - hat_new, rtol=1e-9, atol=1e-14)
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
