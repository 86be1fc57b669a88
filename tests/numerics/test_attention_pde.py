"""The mean-field PDE on S² with general attention heads (MeanFieldModel with AttentionKernel or
ScheduledKernel): the reductions to today's zonal model (A = cI at β' = cβ; V = vI in time vt
with noise ν/v), the energy E_A of V = A symmetric (non-decreasing without noise, the free
energy non-increasing for noisy USA), exact mass conservation, steps that land on the layers'
breaks, the second order of a ramp cut into constant pieces, a sharp cluster following the
power method of V, the Rosenbrock-W path, and the run files of [attention] cases.

Tolerances come from error bounds written beside them. A run's difference from a run of another
right-hand side is bounded by the difference ρ of the two right-hand sides on its states carried
through the steps (``run_bound``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield_pde.core.attention import Head, HeadSchedule, Layer
from meanfield_pde.core.attention_kernel import AttentionKernel, ScheduledKernel
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.numerics.initial import perturbed_uniform, von_mises_fisher
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.observers import Observer
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import TABLEAUS, StepControl, make_stepper

from helpers.bounds import EPS, fitted_slope


SCHEME = "ARK436"
# a symmetric interaction matrix (V = A: a gradient flow) and a non-symmetric value matrix
SYMMETRIC = np.array([[1.2, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 0.6]])
VALUE = np.array([[0.2, -1.0, 0.3], [1.0, 0.1, 0.0], [0.2, 0.4, -0.5]])
KEY = np.array([[1.0, 0.2, 0.0], [0.0, 0.7, 0.3], [0.1, 0.0, 0.5]])


class Snapshots(Observer):
    """The states the time loop shows: every accepted step's and every snapshot's."""

    def __init__(self):
        self.steps, self.times, self.states = [], [], []

    def step(self, t, u):
        self.steps.append((t, u.copy()))

    def snapshot(self, t, u):
        self.times.append(t)
        self.states.append(u.copy())


def run(model, u0, t_end, dt, *, adaptive=False, rtol=1e-8, every=None, scheme=SCHEME, t0=0.0):
    """integrate() with the observers above; fixed steps unless ``adaptive``."""
    control = StepControl(make_stepper(scheme, model), model.geometry, rtol=rtol, adaptive=adaptive)
    seen = Snapshots()
    result = integrate(model, control, u0, t_end, every=every or t_end, dt=dt, cfl=1.0 if adaptive else None,
                       observers=[seen], t0=t0)
    assert result.completed, result.status
    return result, seen


def run_bound(rho: float, steps: int, dt: float, growth: float) -> float:
    """Bound of the difference of two fixed-step runs of the same scheme whose right-hand sides
    differ by at most ``rho`` (max-norm of the coefficients) on the run's states.

    One step: δ_{n+1} = δ_n + h Σ_i b_i [(F_A − F_B)(U_i) + F_B(U_i^A) − F_B(U_i^B)]; near the
    uniform density (the runs below stay in the linear regime, amplitude <= 0.05 of f̄) F_B's
    Jacobian is diagonal with the rates σ_l of linear theory (the implicit part only damps), so
    δ_{n+1} <= (1 + h σ⁺) δ_n + h Σ|b_i| ρ and δ_N <= Σ|b_i| ρ N h e^{σ⁺ N h} (discrete
    Gronwall), σ⁺ = ``growth``, the largest rate (>= 0). The rounding of the two runs' own
    arithmetic is the same operations on the same numbers wherever F agrees: it is in ρ."""
    weights = float(np.sum(np.abs(TABLEAUS[SCHEME].b_exp)))
    time = steps * dt
    return weights * rho * time * math.exp(max(growth, 0.0) * time)


def rhs_difference(a: MeanFieldModel, b: MeanFieldModel, states, scale: float = 1.0) -> float:
    """max over the states of ‖F_a(u) − scale·F_b(u)‖∞ (the transports: the implicit parts are
    the same diagonal, applied to the same u, exactly where scale = 1; see the callers)."""
    return max(float(np.max(np.abs(a.transport(u) - scale * b.transport(u)))) for u in states)


@pytest.fixture(scope="module")
def sphere():
    return Sphere(15, threads=1)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_scaled_identity_is_todays_model_over_a_run(sphere, kind):
    """A = cI, V = I, one head at β: today's SA/USA at β' = cβ over a run, to 1e-12 (the issue's
    acceptance), within the run bound of the two right-hand sides' difference on the run's
    states (each kernel agrees with the other to the rounding of its transforms)."""
    c, beta, nu = 1.5, 2.0, 0.05
    u0 = perturbed_uniform(sphere, 0.01, 1, 6, seed=3)
    general = MeanFieldModel(AttentionKernel(sphere, Head(beta, Q=c * np.eye(3)), kind), nu=nu)
    today = MeanFieldModel.funk_hecke(sphere, kind, c * beta, nu=nu)
    dt, t_end = 0.02, 1.0
    a, seen = run(general, u0, t_end, dt)
    b, _ = run(today, u0, t_end, dt)
    rho = rhs_difference(general, today, [u0] + [u for _, u in seen.steps])
    bound = run_bound(rho, b.steps, dt, float(np.max(today.growth_rates())))
    assert bound <= 1e-12  # the acceptance line, from the bound itself
    assert np.max(np.abs(a.coef - b.coef)) <= bound
    assert a.steps == b.steps


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_value_scaling_is_a_change_of_time(sphere, kind):
    """V = vI (v > 0): v·(today's transport), so f(t) is today's model at time vt with noise ν/v.
    Fixed steps h and vh take the same stages (vh·F_today = h·F_general), up to the rounding of
    the scaled noise and step, and of the two kernels: the run bound of their difference."""
    v, beta, nu = 2.5, 2.0, 0.05
    u0 = perturbed_uniform(sphere, 0.01, 1, 6, seed=4)
    general = MeanFieldModel(AttentionKernel(sphere, Head(beta, V=v * np.eye(3), dimension=3), kind), nu=nu)
    today = MeanFieldModel.funk_hecke(sphere, kind, beta, nu=nu / v)
    dt, t_end = 0.02, 0.6
    a, seen = run(general, u0, t_end, dt)
    b, _ = run(today, u0, v * t_end, v * dt)
    assert a.steps == b.steps
    rho = rhs_difference(general, today, [u0] + [u for _, u in seen.steps], scale=v)
    # the implicit factors 1/(1 − h a ν Δ) and 1/(1 − vh a (ν/v) Δ): each product rounds in 3
    # operations (≤ 3ε relative), on the state's coefficients, once per stage (≤ 6 stages)
    implicit = 6 * 3 * EPS * max(float(np.max(np.abs(u))) for _, u in seen.steps)
    growth = v * float(np.max(today.growth_rates()))
    assert np.max(np.abs(a.coef - b.coef)) <= run_bound(rho + implicit / dt, a.steps, dt, growth)


def energy_rounding(model: MeanFieldModel, coef: np.ndarray) -> float:
    """Bound of the rounding of AttentionKernel.energy: (1/2β)(∫ e^ρ Q f dσ − M²), Q the operator's
    output, pointwise within ε·e^{loss}·(P+1) of itself (HeadOperator.loss), the quadrature a sum
    of npoints positive terms (npoints·ε), the subtraction ε(∫ + M²)."""
    op = model.kernel.operators[0]
    g = model.geometry
    total = 2 * op.head.beta * model.energy(coef) + g.mass(coef) ** 2
    relative = EPS * math.exp(op.loss) * (op.degree + 1) + g.nlat * g.nphi * EPS
    return (relative * total + EPS * (total + g.mass(coef) ** 2)) / (2 * op.head.beta)


def test_energy_never_decreases_for_symmetric_value(sphere):
    """One head with V = A symmetric: SA without noise is a gradient flow of E_A, which never
    decreases, snapshot to snapshot, beyond the rounding of two energies."""
    model = MeanFieldModel(AttentionKernel(sphere, Head(3.0, K=SYMMETRIC, V=SYMMETRIC), "SA"))
    assert model.energy_definition is not None and model.no_energy_reason is None
    u0 = perturbed_uniform(sphere, 0.05, 1, 6, seed=4)
    _, seen = run(model, u0, 2.0, 0.01, adaptive=True, every=0.1)
    energy = np.array([model.energy(u) for u in seen.states])
    slack = np.array([energy_rounding(model, u) for u in seen.states])
    assert np.all(np.diff(energy) >= -(slack[1:] + slack[:-1]))
    assert energy[-1] > 2 * energy[0]  # it does move: the flow concentrates the density


def test_free_energy_never_increases_for_noisy_usa(sphere):
    """Noisy USA with V = A symmetric: the Wasserstein gradient flow of ν∫f log f − E_A, which
    never increases, beyond the rounding of the energy and of the entropy (a Gauss quadrature of
    npoints terms f log f: npoints·ε·∫|f log f| plus the logarithms' rounding ε·∫ f)."""
    nu = 0.1
    model = MeanFieldModel(AttentionKernel(sphere, Head(2.0, K=SYMMETRIC, V=SYMMETRIC), "USA"), nu=nu)
    u0 = perturbed_uniform(sphere, 0.05, 1, 6, seed=4)
    _, seen = run(model, u0, 1.0, 0.01, adaptive=True, every=0.1)
    g = sphere
    free = []
    slack = []
    for u in seen.states:
        f = g.synthesis(u)
        free.append(model.free_energy(u, f))
        flogf = g.integrate(np.abs(f * np.log(np.abs(f))))
        slack.append(energy_rounding(model, u) + nu * EPS * (g.nlat * g.nphi * flogf + g.mass(u)))
    free, slack = np.array(free), np.array(slack)
    assert np.all(np.diff(free) <= slack[1:] + slack[:-1])
    assert free[-1] < free[0]


def test_mass_is_conserved_exactly_and_the_non_gradient_flow_has_no_energy(sphere):
    """Mass: the transport is a divergence, whose degree-0 coefficient is −0·S_00 = 0 exactly, and
    the implicit part's degree-0 eigenvalue is 0 (factor 1/(1 − 0) = 1): the degree-0
    coefficient is never changed by a step, so every state's mass equals the first's exactly
    (within 1e-12 by far). General heads without V = A symmetric: no energy (None) and a reason."""
    model = MeanFieldModel(AttentionKernel(sphere, (Head(2.0, K=KEY, V=VALUE), Head(0.5, dimension=3)), "SA"),
                           nu=0.02)
    assert model.energy(sphere.zeros_coef()) is None and model.free_energy(sphere.zeros_coef(), None) is None
    assert "no energy" in model.no_energy_reason and model.growth_rates() is None
    u0 = perturbed_uniform(sphere, 0.05, 1, 6, seed=5)
    _, seen = run(model, u0, 1.0, 0.01, adaptive=True, every=0.1)
    mass = [sphere.mass(u) for u in seen.states]
    assert all(m == mass[0] for m in mass)
    assert abs(mass[0] - 1.0) <= 2 * EPS  # √(4π)·(1/√(4π)) (tests/numerics/test_conservation.py)


@pytest.mark.slow  # ~10 s: three (resp. five) runs
def test_sharp_cluster_follows_the_power_method_of_v():
    """SA, one head, no noise, from a vMF cluster at p₀ of concentration κ: a Dirac at p moves
    with ṗ = P⊥_p V p (the softmax over one point is that point), whose solution is
    p(t) = e^{tV}p₀/|e^{tV}p₀|; the cluster's mean direction follows it with an error O(1/κ)
    (its spread κ^{-1/2}, squared). Fitted over κ = 10, 20, 40: errors fall, slope in
    [−1.1, −0.75] (the O(κ⁻²) terms still bend it at κ = 10: −0.87 measured)."""
    p0 = np.array([1.0, 0.5, 0.8]) / np.linalg.norm([1.0, 0.5, 0.8])
    t_end = 0.5
    q = expm(t_end * VALUE) @ p0
    target = q / np.linalg.norm(q)
    errors = []
    kappas = (10.0, 20.0, 40.0)
    for kappa, lmax in zip(kappas, (31, 41, 55)):  # vMF coefficients fall like e^{−l²/2κ}
        g = Sphere(lmax, threads=1)
        model = MeanFieldModel(AttentionKernel(g, Head(1.0, K=KEY, V=VALUE), "SA"))
        result, _ = run(model, von_mises_fisher(g, [p0], [kappa]), t_end, 0.01, adaptive=True, rtol=1e-9)
        m = g.first_moment(g.synthesis(result.coef))
        errors.append(float(np.linalg.norm(m / np.linalg.norm(m) - target)))
    slope = fitted_slope(kappas, errors)
    assert np.all(np.diff(errors) < 0) and -1.1 <= slope <= -0.75, (slope, errors)


def two_layers():
    """A layer of one non-symmetric head, then (t >= 0.5) two heads."""
    return HeadSchedule([Layer(0.0, (Head(2.0, K=KEY, V=VALUE),)),
                         Layer(0.5, (Head(1.0, dimension=3), Head(3.0, K=SYMMETRIC, V=SYMMETRIC)))])


def test_steps_land_on_each_layer_and_the_run_is_its_layers_in_turn(sphere):
    """A change of heads at t = 0.5 (not a multiple of dt = 0.03): a step ends there exactly, and
    the run is, bit for bit, the first layer's model to 0.5 and then the second's from there
    (no step uses the wrong heads, nothing computed with the old heads survives the break)."""
    schedule = two_layers()
    kernel = ScheduledKernel(sphere, schedule, "SA")
    model = MeanFieldModel(kernel, nu=0.01)
    assert model.breaks == (0.5,)
    u0 = perturbed_uniform(sphere, 0.05, 1, 6, seed=6)
    whole, seen = run(model, u0, 1.0, 0.03)
    assert 0.5 in [t for t, _ in seen.steps]
    first = MeanFieldModel(AttentionKernel(sphere, schedule.layers[0].heads, "SA"), nu=0.01)
    second = MeanFieldModel(AttentionKernel(sphere, schedule.layers[1].heads, "SA"), nu=0.01)
    half, _ = run(first, u0, 0.5, 0.03)
    rest, _ = run(second, half.coef, 1.0, 0.03, t0=0.5)
    np.testing.assert_array_equal(whole.coef, rest.coef)
    # adaptive steps land there too, and from a start inside the second layer the model takes it
    _, seen = run(model, u0, 1.0, 0.03, adaptive=True)
    assert 0.5 in [t for t, _ in seen.steps]
    resumed, _ = run(model, half.coef, 1.0, 0.03, t0=0.5)
    np.testing.assert_array_equal(resumed.coef, rest.coef)


@pytest.mark.slow  # ~10 s: three (resp. five) runs
def test_a_ramp_in_constant_pieces_is_second_order():
    """β ramped linearly from 1 to 4 over t ∈ [0, 1] in constant pieces (the heads at each piece's
    midpoint): the midpoint rule, error O(h²) in the piece width h (ScheduledKernel). The state
    at t = 1.2 against 32 pieces: fitted slope of the error against the number of pieces K = 2,
    4, 8 in [−2.2, −1.8] (measured −2.0; fixed steps of 0.01, order 4: their error, ~1e-10, is
    far below the pieces')."""
    g = Sphere(11, threads=1)
    schedule = HeadSchedule([Layer(0.0, (Head(1.0, K=SYMMETRIC, V=VALUE),), beta_end=(4.0,), ramp_end=1.0)])
    u0 = perturbed_uniform(g, 0.2, 1, 6, seed=3)

    def final(pieces):
        kernel = ScheduledKernel(g, schedule, "SA", ramp_step=3.0 / pieces)
        assert len(kernel.pieces) == pieces + 1  # and one after the ramp
        return run(MeanFieldModel(kernel, nu=0.02), u0, 1.2, 0.01)[0].coef

    reference = final(32)
    counts = (2, 4, 8)
    errors = [float(np.max(np.abs(final(k) - reference))) for k in counts]
    # the reference's own error (1/32² of the constant) biases each difference by (K/32)²
    slope = fitted_slope(counts, errors)
    assert -2.2 <= slope <= -1.8, (slope, errors)


def test_rosenbrock_runs_general_heads_with_the_implicit_part_as_its_diagonal(sphere):
    """General heads have no growth rates: the Rosenbrock-W preconditioner's diagonal is the
    implicit part (noise), which changes the cost of its solves, not the step. A = cI, V = I:
    fixed ROS34PW2 steps of the general kernel and of today's (whose diagonal has the growth
    rates) solve the same stages, each to the Krylov tolerance KRYLOV_RTOL relative (the
    preconditioned residual): they differ by at most that times the stage solutions
    v_i = Σ_j γ_ij k_j, |v_i| <= max_i Σ_j |γ_ij| times the largest step change (k_j ≈ h F),
    summed with the weights |m_i| over the stages and the steps, for both runs."""
    from meanfield_pde.numerics.steppers.rosenbrock import KRYLOV_RTOL, ROSENBROCK
    nu = 0.05
    general = MeanFieldModel(AttentionKernel(sphere, Head(2.0, Q=1.5 * np.eye(3)), "SA"), nu=nu)
    np.testing.assert_array_equal(general.jacobian_diagonal(), general.linear)
    today = MeanFieldModel.funk_hecke(sphere, "SA", 3.0, nu=nu)
    u0 = perturbed_uniform(sphere, 0.01, 1, 6, seed=3)
    a, seen = run(general, u0, 1.0, 0.05, scheme="ROS34PW2")
    b, _ = run(today, u0, 1.0, 0.05, scheme="ROS34PW2")
    states = [u0] + [u for _, u in seen.steps]
    change = max(float(np.max(np.abs(y - x))) for x, y in zip(states[:-1], states[1:]))
    tableau = ROSENBROCK["ROS34PW2"]
    m = tableau.transformed()[2]
    stage = float(np.max(np.sum(np.abs(tableau.gamma), axis=1))) * change
    bound = 2 * a.steps * float(np.sum(np.abs(m))) * KRYLOV_RTOL * stage
    assert 0 < np.max(np.abs(a.coef - b.coef)) <= bound
