"""The linearly implicit Rosenbrock-W scheme ROS34PW2 (Rang & Angermann 2005), the "auto"
switch, the CFL extent from the explicit stability region, and the rejection-rate stop.

Checked against mathematics: the Rosenbrock order conditions (Hairer & Wanner II,
§IV.7, Table 7.1), the observed order 3 on a smooth run against a tiny-step
reference, the stability function R(z) of the tableau (A- and L-stability) and
that one step on u' = σu multiplies by R(hσ), exact mass conservation, the
monotone energy of the noise-free USA gradient flow, the uniform stationary state
held at any step, and the closed-form imaginary stability intervals of RK3 (√3)
and RK4 (2√2).
"""

import math

import numpy as np
import pytest

from meanfield_pde import load_case
from meanfield_pde.core.errors import NumericalFault
from meanfield_pde.numerics.observers import Observer
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import ROSENBROCK, RosenbrockW, StepControl, make_stepper
from meanfield_pde.numerics.steppers.stability import _SLACK, disc_radius, imaginary_interval, stability_function
from meanfield_pde.runs.runner import build

from helpers.bounds import EPS, fitted_slope
from helpers.cases import make_config

TAB = ROSENBROCK["ROS34PW2"]


def test_ros34pw2_order_conditions():
    """Hairer & Wanner II, §IV.7, Table 7.1 with β_ij = α_ij + γ_ij (j < i), β'_i = Σ_j β_ij,
    α_i = Σ_j α_ij: order 3 for the solution, order 2 (not 3) for the embedded weights."""
    a, g, gd = TAB.alpha, TAB.gamma, TAB.gamma_diag
    beta = a + np.tril(g, -1)

    def terms(b, beta, a):
        bp, ai = beta.sum(axis=1), a.sum(axis=1)
        return np.array([b.sum(), b @ bp, b @ ai**2, b @ beta @ bp])

    def residuals(b):
        return terms(b, beta, a) - [1.0, 0.5 - gd, 1.0 / 3.0, 1.0 / 6.0 - gd + gd * gd]

    # Round-off: the coefficients are decimals rounded to double (ε relative each); a condition
    # is a sum of at most s³ products of at most 3 of them (row sums included), so its residual
    # is bounded by (s³ + 4)ε times the condition on the absolute values plus the constant's
    # terms (sizes)
    roundoff = (TAB.stages ** 3 + 4) * EPS

    def sizes(b):
        return terms(np.abs(b), np.abs(beta), np.abs(a)) + [1.0, 0.5 + gd, 1.0 / 3.0, 1.0 / 6.0 + gd + gd * gd]
    assert np.all(np.abs(residuals(TAB.b)) <= roundoff * sizes(TAB.b))
    emb = residuals(TAB.b_hat)
    assert np.all(np.abs(emb[:2]) <= roundoff * sizes(TAB.b_hat)[:2]) and np.max(np.abs(emb[2:])) > 1e-3



def stability_rounding(a: np.ndarray, b: np.ndarray, z: complex) -> float:
    """Bound on the rounding of R(z) = 1 + z bᵀx, (I − zA)x = 𝟙 solved by LU: (s² + s + 4)ε times
    the system's condition, in units of its terms' sizes 1 + |z||b|ᵀ|x|."""
    s = len(b)
    m = np.eye(s) - z * a
    x = np.linalg.solve(m, np.ones(s))
    return (s * s + s + 4) * EPS * np.linalg.cond(m) * (1 + abs(z) * np.abs(b) @ np.abs(x))

def test_ros34pw2_is_l_stable():
    """A-stable: |R(z)| <= 1 on the imaginary axis (and so, R analytic there, in the left half
    plane by the maximum principle); L-stable: R(−∞) = 0; R(z) = e^z + O(z⁴) near 0."""
    y = np.concatenate([np.linspace(0, 10, 401), np.logspace(1, 8, 200)])
    s, B = TAB.stages, TAB.alpha + TAB.gamma
    bound = [stability_rounding(B, TAB.b, z) for z in 1j * y]
    assert np.all(np.abs(TAB.stability_function(1j * y)) <= 1.0 + np.array(bound))
    x = -np.logspace(-2, 10, 300)
    assert np.max(np.abs(TAB.stability_function(x))) <= 1.0
    # R(z) = 1 − bᵀB⁻¹𝟙 − bᵀB⁻²𝟙/z − ... (z bᵀ(I − zB)⁻¹𝟙 expanded in 1/z): R(∞) = 0 up to the
    # tableau's decimals, then c₁/z; twice |c₁/z| covers the rest (‖B⁻¹‖/|z| ~ 1e-11), plus rounding
    z = -1e12
    r_inf = 1.0 - TAB.b @ np.linalg.solve(B, np.ones(s))
    c1 = TAB.b @ np.linalg.solve(B, np.linalg.solve(B, np.ones(s)))
    assert abs(TAB.stability_function(np.array(z))) <= abs(r_inf) + 2 * abs(c1 / z) + stability_rounding(B, TAB.b, z)
    z = np.array([1e-2, 2e-2])
    err = np.abs(TAB.stability_function(z) - np.exp(z))
    assert 10 < err[1] / err[0] < 20  # ~ 2⁴: local error O(z⁴), order 3


class Diagonal:
    """u' = σ u with σ < 0 per coefficient: the linearised problem, in the model contract."""

    class Geometry:
        def __init__(self, n):
            self.degree = np.arange(n)

    def __init__(self, sigma):
        self.linear = np.asarray(sigma, float)
        self.geometry = self.Geometry(self.linear.size)

    def transport(self, u, out=None):
        return np.zeros_like(u)

    def jacobian_diagonal(self):
        return np.minimum(self.linear, 0.0)


@pytest.mark.parametrize("z", [-1e-3, -0.5, -3.0, -50.0, -1e4, -1e8])
def test_one_step_on_the_linear_problem_multiplies_by_r(z):
    sigma = np.array([0.0, -1.0, -10.0])
    h = z / sigma[2]
    stepper = RosenbrockW(TAB, Diagonal(sigma), krylov_rtol=1e-7)
    u = np.array([1.0, 1.0 + 0.5j, 2.0 - 1j])
    new, _ = stepper.step(u, h)
    expect = u * TAB.stability_function(h * sigma)
    # W is the finite-difference Jacobian (σ to ~1e-8 relative) and the solves stop at 1e-7
    np.testing.assert_allclose(new, expect, rtol=1e-6, atol=1e-7 * np.abs(u).max())
    assert abs(new[2]) <= abs(u[2])  # a decaying mode never grows, whatever h


SMOOTH = dict(model={"kind": "USA", "beta": 2.0, "nu": 0.05}, domain={"lmax": 15},
              initial={"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8]],
                       "concentrations": [3.0, 2.0]})


def run(scheme, dt, t_end, adaptive=False, rtol=1e-6, observers=(), **sections):
    cfg = make_config(**{**SMOOTH, **sections},
                      time={"t_end": t_end, "dt": dt, "scheme": scheme, "adaptive": adaptive,
                            "rtol": rtol, "atol": 1e-14},
                      output={"every": t_end})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, t_end, every=t_end, dt=dt,
                    cfl=cfg.time.cfl, observers=list(observers))
    assert res.completed, res.status
    return sim, res


def test_observed_order_three():
    """Fixed steps dt = 0.05..0.00625 to t = 0.5 against ARS443 at dt = 2.5e-4 (error ~1e-12)."""
    t_end = 0.5
    sim, ref = run("ARS443", 2.5e-4, t_end)
    g = sim.geometry
    dts = np.array([0.05, 0.025, 0.0125, 0.00625])
    errors = []
    for dt in dts:
        _, res = run("ROS34PW2", dt, t_end)
        diff = res.coef - ref.coef
        errors.append(math.sqrt(g.inner(diff, diff)))
    slope = fitted_slope(dts, errors)
    assert abs(slope - 3.0) <= 0.2, (slope, errors)


class Energies(Observer):
    def __init__(self, model):
        self.model, self.values = model, []

    def step(self, t, u):
        self.values.append((self.model.energy(u), u[0]))


@pytest.mark.slow
def test_mass_conserved_and_noise_free_usa_energy_monotone():
    """Noise-free USA is the gradient flow of E_β (arXiv:2312.10794): E_β never decreases;
    degree 0 (the mass) has a zero right-hand side and stays exactly."""
    cfg = make_config(**{**SMOOTH, "model": {"kind": "USA", "beta": 1.0, "nu": 0.0}},
                      time={"t_end": 3.0, "dt": 0.05, "scheme": "ROS34PW2"}, output={"every": 3.0})
    sim = build(cfg)
    obs = Energies(sim.model)
    res = integrate(sim.model, sim.control, sim.initial, 3.0, every=3.0, dt=0.05, observers=[obs])
    assert res.completed, res.status
    energies = np.array([e for e, _ in obs.values])
    mass = np.array([m for _, m in obs.values])
    assert res.steps >= 5
    # E = Σ m_lm |f_lm|² with m_lm >= 0: each an ncoef-term sum of positive terms,
    # (ncoef + 4)ε·E; two of them in a difference
    roundoff = 2 * (sim.geometry.ncoef + 4) * EPS
    assert np.all(np.diff(energies) >= -roundoff * np.abs(energies[1:])), np.diff(energies).min()
    assert energies[-1] > energies[0]
    # −div multiplies degree 0 by l(l + 1) = 0: every stage's l = 0 part is 0.0, so mass is
    # added nothing, bit for bit
    np.testing.assert_array_equal(mass, sim.initial[0])


def test_uniform_state_is_held_and_steps_grow():
    """The uniform density is stationary: any step keeps it, and the adaptive step grows by the
    controller's largest factor (5) each step: t = 1e4 from dt = 0.01 in <= 15 steps."""
    cfg = make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.1}, domain={"lmax": 15},
                      initial={"type": "spherical_harmonic", "degree": 2, "amplitude": 1e-3},
                      time={"t_end": 1e4, "scheme": "ROS34PW2"}, output={"every": 1e4})
    sim = build(cfg)
    u = np.zeros_like(sim.initial)
    u[0] = sim.initial[0]
    new, err = sim.control.stepper.step(u, 1e3)
    # Φ of a constant density has degree 0 only: its gradient (a factor l(l + 1) = 0), the
    # velocity and the flux are 0.0 on the grid, and so every stage: the state bit for bit
    np.testing.assert_array_equal(new, u)
    res = integrate(sim.model, sim.control, u, 1e4, every=1e4, dt=0.01)
    assert res.completed and res.steps <= 15, (res.steps, res.status)
    np.testing.assert_array_equal(res.coef, u)


@pytest.mark.parametrize("a, b, interval", [
    (np.array([[0, 0, 0], [0.5, 0, 0], [-1, 2, 0]]), np.array([1, 4, 1]) / 6, math.sqrt(3)),
    (np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]]),
     np.array([1, 2, 2, 1]) / 6, 2 * math.sqrt(2)),
])
def test_imaginary_stability_interval_closed_forms(a, b, interval):
    """RK3: R = 1 + z + z²/2 + z³/6, |R(iy)|² = 1 − y⁴/12 + y⁶/36: r = √3; RK4: r = 2√2
    (Hairer & Wanner II, §IV.2)."""
    # bisection to ~1e-18 on |R(iy)| <= 1 + _SLACK: r moves by the slack over d|R|/dy there
    up, down = (abs(stability_function(a, b, 1j * (interval + h))) for h in (1e-6, -1e-6))
    slack = _SLACK + stability_rounding(a, b, 1j * interval)
    assert imaginary_interval(a, b) == pytest.approx(interval, rel=0, abs=slack / ((up - down) / 2e-6))


def test_forward_euler_disc_radius_is_one():
    """R = 1 + z: the region is exactly the disc |z + 1| <= 1."""
    # at θ = π, |R| = 2ρ − 1: the slack (and R's rounding) over its slope 2
    slack = _SLACK + stability_rounding(np.zeros((1, 1)), np.ones(1), -2.0)
    assert disc_radius(np.zeros((1, 1)), np.ones(1)) == pytest.approx(1.0, rel=0, abs=slack / 2)
    assert imaginary_interval(np.zeros((1, 1)), np.ones(1)) < 1e-5  # |1 + iy|² = 1 + y² > 1


def test_scheme_names_and_auto_build():
    for name in ("ROS34PW2", "auto", "ARK324"):
        sim = build(make_config(**SMOOTH, time={"t_end": 1.0, "scheme": name}))
        assert isinstance(sim.control, StepControl)
    with pytest.raises(ValueError, match="time.scheme"):
        make_stepper("ROS3", sim.model)


@pytest.mark.slow
def test_auto_switches_to_rosenbrock_on_the_stationary_cluster():
    """Two vMF clusters merge (t ~ 2) into one noisy cluster, stationary after t ~ 30 (USA,
    β = 1, ν = 0.05, L = 31). ARK324 stays at its CFL step there (the velocity inside the
    cluster balances the noise); "auto" detects it, switches to ROS34PW2, whose step grows to
    the time scale of the remaining relaxation: fewer than half the right-hand-side
    evaluations (Jacobian-vector products counted) to t = 200, the same final energy."""
    results = {}
    for scheme in ("ARK324", "auto"):
        cfg = load_case("vmf_two_clusters_merge", ["time.t_end=200", "domain.lmax=31",
                                                   f"time.scheme={scheme}"])
        sim = build(cfg)
        res = integrate(sim.model, sim.control, sim.initial, 200.0, every=200.0, dt=cfg.time.dt,
                        cfl=cfg.time.cfl)
        assert res.completed, res.status
        results[scheme] = (sim.control.evaluations, sim.model.energy(res.coef), sim.control.stepper)
    (work_imex, e_imex, _), (work_auto, e_auto, auto) = results["ARK324"], results["auto"]
    assert auto.switches and auto.switches[-1][1] == "ROS34PW2", auto.switches
    assert auto.current is auto.implicit
    assert work_auto < 0.5 * work_imex, (work_auto, work_imex)
    # not rounding: two time integrations (ARK324; auto's ROS34PW2 after the switch; the default step
    # control) of the relaxation to one stationary cluster, agreeing to the schemes' accuracy there
    assert e_auto == pytest.approx(e_imex, rel=1e-9)


@pytest.mark.slow
def test_the_preconditioner_changes_the_cost_not_the_solution(monkeypatch):
    """The dense low-degree block (l <= 6 here) against the diagonal alone (degree −1): the same
    adaptive run (SA, β = 5, ν = 0.05, two vMF clusters, t = 4) agrees to well within the
    time-stepping tolerance rtol = 1e-6 (the solves stop at 0.1 of the local error tolerance)."""
    import meanfield_pde.numerics.steppers.rosenbrock as rosenbrock
    finals = []
    for degree in (6, -1):
        monkeypatch.setattr(rosenbrock, "PRECONDITIONER_DEGREE", degree)
        sim, coef = _two_forming_clusters(4.0)
        finals.append(coef)
    g = sim.geometry
    dev = finals[0].copy()
    dev[0] = 0.0
    diff = finals[0] - finals[1]
    assert math.sqrt(g.inner(diff, diff)) < 1e-7 * math.sqrt(g.inner(dev, dev))


def _two_forming_clusters(t_end: float):
    """Two SA clusters forming (β = 5, ν = 0.05, L = 31), adaptive ROS34PW2 to ``t_end``:
    (simulation, final state)."""
    cfg = make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.05}, domain={"lmax": 31},
                      initial={"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8]],
                               "concentrations": [8.0, 6.0]},
                      time={"t_end": t_end, "scheme": "ROS34PW2"}, output={"every": t_end})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, t_end, every=t_end, dt=0.01)
    assert res.completed, res.status
    return sim, res.coef


@pytest.fixture(scope="module")
def clusters():
    """Two SA clusters forming at t = 2: (simulation, state)."""
    return _two_forming_clusters(2.0)


def exact_step(model, u, dt, monkeypatch):
    """A ROS34PW2 step whose solves are direct: the preconditioner's dense block spans every
    degree (M = (1/(hγ) − W)⁻¹ with W the whole finite-difference Jacobian), so ‖M r‖, at
    which the solves stop (1e-7 of ‖M b‖), is their error itself."""
    from meanfield_pde.numerics.steppers import rosenbrock
    monkeypatch.setattr(rosenbrock, "PRECONDITIONER_DEGREE", model.geometry.lmax)
    stepper = RosenbrockW(TAB, model)
    stepper._stale = True  # build the block before the step
    new = stepper.step(u, dt)[0]
    monkeypatch.undo()
    return new


@pytest.mark.slow
@pytest.mark.parametrize("dt", [0.02, 0.1])
def test_stage_solves_stop_at_a_fraction_of_the_error_tolerance(clusters, dt, monkeypatch):
    """Inexact linear solves perturb u_{n+1} by Σ_j m_j δ_j (δ_j the stage errors): the solves
    stop where that is below KRYLOV_SAFETY of the local error tolerance of StepControl (the
    error ratio of the difference to the step with direct solves). A residual relative to
    each stage's right-hand side (1e-4, unpreconditioned: main) gave 0.25 of it at dt = 0.1
    and 5e-4 at dt = 0.02 (products spent for nothing)."""
    from meanfield_pde.numerics.steppers import rosenbrock
    sim, u = clusters
    control = sim.control
    stepper = RosenbrockW(TAB, sim.model)
    stepper.error_tolerance = control.tolerance
    new, _ = stepper.step(u, dt)
    assert control.error_ratio(u, new - exact_step(sim.model, u, dt, monkeypatch)) <= rosenbrock.KRYLOV_SAFETY
    assert stepper.products > stepper.solves  # the solves did iterate


def test_stages_recycle_the_krylov_subspace(clusters, monkeypatch):
    """The 4 stages of a step solve with one matrix 1/(hγ) − W: the directions of the earlier
    stages, passed on (gcrotmk's CU), save products in the later ones (here 31 against 36;
    12.8 against 19.7 per solve on the plateau of sa_beta10_noisy, t = 300..400, with the
    dense block); the step agrees with the one without recycling to the solve tolerance."""
    from meanfield_pde.numerics.steppers import rosenbrock
    sim, u = clusters
    results = []
    for k in (rosenbrock.KRYLOV_RECYCLE, 0):
        monkeypatch.setattr(rosenbrock, "KRYLOV_RECYCLE", k)
        stepper = RosenbrockW(TAB, sim.model)
        stepper.error_tolerance = sim.control.tolerance
        results.append((stepper.step(u, 0.1)[0], stepper.products))
    (new, used), (plain, used_plain) = results
    assert used < used_plain, (used, used_plain)
    assert sim.control.error_ratio(u, new - plain) <= 2 * rosenbrock.KRYLOV_SAFETY


def test_the_preconditioner_block_is_not_rebuilt_while_it_still_pays(clusters, monkeypatch):
    """Rent or buy: the block is rebuilt only once the products it no longer saves have paid
    for a build. Steps from one state (nothing drifts) keep the cost of the first step after
    the build, every solve above the threshold that starts the first build (lowered to 2
    here): one build in 12 steps, where rebuilding whenever a solve needs more than the
    threshold (at most every 5 steps, the rule before) would build 3 times for these solves."""
    from meanfield_pde.numerics.steppers import rosenbrock
    monkeypatch.setattr(rosenbrock, "REBUILD_PRODUCTS", 2)
    sim, u = clusters
    stepper = RosenbrockW(TAB, sim.model)
    stepper.error_tolerance = sim.control.tolerance
    stepper.reuse_stages = False  # the same step again would start from its own solutions
    costs = []
    for _ in range(12):
        before = stepper.products
        try:
            stepper.step(u, 1.0)
        except NumericalFault:  # the diagonal preconditioner alone: the block is built next
            continue
        costs.append(stepper.products - before)
    assert stepper.block_builds == 1
    assert len(costs) >= 11 and min(costs) > 4 * 2 and len(set(costs)) == 1, costs


def test_a_repeated_step_starts_from_its_last_stage_solutions(clusters):
    """The solves start from the previous step's stage solutions (scaled by h/h_prev) once
    those proved closer to the solutions than M b: the same step from the same state, a third
    time, starts at its own solutions (to the solve tolerance) and needs a fraction of the
    products, with the same result to the solve tolerance. Without the reuse every repetition
    costs the same."""
    from meanfield_pde.numerics.steppers import rosenbrock
    sim, u = clusters
    costs = {}
    for reuse in (True, False):
        stepper = RosenbrockW(TAB, sim.model)
        stepper.error_tolerance = sim.control.tolerance
        stepper.reuse_stages = reuse
        results, used = [], []
        for _ in range(3):
            before = stepper.products
            results.append(stepper.step(u, 0.05)[0])
            used.append(stepper.products - before)
        costs[reuse] = used
        for new in results[1:]:
            assert sim.control.error_ratio(u, new - results[0]) <= 2 * rosenbrock.KRYLOV_SAFETY
    assert costs[False][0] == costs[False][1] == costs[False][2] == costs[True][0], costs
    assert costs[True][2] <= costs[True][0] // 2, costs


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

def test_ros34pw2_step_when_recycling_breaks_down():
    """`run` (zonal d = 3, SA, β = 1, ν = 0, L = 8, perturbed uniform 1e-3, time.scheme =
    "ROS34PW2", time.adaptive = false, time.dt = 0.1): stopped at t = 0 with "the Krylov (GCROT)
    solve of a Rosenbrock stage did not converge": the last stage's solve, started from the
    vectors recycled from the first three, diverged (residual 2e7 times its right-hand side).
    Now the step is taken, and it is the flow of u' = F(u) to the local error of an order-3
    step: checked against scipy's DOP853 on the same right-hand side."""
    from scipy.integrate import solve_ivp

    from meanfield_pde.numerics.steppers import ROSENBROCK, RosenbrockW
    from meanfield_pde.runs.simulation import build
    from helpers.cases import make_config
    cfg = make_config(domain={"manifold": "sphere_zonal", "dimension": 3, "lmax": 8},
                      model={"kind": "SA", "beta": 1.0, "nu": 0.0},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-3, "degree_max": 8,
                               "seed": 0},
                      time={"t_end": 0.1, "dt": 0.1, "scheme": "ROS34PW2", "adaptive": False})
    sim = build(cfg)
    stepper = RosenbrockW(ROSENBROCK["ROS34PW2"], sim.model)
    u0, h = sim.initial, 0.1
    new, _ = stepper.step(u0, h)
    n = u0.size
    ref = solve_ivp(lambda t, y: (lambda f: np.concatenate([f.real, f.imag]))(
                        stepper.rhs(y[:n] + 1j * y[n:])),
                    (0.0, h), np.concatenate([u0.real, u0.imag]), method="DOP853",
                    rtol=1e-13, atol=1e-16).y[:, -1]
    ref = ref[:n] + 1j * ref[n:]
    # local error of an order-3 step with rates O(1): O(h^4) of the change, far below 1e-3 of it
    ratio = np.linalg.norm(new - ref) / np.linalg.norm(ref - u0)
    assert ratio < 1e-3, ratio
