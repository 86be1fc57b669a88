"""Weighted particles: the velocity of μ = Σ_j w_j δ_{x_j} and its adaptive long-time integration.

References used: the unweighted token system (w_j = 1/n), duplicated points
(a weight is a multiplicity), the double sum of the energy written out, the
two-cluster closed form of theory/clusters.py (Dirac data, κ = ∞), monotonicity
of E_β (docs/mathematics/model.md (Energies)) and |x_i| = 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.kernels import SMALL_BETA
from meanfield_pde.particles import dynamics as D
from meanfield_pde.particles.adaptive import (integrate_weighted, log_snapshot_times,
                                              merge_coincident)
from meanfield_pde.particles.sampling import uniform_sphere, von_mises_fisher_mixture
from meanfield_pde.theory import clusters as C

from helpers.bounds import EPS, energy_rounding, sum_rounding



@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [0.0, 1e-3, 0.5, 5.0, 50.0, 700.0])
def test_equal_weights_reproduce_the_token_system(kind, beta):
    """w_j = 1/n gives today's attention, energy and order parameter: the two paths add the same
    terms in other orders (and the BLAS kernel picks the order), so they agree to the rounding
    bound of the sums, scaled by each sum's condition Σ|terms| / |Σ terms|."""
    n, d = 300, 3
    x = uniform_sphere(n, d, seed=4)
    w = np.full(n, 1 / n)
    a, b = D.attention(x, kind, beta), D.attention(x, kind, beta, weights=w)
    s = np.abs(a).max()  # USA at β = 700: |A| ~ 1e304, its square overflows
    size = s * np.linalg.norm(a / s, axis=1)
    # condition of A_i = Σ_j e_ij x_j (|x_j| = 1, e_ij > 0): Σ_j e_ij / |Σ_j e_ij x_j| = 1/|A_i^SA|
    condition = 1 / np.linalg.norm(D.attention(x, "SA", beta), axis=1)
    assert np.all(np.max(np.abs(a - b), axis=1) / size <= 2 * sum_rounding(n, beta, d) * condition)
    if beta <= 50.0:
        e = D.energy(x, beta)
        assert abs(D.energy(x, beta, weights=w) - e) <= energy_rounding(x, w, beta)
    # |m| = |Σ_j x_j|/n: an n-term sum of unit vectors each way, condition n/|Σ x_j| = 1/|m|
    m = D.order_parameter(x)
    assert abs(D.order_parameter(x, w) - m) <= 2 * (n + 4) * EPS * 1.0


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_weight_is_a_multiplicity(kind):
    """A node of weight 3/n is the same measure as three coincident nodes of 1/n."""
    x = uniform_sphere(20, 4, seed=2)
    tripled = np.vstack([x, x[[5, 5]]])
    w = np.full(20, 1 / 22)
    w[5] = 3 / 22
    for beta in (0.0, 2.0, 30.0):
        v = D.velocity(x, kind, beta, weights=w)
        # v = A − ⟨x,A⟩x: each path's A_i errs by sum_rounding times Σ_j w_j e^{β⟨x_i,x_j⟩}|x_j|
        # (the sizes of its terms; 1 for SA after the division), the projection adds at most
        # twice that (|x_i| = 1)
        sizes = (np.exp(beta * x @ x.T) @ w) if kind == "USA" else np.ones(20)
        bound = 3 * 2 * sum_rounding(22, beta, 4) * sizes[:, None]
        assert np.all(np.abs(v - D.velocity(tripled, kind, beta)[:20]) <= bound)
        assert abs(D.energy(x, beta, weights=w) - D.energy(tripled, beta)) <= energy_rounding(x, w, beta)


@pytest.mark.parametrize("beta", [1e-7, 1e-5, 0.5, 5.0, 100.0])
def test_weighted_energy_is_the_double_sum(beta):
    """E = (1/2β) Σ_ij w_i w_j (e^{β⟨x_i,x_j⟩} − 1), all three branches of the evaluation
    (the series below kernels.SMALL_BETA, expm1 below 1, e^β factored out above)."""
    assert 1e-7 < SMALL_BETA < 1e-5
    x = uniform_sphere(40, 3, seed=7)
    w = np.random.default_rng(1).dirichlet(np.ones(40))
    gram = x @ x.T
    want = float(w @ np.expm1(beta * gram) @ w) / (2 * beta)
    # the series |m|²/2 + (β/4)Σ w_i w_j g_ij² stops before (β²/12)Σ w_i w_j g_ij³ e^{θβg_ij}
    truncation = beta ** 2 / 12 * math.exp(beta) if beta < SMALL_BETA else 0.0
    assert abs(D.energy(x, beta, weights=w) - want) <= energy_rounding(x, w, beta) + truncation
    # |Σ_j w_j x_j|: an n-term sum of terms of sizes w_j (Σ w_j = 1) each way
    assert abs(D.order_parameter(x, w) - np.linalg.norm(w @ x)) <= 2 * (40 + 4) * EPS


def test_massless_far_node_sa_at_large_beta():
    """SA, β = 700: a massless node 100° from the only massive one has Φ below the float range
    after the usual shift; its velocity is still exact: P⊥ towards the massive node."""
    ang = math.radians(100)
    x = np.array([[1.0, 0.0, 0.0], [math.cos(ang), math.sin(ang), 0.0]])
    v = D.velocity(x, "SA", 700.0, weights=[1.0, 0.0])
    want = x[0] - (x[0] @ x[1]) * x[1]
    # A_1 = x_0 (the only mass; the softmax weight is e/e); v_1 = x_0 − ⟨x_0,x_1⟩x_1 is a 3-term
    # dot product, a product and a difference: a few ε each way on the scale 1 + |⟨x_0,x_1⟩|
    np.testing.assert_allclose(v[1], want, rtol=0, atol=2 * (3 + 3) * EPS * (1 + abs(x[0] @ x[1])))
    np.testing.assert_allclose(v[0], 0.0, rtol=0, atol=2 * (3 + 3) * EPS)  # the same for x_0 − ⟨x_0,x_0⟩x_0


def test_bad_weights_are_refused():
    x = uniform_sphere(5, 3, seed=1)
    for bad in ([1, 1, 1], [1, 1, 1, 1, -1], [0] * 5, [1, 1, np.nan, 1, 1]):
        with pytest.raises(ConfigError, match="weights"):
            D.velocity(x, "SA", 1.0, weights=bad)
    with pytest.raises(ConfigError, match="method"):
        integrate_weighted(x, np.full(5, 0.2), "SA", 1.0, [0, 1], method="Radau")
    with pytest.raises(ConfigError, match="times"):
        integrate_weighted(x, np.full(5, 0.2), "SA", 1.0, [0.5, 1])
    with pytest.raises(ConfigError, match="x0"):
        integrate_weighted(2 * x, np.full(5, 0.2), "SA", 1.0, [0, 1])


@pytest.mark.parametrize("kind, beta", [("SA", 5.0), ("USA", 5.0), ("SA", 1.0), ("USA", 0.0)])
def test_two_diracs_follow_the_closed_form(kind, beta):
    """κ = ∞: two weighted Diracs integrated by the particle code reach ρ at the closed-form
    times t(ρ) of theory.clusters to 1e-8 (measured ~4e-12)."""
    rho0, w = -0.4, np.array([0.3, 0.7])
    rhos = np.array([0.0, 0.5, 0.9, 0.99, 0.9999])
    times = np.array([C.pair_time(rho0, r, *w, kind, beta) for r in rhos])
    x0 = np.array([[1.0, 0.0, 0.0], [rho0, math.sqrt(1 - rho0 ** 2), 0.0]])
    run = integrate_weighted(x0, w, kind, beta, np.r_[0.0, times], rtol=1e-12, atol=1e-14, merge_tol=0.0)
    got = np.array([p[0] @ p[1] for p in run.positions[1:]])
    np.testing.assert_allclose(got, rhos, rtol=0, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("kind, beta", [("SA", 4.0), ("USA", 3.0)])
def test_energy_non_decreasing_mass_conserved_on_sphere(kind, beta):
    """Along the weighted flow (with merges of coincident nodes): E_β never decreases beyond
    the rounding of its evaluation, the total mass is kept to rounding (one addition per
    merge), every row stays on the sphere. E is (e^β/2β) Σ_i w_i Φ_i − M²/(2β) with Φ_i a sum
    of n positive terms: recursive summation of n positive terms errs by at most (n−1)u times
    their sum (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2), so
    each value has error <= (2n + 4) eps |E| and a step between two snapshots twice that.
    (On plateaus the true increase is below this: monotonicity is observable only above it.)"""
    x0 = uniform_sphere(80, 3, seed=11)
    w0 = np.random.default_rng(5).dirichlet(np.ones(80))
    times = log_snapshot_times(1e-2, 1e3, 6)
    run = integrate_weighted(x0, w0, kind, beta, times, rtol=1e-10, atol=1e-13)
    e = run.energy
    n = np.array([p.shape[0] for p in run.positions])
    assert np.all(np.diff(e) >= -2 * (2 * n[:-1] + 4) * EPS * np.abs(e[1:]))
    assert e[-1] - e[0] > 0.1 * abs(e[-1])  # clusters formed: the energy did climb
    assert run.merges, "nodes should have collapsed and merged"
    for wk in run.weights:
        assert abs(math.fsum(wk) - math.fsum(w0)) <= 4 * EPS
    for xk in run.positions:
        assert np.max(np.abs(np.linalg.norm(xk, axis=1) - 1.0)) <= 4 * EPS
    # the drift before each projection is controlled by the tolerance (measured ~1e-11)
    assert run.drift.max() <= 100 * run.rtol


def test_weights_untouched_without_merges():
    x0 = uniform_sphere(30, 3, seed=3)
    w0 = np.random.default_rng(2).dirichlet(np.ones(30))
    run = integrate_weighted(x0, w0, "SA", 2.0, [0.0, 0.5, 1.0], merge_tol=0.0)
    for wk in run.weights:
        assert np.array_equal(wk, w0)


def test_merge_keeps_mass_and_barycentre():
    """Merging keeps the total mass and the (normalised) barycentre of each group; the energy
    changes only at second order in the node distance ε."""
    rng = np.random.default_rng(0)
    centre = np.array([0.0, 0.0, 1.0])
    other = np.array([1.0, 0.0, 0.0])
    errs = []
    for eps in (1e-3, 1e-4):
        pts = centre + eps * rng.standard_normal((5, 3))
        pts /= np.linalg.norm(pts, axis=1, keepdims=True)
        x = np.vstack([pts, other])
        w = np.r_[rng.dirichlet(np.ones(5)) * 0.6, 0.4]
        xm, wm = merge_coincident(x, w, 10 * eps)
        assert xm.shape == (2, 3) and math.fsum(wm) == pytest.approx(1.0, abs=2 * EPS)
        bary = w[:5] @ pts
        # the merged node and bary/|bary| sum the same 5 terms w_j x_j (|x_j| = 1) in their own
        # orders and normalise by |·| ≈ Σ w_j: each errs by <= (5 + 4)ε relatively
        np.testing.assert_allclose(xm[0], bary / np.linalg.norm(bary), rtol=0, atol=2 * (5 + 4) * EPS)
        errs.append(abs(D.energy(xm, 5.0, weights=wm) - D.energy(x, 5.0, weights=w)))
    assert errs[1] / errs[0] == pytest.approx(1e-2, rel=0.3)  # second order in ε


@pytest.mark.slow
def test_plateau_steps_grow_by_orders_of_magnitude():
    """Two well-separated clusters (SA, β = 10, vMF κ = 200, masses 0.4/0.6, ρ0 = −0.3, 200 nodes):
    once the nodes of each cluster have merged (t ≈ 18) the steps grow by orders of magnitude
    on the plateau (measured: 0.006 at t = 1, 35 at t = 100, 2.6e3 at t = 1e4), and the two
    clusters are still apart at t = 1e4, as the two-Dirac closed form says (T_0.01 ≈ 2.2e4)."""
    rho0, w = -0.3, [0.4, 0.6]
    c = np.array([[1.0, 0.0, 0.0], [rho0, math.sqrt(1 - rho0 ** 2), 0.0]])
    x0 = von_mises_fisher_mixture(200, c, [200.0, 200.0], weights=w, seed=1)
    run = integrate_weighted(x0, np.full(200, 1 / 200), "SA", 10.0, log_snapshot_times(1e-2, 1e4, 4))
    assert run.times[-1] == 1e4
    early = run.step_sizes[np.searchsorted(run.step_times, 1.0)]
    plateau = run.step_sizes[run.step_times > 100]
    assert plateau.max() > 1e4 * early
    assert C.merge_time(rho0, *w, "SA", 10.0) > 2e4
    assert [p.shape[0] for p in run.positions][-1] == 2  # the 200 nodes became two clusters
    assert run.nfev < 10_000


def vmf_nodes(mu, kappa, k=4, m=8):
    """A symmetric quadrature of vMF(μ, κ) on S²: Gauss–Laguerre in u = 1 − cos θ (the vMF
    density in u is κ e^{−κu} on [0, 2], e^{−2κ} from the half line) times m equispaced
    azimuths. The barycentre points exactly along μ; ∫ u = 1/κ exactly."""
    from scipy.special import roots_laguerre

    s, ws = roots_laguerre(k)
    u, ws = s / kappa, ws / ws.sum()
    mu = np.asarray(mu, float) / np.linalg.norm(mu)
    a = np.cross(mu, [0.3, 0.5, 0.8])
    a /= np.linalg.norm(a)
    b = np.cross(mu, a)
    ph = 2 * np.pi * (np.arange(m) + 0.5) / m
    pts = [(1 - ui) * mu + math.sqrt(ui * (2 - ui)) * (math.cos(p) * a + math.sin(p) * b)
           for ui in u for p in ph]
    return np.array(pts), np.repeat(ws / m, m)


@pytest.mark.slow
@pytest.mark.parametrize("kind, beta, rho0, t_c", [("SA", 5.0, -0.2, 30.0), ("USA", 3.0, -0.9, 4.0)])
def test_vmf_cluster_merge_time_converges_like_one_over_kappa(kind, beta, rho0, t_c):
    """Two vMF clusters (masses 0.3/0.7) as weighted nodes: T_0.01(κ) → the two-Dirac closed
    form at rate 1/κ. Why 1/κ: by symmetry of the nodes each cluster's barycentre points along
    its centre, so the field of a cluster is that of a Dirac plus its second moment,
    ∫(1 − ⟨x,μ⟩) dvMF = 1/κ + O(e^{−2κ}); after the nodes of each cluster have collapsed
    (t_c) the clusters are Diracs displaced by O(1/κ), whose merge time is the closed form.
    Measured: κ·(T(κ) − T_∞) = −21.9, −21.6, −21.4 (SA), −0.716, −0.707, −0.702 (USA) for
    κ = 400, 800, 1600: error ratios 2.03, 2.02 at each doubling of κ."""
    w = (0.3, 0.7)
    t_inf = C.merge_time(rho0, *w, kind, beta)
    assert t_inf > t_c
    centres = [np.array([1.0, 0.0, 0.0]), np.array([rho0, math.sqrt(1 - rho0 ** 2), 0.0])]
    errors = []
    for kappa in (400.0, 800.0, 1600.0):
        nodes = [vmf_nodes(c, kappa) for c in centres]
        x0 = np.vstack([p for p, _ in nodes])
        w0 = np.concatenate([q * wi for (_, q), wi in zip(nodes, w)])
        run = integrate_weighted(x0, w0, kind, beta, [0.0, t_c / 4, t_c / 2, t_c], rtol=1e-12, atol=1e-14)
        x, wk = run.positions[-1], run.weights[-1]
        assert x.shape[0] == 2  # each cluster's nodes have merged into one Dirac
        errors.append(t_c + C.merge_time(float(x[0] @ x[1]), *wk, kind, beta) - t_inf)
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 2.0, atol=0.1)


def test_failure_part_way_keeps_the_good_snapshots(monkeypatch):
    """An integrator failure in the second interval: the result keeps the snapshots at t = 0
    and t = 1, says why and where it stopped, and raises nothing."""
    import meanfield_pde.particles.adaptive as A

    real = A.solve_ivp
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        sol = real(*args, **kwargs)
        if len(calls) == 2:
            sol.success, sol.message = False, "Required step size is less than spacing between numbers."
        return sol

    monkeypatch.setattr(A, "solve_ivp", failing)
    x0 = uniform_sphere(10, 3, seed=1)
    run = integrate_weighted(x0, np.full(10, 0.1), "SA", 2.0, [0.0, 1.0, 2.0, 3.0])
    assert run.times.tolist() == [0.0, 1.0] and len(run.positions) == 2
    assert run.reason.value == "numerical_fault"
    assert "[1, 2]" in run.status and "step size" in run.status


def test_a_stop_request_ends_a_long_snapshot_interval_at_once(monkeypatch):
    """Ctrl-C (or SIGTERM) while one snapshot interval is integrated: the run stops within a
    few field evaluations, keeps the snapshots before it and says "interrupted (SIGINT)".
    Found: the request was looked at only between snapshots, and log-spaced snapshots of a
    hand-off run are decades apart: a run at t = 1.2e4 ignored Ctrl-C for minutes."""
    import signal
    import meanfield_pde.particles.adaptive as A
    from meanfield_pde.core import signals

    real, calls = A.attention, []

    def counting(*args, **kwargs):
        calls.append(1)
        if len(calls) == 60:  # in the second interval (the first takes 50 evaluations)
            signals._request(signal.SIGINT, None)  # what the handler of stop_on_signals does
        return real(*args, **kwargs)

    monkeypatch.setattr(A, "attention", counting)
    try:
        x0 = uniform_sphere(10, 3, seed=1)
        run = integrate_weighted(x0, np.full(10, 0.1), "SA", 2.0, [0.0, 1.0, 1e4], rtol=1e-10)
    finally:
        signals._requested.clear()
    assert run.reason.value == "interrupted" and "interrupted (SIGINT)" in run.status
    assert run.times.tolist() == [0.0, 1.0] and len(run.positions) == 2
    assert len(calls) <= 61  # the evaluation that saw the request is the last one


def test_a_snapshot_the_caller_fails_to_store_is_not_in_the_result():
    """on_snapshot raising KeyboardInterrupt (a run file's failed write, a second Ctrl-C during
    it) at t = 2: the result ends at t = 1, the last stored snapshot, and its status says so.
    Found: the failed snapshot was kept, and a hand-off run file said "stopped ... at t = 2"
    (and final_nodes of t = 2) while its last snapshot was t = 1."""
    stored = []

    def store(t, x, w, energy, order):
        if t == 2.0:
            raise KeyboardInterrupt
        stored.append(t)

    x0 = uniform_sphere(10, 3, seed=1)
    run = integrate_weighted(x0, np.full(10, 0.1), "SA", 2.0, [0.0, 1.0, 2.0, 3.0], on_snapshot=store)
    assert stored == [0.0, 1.0] and run.times.tolist() == [0.0, 1.0] and len(run.weights) == 2
    assert run.reason.value == "interrupted" and run.status.endswith("at t = 1")


def test_one_node_and_beta_zero():
    """Edge sizes: one node never moves; β = 0 is ρ̇ = 1 − ρ² for two Diracs of any masses (SA)."""
    run = integrate_weighted([[0.0, 0.0, 1.0]], [1.0], "USA", 5.0, [0.0, 1e6])
    np.testing.assert_array_equal(run.positions[-1], [[0.0, 0.0, 1.0]])
    x0 = np.array([[1.0, 0.0], [0.0, 1.0]])  # d = 2
    run = integrate_weighted(x0, [0.2, 0.8], "SA", 0.0, [0.0, 1.0], rtol=1e-12, atol=1e-14, merge_tol=0)
    rho = float(run.positions[-1][0] @ run.positions[-1][1])
    # the integrator's tolerances (rtol 1e-12, atol 1e-14 above) over t = 1, not rounding
    assert rho == pytest.approx(math.tanh(1.0), abs=1e-10)


def test_usa_nodes_merge_when_they_meet_not_at_the_next_snapshot():
    """Two USA Dirac nodes (β = 10, masses 1/2, ρ0 = 0) meet at T = 0.1025 (closed form
    merge_time at θ = 0.01); once close they contract at rate 2(w_1+w_2)e^β = 4.4e4, a stiff
    mode holding explicit steps near 1e-4. With few nodes they merge as soon as they are
    merge_tol apart (a solve_ivp event), so the single node left costs nothing up to t = 1:
    the merge is recorded before the snapshot and the evaluations stay few (measured 990;
    merged only at the snapshot t = 1, as before, 38 054)."""
    from meanfield_pde.theory.clusters import merge_time
    x0 = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    run = integrate_weighted(x0, [0.5, 0.5], "USA", 10.0, [0.0, 1.0], merge_tol=1e-6)
    assert run.status == "completed" and run.weights[-1].shape == (1,)
    (t_merge, before, after), = run.merges
    assert (before, after) == (2, 1) and merge_time(0.0, 0.5, 0.5, "USA", 10.0) < t_merge < 0.2
    assert run.nfev < 2000
    assert run.weights[-1][0] == 1.0


@pytest.mark.slow
def test_usa_tokens_at_large_beta_survive_a_first_step_that_is_far_too_long():
    """n = 1000 USA tokens at β = 10 (speeds ~e^β = 2e4 where they bunch): solve_ivp's first-step
    guess put Runge–Kutta stages at |y| ~ 10, where e^{β⟨y, y_j⟩} overflows, and the overflow
    check of the attention raised a ConfigError ("rescale the weights") on a good state. Such a
    stage is now a rejected step (an infinite slope): the run goes on, stays on the sphere and
    its energy does not decrease."""
    x0 = uniform_sphere(1000, 3, seed=0)
    w0 = np.full(1000, 1.0 / 1000)
    run = integrate_weighted(x0, w0, "USA", 10.0, np.array([0.0, 1e-2, 0.1]), rtol=1e-8, atol=1e-10,
                             merge_tol=1e-5)
    assert run.status == "completed", run.reason
    e = run.energy
    n = np.array([p.shape[0] for p in run.positions])  # the rounding bound of the test above
    assert np.all(np.diff(e) >= -2 * (2 * n[:-1] + 4) * EPS * np.abs(e[1:])) and e[-1] > e[0]
    for xk in run.positions:
        assert np.max(np.abs(np.linalg.norm(xk, axis=1) - 1.0)) <= 4 * EPS


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

def test_usa_weighted_sums_beyond_the_float_range_are_refused_not_nan():
    """velocity(..., "USA", 700, weights=[1e300, ...]) gave NaN with only a RuntimeWarning
    (found by a new user): Σ w e^β is beyond the float range. Now a ConfigError naming the
    weights; moderate weights at β = 700 still give finite numbers."""
    import warnings
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.particles.dynamics import energy, velocity
    x = np.random.default_rng(0).normal(size=(5, 3))
    x /= np.linalg.norm(x, axis=1)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the error
        with pytest.raises(ConfigError, match="weights: total mass"):
            velocity(x, "USA", 700.0, weights=[1e300] * 5)
        with pytest.raises(ConfigError, match="weights: total mass"):
            energy(x, 700.0, weights=[1e300] * 5)
        assert np.all(np.isfinite(velocity(x, "USA", 700.0, weights=[0.2] * 5)))
        assert np.isfinite(energy(x, 700.0, weights=[0.2] * 5))
