"""Tokens with general attention heads (β_h, Q_h, K_h, V_h) in any d: the velocity against
today's model where they coincide, the exact rescalings, RK4's order on a general case, the
power-method picture of a sharp cluster, heads that change with depth, the energy of the
symmetric case, and the checks of bad input (meanfield_pde.core.attention,
meanfield_pde.particles.heads)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.bounds import EPS, energy_rounding, unit_rounding
from scipy.linalg import expm

from meanfield_pde.core.attention import Head, HeadSchedule, Layer, gradient_flow_head, identity_head
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.particles import dynamics, simulate, uniform_sphere
from meanfield_pde.particles.heads import AttentionField, attention_energy, attention_velocity
from meanfield_pde.particles.integrators import rk4_step

EPS = np.finfo(float).eps


def rounding_bound(n: int, d: int, beta: float) -> float:
    """|Δv| between two evaluations of the same softmax average that differ only in rounding
    (SA, unit points): each exponent β⟨x_i,x_j⟩ − s_i is a (d+1)-term dot product, rounded to
    (d+1)ε·2β, so each weight differs by <= 4(d+1)βε + 2ε relatively (exp's own rounding in both);
    the two sums over n terms by <= 2nε; numerator and denominator together give twice that, and
    the tangent projection doubles it again: 4(2n + 4(d+1)β + 2)ε (Higham, *Accuracy and
    Stability of Numerical Algorithms*, §3.1, γ_n = nε/(1 − nε))."""
    return 4.0 * (2 * n + 4 * (d + 1) * beta + 2) * EPS


@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_identity_head_is_todays_velocity(kind, d):
    n, beta = 400, 4.0
    x = uniform_sphere(n, d, seed=2)
    off = x * (1.0 + 0.01 * np.random.default_rng(0).standard_normal((n, 1)))  # an RK stage
    for pts in (x, off):
        today = dynamics.velocity(pts, kind, beta)
        general = attention_velocity(pts, identity_head(beta, d), kind)
        # USA carries e^β (today's factor e^β/n and the shift's e^{s_i}/n): relative to it,
        # plus the rounding of e^{s_i} (s_i ~ β: 2βε)
        scale = np.max(np.linalg.norm(pts, axis=1)) ** 2 * (np.exp(beta) if kind == "USA" else 1.0)
        tol = (rounding_bound(n, d, beta) + (4 * beta * EPS if kind == "USA" else 0.0)) * scale * 1.1
        assert np.max(np.abs(general - today)) <= tol


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_scaled_identity_is_todays_model_at_c_beta(kind):
    """A = cI (Q = cI, K = V = I): β⟨cx, y⟩ = (cβ)⟨x, y⟩, today's model at β' = cβ."""
    n, beta, c = 300, 2.5, 1.6
    x = uniform_sphere(n, 4, seed=3)
    general = attention_velocity(x, Head(beta, Q=c * np.eye(4)), kind)
    today = dynamics.velocity(x, kind, c * beta)
    scale = np.exp(c * beta) if kind == "USA" else 1.0
    # β·(c x) against (cβ)·x: one more rounding of each exponent entry, within the bound's slack
    assert np.max(np.abs(general - today)) <= rounding_bound(n, 4, c * beta) * scale * 1.1


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_scaled_identity_run_is_todays_run(kind):
    """A = cI over a run (RK4, 20 steps): each step differs from today's by a rounding-level
    velocity difference (:func:`rounding_bound`) times h, carried by a flow whose Lipschitz
    constant over the run is O(1) here (β' = 3, t = 1): the final positions agree to
    steps · bound · scale."""
    c, beta, n = 1.5, 2.0, 50
    x0 = uniform_sphere(n, 3, seed=12)
    general = simulate(x0, kind, None, 0.0, 1.0, 0.05, 1.0, heads=Head(beta, Q=c * np.eye(3)))
    today = simulate(x0, kind, c * beta, 0.0, 1.0, 0.05, 1.0)
    scale = np.exp(c * beta) if kind == "USA" else 1.0
    assert np.max(np.abs(general.final - today.final)) <= general.steps * rounding_bound(n, 3, c * beta) * scale


def test_value_multiple_is_todays_model_in_time_vt():
    """V = vI: ẋ = v F(x), today's model in time s = vt; RK4 with step h on vF is RK4 with step
    vh on F (the same arithmetic up to rounding), so the runs agree to rounding."""
    v, beta, n = 1.7, 3.0, 60
    x0 = uniform_sphere(n, 3, seed=4)
    general = simulate(x0, "SA", None, 0.0, 2.0, 0.05, 1.0, heads=Head(beta, V=v * np.eye(3)))
    today = simulate(x0, "SA", beta, 0.0, 2.0 * v, 0.05 * v, 1.0 * v)
    # 40 RK4 steps, each a rounding-level difference of a contraction-free flow
    steps = general.steps
    assert np.max(np.abs(general.final - today.final)) <= steps * rounding_bound(n, 3, beta)


def test_value_multiple_with_noise_is_todays_model_with_noise_over_v():
    """With noise: dx = vF dt + √(2ν) dB is, in s = vt, dx = F ds + √(2ν/v) dB_s; the geodesic
    Euler–Maruyama step h(vF) + √(2νh)ξ equals vh F + √(2(ν/v)(vh))ξ for the same draws ξ."""
    v, beta, nu, n = 0.6, 2.0, 0.05, 40
    x0 = uniform_sphere(n, 3, seed=5)
    general = simulate(x0, "USA", None, nu, 1.0, 0.02, 0.5, scheme="euler_maruyama", seed=9,
                       heads=Head(beta, V=v * np.eye(3)))
    today = simulate(x0, "USA", beta, nu / v, v, 0.02 * v, 0.5 * v, scheme="euler_maruyama", seed=9)
    scale = np.exp(beta)
    assert np.max(np.abs(general.final - today.final)) <= general.steps * rounding_bound(n, 3, beta) * scale


def general_head(d: int = 3) -> Head:
    rng = np.random.default_rng(11)
    q = np.eye(d) + 0.4 * rng.standard_normal((d, d))
    k = np.eye(d) + 0.4 * rng.standard_normal((d, d))
    v = np.eye(d) + 0.5 * rng.standard_normal((d, d))
    h = Head(1.5, Q=q, K=k, V=v)
    assert not np.allclose(h.A, h.A.T) and not np.allclose(h.V, np.eye(d))
    return h


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_rk4_order_four_on_a_general_head(kind):
    """Convergence study of the projected RK4 (non-symmetric A, V ≠ I): the error at T = 1
    against a 1024-step reference falls like dt^4; the fitted order is within 4 ± 0.3."""
    head = general_head()
    x0 = uniform_sphere(30, 3, seed=6)
    field = AttentionField(head, kind)

    def run(m):
        x = x0.copy()
        for _ in range(m):
            x = rk4_step(x, 1.0 / m, field)
        return x

    ref = run(1024)
    ms = np.array([8, 16, 32, 64])
    errs = np.array([np.max(np.abs(run(m) - ref)) for m in ms])
    order = np.polyfit(np.log(1.0 / ms), np.log(errs), 1)[0]  # error ~ (1/m)^order
    assert abs(order - 4.0) <= 0.3, (order, errs)


def test_rk4_order_four_with_a_beta_ramp():
    """Heads that change with depth (a linear warm-up of β, then a second layer): steps are cut
    at the schedule's breaks, so RK4 keeps order 4 across them."""
    head = general_head()
    sched = HeadSchedule([Layer(0.0, (head.with_beta(0.5),), beta_end=(3.0,), ramp_end=0.45),
                          Layer(0.7, (Head(2.0, Q=head.Q, K=head.K, V=-head.V),))])
    x0 = uniform_sphere(20, 3, seed=7)

    def run(dt):
        return simulate(x0, "SA", None, 0.0, 1.0, dt, 1.0, heads=sched).final

    ref = run(1.0 / 1024)
    dts = np.array([1 / 16, 1 / 32, 1 / 64, 1 / 128])
    errs = np.array([np.max(np.abs(run(dt) - ref)) for dt in dts])
    order = np.polyfit(np.log(dts), np.log(errs), 1)[0]
    assert abs(order - 4.0) <= 0.3, (order, errs)


def test_layers_equal_restarts():
    """A two-layer schedule is the first layer's run to the break, then the second layer's run
    from there (steps never straddle the break: the same steps, the same numbers)."""
    h1, h2 = general_head(), Head(2.0, V=np.diag([1.0, 2.0, 0.5]))
    sched = HeadSchedule([Layer(0.0, (h1,)), Layer(0.5, (h2,))])
    x0 = uniform_sphere(25, 3, seed=8)
    whole = simulate(x0, "SA", None, 0.0, 1.0, 0.1, 1.0, heads=sched)
    first = simulate(x0, "SA", None, 0.0, 0.5, 0.1, 0.5, heads=h1)
    second = simulate(first.final, "SA", None, 0.0, 0.5, 0.1, 0.5, heads=h2)
    assert whole.steps == 10
    np.testing.assert_array_equal(whole.final, second.final)


def test_sharp_cluster_follows_the_power_method():
    """SA, no noise, one head: a Dirac at p moves with ṗ = P⊥_p V p, solved by
    p(t) = e^{tV}p₀/|e^{tV}p₀| (every weight of the softmax is 1/n; Geshkovski et al.,
    arXiv:2305.05465, the 'power method' of V). A cluster of width δ follows it with an error
    that falls with δ (first order: the cluster's spread enters the weights and V x_j)."""
    head = general_head()
    p0 = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    T = 1.5
    exact = expm(T * head.V) @ p0
    exact /= np.linalg.norm(exact)
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((40, 3))
    widths, errs = [1e-1, 1e-2, 1e-3], []
    for delta in widths:
        x0 = p0 + delta * noise
        x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
        run = simulate(x0, "SA", None, 0.0, T, 0.01, T, heads=head)
        centre = run.final.mean(axis=0)
        errs.append(np.linalg.norm(centre / np.linalg.norm(centre) - exact))
    slope = np.polyfit(np.log(widths), np.log(errs), 1)[0]
    assert slope >= 0.9 and errs[-1] <= 1e-2 * errs[0], (slope, errs)
    # the Dirac itself (every token at p0): RK4 error only, dt = 0.01, order 4
    run = simulate(np.tile(p0, (3, 1)), "SA", None, 0.0, T, 0.01, T, heads=head)
    assert np.max(np.abs(run.final - exact)) <= 1e-9  # a discretisation error (RK4), not rounding


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_energy_of_symmetric_value_equal_to_interaction_never_decreases(kind):
    """One head with V = A = QᵀK symmetric: SA and USA are gradient flows of
    E_A = (1/2β n²) Σ (e^{β x_iᵀAx_j} − 1): the energy recorded at every snapshot rises."""
    rot, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))
    a = rot @ np.diag([1.0, 0.5, -0.3]) @ rot.T
    a = 0.5 * (a + a.T)  # symmetric to the last bit
    head = Head(2.0, Q=np.eye(3), K=a, V=a)
    assert gradient_flow_head(head) is head
    run = simulate(uniform_sphere(80, 3, seed=2), kind, None, 0.0, 2.0, 0.02, 0.1, heads=head)
    # each snapshot's E is a double sum of n² terms (energy_rounding with the head's A)
    rounding = np.array([energy_rounding(x, None, head.beta, a) for x in run.positions])
    assert np.all(np.diff(run.energy) >= -(rounding[1:] + rounding[:-1]))
    assert run.energy[-1] > run.energy[0]
    # no energy for a general head: none recorded (not a NaN, never a number), and the Dataset says so
    other = simulate(uniform_sphere(20, 3, seed=2), kind, None, 0.0, 0.2, 0.1, 0.1, heads=general_head())
    assert other.energy is None
    ds = other.to_dataset()
    assert "energy" not in ds and ds.attrs["energy_note"].startswith("no energy")


def test_identity_energy_is_todays():
    x = uniform_sphere(50, 3, seed=1)
    assert attention_energy(x, identity_head(3.0, 3)) == dynamics.energy(x, 3.0)
    c = 1.3
    e = attention_energy(x, Head(3.0, K=c * np.eye(3), V=c * np.eye(3)))
    # E_{cI} at β equals c·E_I at cβ: (1/2β)Σ(e^{cβ⟨x,y⟩} − 1)/n² = c · (1/(2cβ))Σ(...)
    assert abs(e - c * dynamics.energy(x, 3.0 * c)) <= (1 + c) * energy_rounding(x, None, 3.0 * c)


@pytest.mark.parametrize("bad, field", [
    (dict(beta=-1.0, dimension=3), "head.beta"),
    (dict(beta=float("nan"), dimension=3), "head.beta"),
    (dict(beta=1.0, Q=np.ones((3, 2))), "head.Q"),
    (dict(beta=1.0, K=[[1.0, np.inf], [0.0, 1.0]]), "head.K"),
    (dict(beta=1.0, Q=np.eye(3), V=np.eye(4)), "head.V"),
    (dict(beta=1.0, V=np.eye(3) * 1j), "head.V"),
    (dict(beta=1.0), "dimension"),
])
def test_bad_heads_refused_naming_the_field(bad, field):
    with pytest.raises(ConfigError, match=field):
        Head(**bad)


def test_bad_schedules_and_arguments_refused_before_work():
    h = identity_head(1.0, 3)
    with pytest.raises(ConfigError, match="first layer"):
        HeadSchedule([Layer(0.5, (h,))])
    with pytest.raises(ConfigError, match="start"):
        HeadSchedule([Layer(0.0, (h,)), Layer(0.0, (h,))])
    with pytest.raises(ConfigError, match="ramp_end"):
        HeadSchedule([Layer(0.0, (h,), beta_end=(2.0,), ramp_end=-1.0)])
    with pytest.raises(ConfigError, match="beta_end"):
        HeadSchedule([Layer(0.0, (h,), beta_end=(800.0,), ramp_end=1.0)])
    with pytest.raises(ConfigError, match="dimension"):
        HeadSchedule([h, identity_head(1.0, 4)])
    x = uniform_sphere(10, 3, seed=0)
    with pytest.raises(ConfigError, match="x: shape"):
        attention_velocity(x[:, :2], h, "SA")
    with pytest.raises(ConfigError, match="beta"):
        simulate(x, "SA", 1.0, 0.0, 1.0, 0.1, 1.0, heads=h)
    with pytest.raises(ConfigError, match="dimension"):
        simulate(uniform_sphere(10, 4, seed=0), "SA", None, 0.0, 1.0, 0.1, 1.0, heads=h)
    with pytest.raises(ConfigError, match="overflow"):
        attention_velocity(x, Head(600.0, Q=2 * np.eye(3)), "USA")


def test_sa_rows_far_below_the_shift_bound_are_exact():
    """β|Q||K| large while ⟨Qx, Ky⟩ stays small: the Cauchy–Schwarz shift underflows the sums,
    and those rows are redone with their exact maximum (finite, softmax averages)."""
    d = 3
    q = np.zeros((d, d))
    q[0, 0] = 30.0
    k = np.zeros((d, d))
    k[1, 1] = 30.0  # ⟨Qx, Ky⟩ = 900 x_1 y_2
    x = uniform_sphere(50, d, seed=4)
    v = attention_velocity(x, Head(1.0, Q=q, K=k), "SA")
    # a softmax average of |x_j| <= 1 + unit_rounding(d), its numerator and denominator n-term sums
    # of the same weights (nε each), the quotient ε; P⊥ (d + 2)ε and the norm measured (d/2 + 1)ε
    bound = 1.0 + unit_rounding(d) + (2 * len(x) + 2 * d + 5) * EPS
    assert np.all(np.isfinite(v)) and np.max(np.linalg.norm(v, axis=1)) <= bound
