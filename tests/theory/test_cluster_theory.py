"""The cluster-level theory (theory/clusters.py) against the equations it solves.

Independent references: the 2-Dirac ODE in R^3 written out here and solved by
solve_ivp; t = ∫ ds/ρ̇ by mpmath at 40 digits; the equiangular reduction
(n = 2 is two equal clusters); the limits β = 0 (artanh) and ρ → ±1
(the linearised rates).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.integrate import solve_ivp

from meanfield_pde.theory import clusters as C
from meanfield_pde.theory.equiangular import solve_equiangular

from helpers.bounds import EPS


def two_dirac_rho(kind, beta, w, rho0, times):
    """ρ(t) of the 2-Dirac ODE ẋ_i = V[μ](x_i) in R^3, written out from the equations."""
    x1 = np.array([1.0, 0.0, 0.0])
    x2 = np.array([rho0, math.sqrt(1.0 - rho0 ** 2), 0.0])
    w = np.asarray(w, float)

    def rhs(_t, y):
        x = y.reshape(2, 3)
        out = np.empty_like(x)
        for i in range(2):
            e = w * np.exp(beta * (x @ x[i]))
            a = (e[:, None] * x).sum(axis=0)
            if kind == "SA":
                a /= e.sum()
            out[i] = a - (a @ x[i]) * x[i]
        return out.ravel()

    sol = solve_ivp(rhs, (0.0, times[-1]), np.r_[x1, x2], method="DOP853", rtol=1e-13,
                    atol=1e-15, t_eval=times)
    x = sol.y.T.reshape(-1, 2, 3)
    return np.einsum("ti,ti->t", x[:, 0], x[:, 1])


def mp_time(kind, beta, w1, w2, rho0, rho):
    """t = ∫_{ρ0}^{ρ} ds / ρ̇(s) at 40 digits."""
    mp.mp.dps = 40
    beta, w1, w2 = mp.mpf(beta), mp.mpf(w1), mp.mpf(w2)
    if kind == "USA":
        def f(s):
            return 1 / ((w1 + w2) * mp.e ** (beta * s) * (1 - s * s))
    else:
        def f(s):
            e = mp.e ** (beta * (1 - s))
            return 1 / ((1 - s * s) * (w2 / (w1 * e + w2) + w1 / (w2 * e + w1)))
    rho0, rho = mp.mpf(rho0), mp.mpf(rho)
    return mp.quad(f, [rho0, (rho0 + rho) / 2, rho])


def pair_time_error(rho0, rho, w1, w2, kind, beta):
    """A bound on |pair_time − t| (theory.clusters' closed form): the terms it adds up, each within
    (4β + 42)ε of its size — ½e^{−β}|Ei(β(1−s))| and ½e^{β}E_1(β(1+s)) at s = ρ0, ρ (over
    w1 + w2, USA; times (p/q)e^β, SA), each through two exponentials of arguments up to 2β (2βε each),
    scipy's expi/exp1 or 30 terms of their series (<= 30ε), and products; for SA c|artanh s| — plus
    quad's relative tolerance 1e-13 on the SA remainder r R, R <= (artanh ρ − artanh ρ0)/(q + 2p)
    (e^{β(1−s)} >= 1). Sizes at 40 digits; β < 1e-17 (the artanh form): |artanh s|/speed."""
    mp.mp.dps = 40
    speed = 1 if kind == "SA" else w1 + w2
    ends = (mp.mpf(rho0), mp.mpf(rho))
    artanh = sum(abs(mp.atanh(s)) for s in ends)
    if beta < 1e-17:
        return float(artanh / speed) * 8 * EPS
    b = mp.mpf(beta)
    ei = sum(mp.e ** -b * abs(mp.ei(b * (1 - s))) + mp.e ** b * mp.e1(b * (1 + s)) for s in ends) / 2
    if kind == "USA":
        return float(ei / speed) * (4 * beta + 42) * EPS
    w1, w2 = mp.mpf(w1) / (w1 + w2), mp.mpf(w2) / (w1 + w2)  # SA depends on w1/w2 only
    p, q = w1 * w2, w1 * w1 + w2 * w2
    r = p * (w1 - w2) ** 2 / q**2
    terms = p / q * mp.e ** b * ei + (1 - 2 * p * p / q**2) * artanh
    quad_part = 1e-13 * r * abs(mp.atanh(ends[1]) - mp.atanh(ends[0])) / (q + 2 * p)
    return float(terms) * (4 * beta + 42) * EPS + float(quad_part)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [0.0, 1.0, 5.0])
@pytest.mark.parametrize("w", [(0.3, 0.7), (0.5, 0.5), (0.05, 0.95)])
def test_pair_time_matches_two_dirac_ode(kind, beta, w):
    """ρ of the 2-Dirac ODE at the closed-form times t(ρ) equals ρ to 1e-10."""
    rho0 = -0.4
    rhos = np.array([-0.2, 0.0, 0.5, 0.9, 0.99])
    times = np.array([C.pair_time(rho0, r, *w, kind, beta) for r in rhos])
    assert np.all(np.diff(times) > 0)
    # the reference is DOP853 at rtol 1e-13, atol 1e-15 (two_dirac_rho), its global error up to
    # these times ~3e-12 (measured); pair_time's own error (pair_time_error) is ~1e-14 in ρ
    np.testing.assert_allclose(two_dirac_rho(kind, beta, w, rho0, times), rhos, rtol=0, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [1.0, 10.0, 50.0])
@pytest.mark.parametrize("w", [(0.3, 0.7), (0.5, 0.5)])
@pytest.mark.parametrize("rho0, rho", [(-0.4, 0.99), (0.5, 0.999999), (-0.99, 0.0)])
def test_pair_time_matches_high_precision_quadrature(kind, beta, w, rho0, rho):
    """The Ei/E_1 form (plus the SA remainder quadrature) equals ∫ ds/ρ̇ to round-off
    (pair_time_error), also where times reach 1e42 (SA β = 50 from near-antipodal clusters)."""
    got = C.pair_time(rho0, rho, *w, kind, beta)
    want = mp_time(kind, beta, *w, rho0, rho)
    assert abs(got - want) <= pair_time_error(rho0, rho, *w, kind, beta)


def test_large_beta_uses_asymptotic_series():
    """β = 400: the scaled Ei/E_1 arguments pass 700, where the series take over."""
    for kind in ("SA", "USA"):
        got = C.pair_time(-0.5, 0.2, 0.4, 0.6, kind, 400.0)
        want = mp_time(kind, 400.0, 0.4, 0.6, -0.5, 0.2)
        assert math.isfinite(got) and abs(got - want) <= pair_time_error(-0.5, 0.2, 0.4, 0.6, kind, 400.0)


def test_times_beyond_the_float_range_are_inf():
    """SA, β = 700, from near-antipodal clusters: t ~ e^{2β·0.9} > 1e308, returned as inf
    (not the nan of inf − inf); USA there is e^{0.9β}/β ~ 1e270, finite."""
    assert C.pair_time(-0.9, -0.8, 0.3, 0.7, "SA", 700.0) == math.inf
    assert C.pair_time(-0.8, -0.9, 0.3, 0.7, "SA", 700.0) == -math.inf
    t = C.pair_time(-0.9, -0.8, 0.3, 0.7, "USA", 700.0)
    assert math.isfinite(t) and t > 1e260


def test_equal_masses_sa_is_the_equiangular_pair():
    """SA with w1 = w2 is the equiangular system with n = 2 (theory.equiangular, another method)."""
    for beta in (1.0, 5.0, 10.0):
        rho0, rho = 0.1, 0.95
        t = C.pair_time(rho0, rho, 0.5, 0.5, "SA", beta)
        # solve_equiangular integrates at rtol 1e-12, atol 1e-14 (its docstring): ~5e-12 reached
        assert float(solve_equiangular("SA", rho0, beta, 2, t)) == pytest.approx(rho, abs=1e-9)
        # USA with masses 1/2 + 1/2 is the equiangular n = 2 USA system too
        t = C.pair_time(rho0, rho, 0.5, 0.5, "USA", beta)
        assert float(solve_equiangular("USA", rho0, beta, 2, t)) == pytest.approx(rho, abs=1e-9)  # (its solver)


@pytest.mark.parametrize("kind, speed", [("SA", 1.0), ("USA", 0.9)])
def test_beta_zero_is_artanh_and_continuous(kind, speed):
    """β = 0: ρ̇ = c(1−ρ²), t = (artanh ρ − artanh ρ0)/c; β = 1e-9 is within 1e-8 of it."""
    w1, w2 = 0.2, 0.7
    want = (math.atanh(0.8) - math.atanh(-0.3)) / speed
    # two logarithms each side (pair_time) or atanh, the gaps 1 − ρ (ε, times 1/(1 − ρ²) <= 2.8),
    # the difference of opposite signs and the quotient
    assert C.pair_time(-0.3, 0.8, w1, w2, kind, 0.0) == pytest.approx(want, rel=12 * EPS)
    assert C.pair_time(-0.3, 0.8, w1, w2, kind, 1e-9) == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_antipodal_is_a_stationary_unstable_point(kind):
    """ρ0 = −1: ρ̇ = 0 and t = inf; ρ0 = −1 + ε leaves at the linearised rate 2h(−1):
    t(−1+ε → ρ) − t(−1+ε/10 → ρ) → −log(10)/(2h(−1))."""
    w1, w2, beta = 0.3, 0.7, 2.0
    assert C.pair_rate(-1.0, w1, w2, kind, beta) == 0.0
    assert C.pair_time(-1.0, 0.0, w1, w2, kind, beta) == math.inf
    assert C.merge_time(-1.0, w1, w2, kind, beta) == math.inf
    if kind == "USA":
        h = (w1 + w2) * math.exp(-beta)
    else:
        e = math.exp(2 * beta)
        h = w2 / (w1 * e + w2) + w1 / (w2 * e + w1)
    eps = 1e-9
    diff = C.pair_time_gap(2 - eps / 10, 1.0, w1, w2, kind, beta) - C.pair_time_gap(2 - eps, 1.0, w1, w2, kind, beta)
    assert diff == pytest.approx(math.log(10) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_merge_time_collapse_rate(kind):
    """Near ρ = 1 the angle decays like e^{−t} (SA) and e^{−(w1+w2)e^β t} (USA):
    T_{θ/10} − T_θ → log 10 / rate, and merge_time is t(cos θ)."""
    w1, w2, beta = 0.25, 0.5, 3.0
    rate = 1.0 if kind == "SA" else (w1 + w2) * math.exp(beta)
    t1 = C.merge_time(0.0, w1, w2, kind, beta, angle=1e-6)
    t2 = C.merge_time(0.0, w1, w2, kind, beta, angle=1e-7)
    # with u = 1 − ρ, u̇ = −h(1 − u)u(2 − u) (ρ̇ = h(ρ)(1 − ρ²)), so T_2 − T_1 = ∫_{u2}^{u1} du/(u h (2 − u))
    # = log(u1/u2)/(2h(1)) (= log 10/rate) + (h'(1)/h(1) + 1/2)(u1 − u2)/(2h(1)) + O(u1²), h'/h <= β
    # (h(1) = rate), u1 = 2 sin²(θ1/2); and each time's round-off
    u1 = 2 * math.sin(0.5e-6) ** 2
    limit_error = (beta + 0.5) * u1 / (2 * rate)
    rounding = sum(pair_time_error(0.0, math.cos(a), w1, w2, kind, beta) for a in (1e-6, 1e-7))
    assert t2 - t1 == pytest.approx(math.log(10) / rate, rel=0, abs=limit_error + rounding)
    # the two gaps, 2 sin²(θ/2) and 1 − fl(cos θ), differ by <= ε: a time difference of ε/ρ̇;
    # and the round-off of each time
    gap_shift = EPS / C.pair_rate(math.cos(0.1), w1, w2, kind, beta)
    assert C.merge_time(0.0, w1, w2, kind, beta, angle=0.1) == pytest.approx(
        C.pair_time(0.0, math.cos(0.1), w1, w2, kind, beta),
        rel=0, abs=gap_shift + 2 * pair_time_error(0.0, math.cos(0.1), w1, w2, kind, beta))
    assert C.merge_time(0.999, w1, w2, kind, beta, angle=0.1) == 0.0


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["SA", "USA"]), beta=st.floats(0.0, 30.0),
       w1=st.floats(0.01, 1.0), w2=st.floats(0.01, 1.0),
       a=st.floats(-0.99, 0.99), b=st.floats(-0.99, 0.99), c=st.floats(-0.99, 0.99))
def test_pair_time_monotone_and_additive(kind, beta, w1, w2, a, b, c):
    """t(ρ0→ρ) increases with ρ, is additive over an intermediate ρ, symmetric in the
    masses; SA is invariant under scaling the masses, USA scales like 1/(w1+w2)."""
    r0, r1, r2 = sorted((a, b, c))
    t01 = C.pair_time(r0, r1, w1, w2, kind, beta)
    t12 = C.pair_time(r1, r2, w1, w2, kind, beta)
    t02 = C.pair_time(r0, r2, w1, w2, kind, beta)
    assert 0.0 <= t01 <= t02 and 0.0 <= t12 <= t02
    err01, err12, err02 = (pair_time_error(x, y, w1, w2, kind, beta)
                           for x, y in ((r0, r1), (r1, r2), (r0, r2)))
    assert t01 + t12 == pytest.approx(t02, rel=2 * EPS, abs=err01 + err12 + err02)
    # the masses enter through w1 + w2, w1 w2, w1² + w2² and (w1 − w2)²: the same floats swapped
    assert C.pair_time(r0, r2, w2, w1, kind, beta) == t02
    scaled = C.pair_time(r0, r2, 3 * w1, 3 * w2, kind, beta)
    # SA: 3w/(3w1 + 3w2) differs from w/(w1 + w2) by 2ε, moving each term by <= 8ε of its size
    # (folded into a third error); USA: the same F over 3(w1 + w2), 3 roundings
    if kind == "SA":
        assert scaled == pytest.approx(t02, rel=0, abs=3 * err02)
    else:
        assert scaled == pytest.approx(t02 / 3, rel=3 * EPS)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_pair_gap_inverts_pair_time(kind):
    for t in (0.0, 0.3, 2.0, 40.0):
        gap = C.pair_gap(t, 1.3, 0.4, 0.6, kind, 2.0)
        if gap > 0:
            # pair_gap is a brentq root in log(gap) (xtol = rtol = 1e-15), t moves by that over
            # |d log(gap)/dt| (~1 here), plus pair_time's rounding: both ~1e-14 of t (measured 3e-15)
            assert C.pair_time_gap(1.3, gap, 0.4, 0.6, kind, 2.0) == pytest.approx(t, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_gram_rate_two_clusters_is_pair_rate(kind):
    """The k-cluster Gram ODE at k = 2 is the two-cluster ρ̇ (derived separately)."""
    for rho in (-0.7, 0.0, 0.6):
        g = np.array([[1.0, rho], [rho, 1.0]])
        rate = C.gram_rate(g, [0.3, 0.6], kind, 4.0)
        # each side: exponentials of arguments up to β(1 + |ρ|) (β(1 + |ρ|)ε each), a few products,
        # and 1 − ρ² (formed from a_il(1 − ρ·ρ) in the Gram form: condition (1 + ρ²)/(1 − ρ²))
        rel = (2 * 4.0 * (1 + abs(rho)) + 8 + 4 * (1 + rho**2) / (1 - rho**2)) * EPS
        assert rate[0, 1] == pytest.approx(C.pair_rate(rho, 0.3, 0.6, kind, 4.0), rel=rel)
        assert rate[0, 0] == 0.0 and rate[1, 1] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_solve_gram_matches_three_points_in_r3(kind):
    """Three clusters: the Gram ODE (no coordinates) and the points' ODE in R^3 agree."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w, beta, times = np.array([0.2, 0.3, 0.5]), 3.0, np.array([0.0, 0.5, 2.0])

    def rhs(_t, y):
        p = y.reshape(3, 3)
        e = w[None, :] * np.exp(beta * p @ p.T)
        a = e @ p
        if kind == "SA":
            a /= e.sum(axis=1, keepdims=True)
        return (a - np.sum(a * p, axis=1)[:, None] * p).ravel()

    sol = solve_ivp(rhs, (0, 2.0), x.ravel(), method="DOP853", rtol=1e-13, atol=1e-15, t_eval=times)
    pts = sol.y.T.reshape(-1, 3, 3)
    want = pts @ np.swapaxes(pts, 1, 2)
    # solve_gram: Radau IIA at rtol 1e-12, atol 1e-14 (its defaults); the reference DOP853 at 1e-13
    np.testing.assert_allclose(C.solve_gram(x @ x.T, w, kind, beta, times), want, atol=1e-10)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="masses"):
        C.pair_time(0.0, 0.5, -0.1, 0.5, "SA", 1.0)
    with pytest.raises(ValueError, match="masses"):
        C.pair_time(0.0, 0.5, 0.0, 0.0, "SA", 1.0)
    with pytest.raises(ValueError, match="rho"):
        C.pair_time(0.0, 1.5, 0.5, 0.5, "SA", 1.0)
    with pytest.raises(ValueError, match="angle"):
        C.merge_time(0.0, 0.5, 0.5, "SA", 1.0, angle=0.0)
    with pytest.raises(ValueError, match="beta"):
        C.pair_time(0.0, 0.5, 0.5, 0.5, "SA", float("nan"))
    with pytest.raises(ValueError, match="kind"):
        C.pair_time(0.0, 0.5, 0.5, 0.5, "XSA", 1.0)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_usa_gram_rate_at_large_beta_is_the_pair_rate():
    """The self term cancels analytically; computed, a_ii ~ e^β swamped the rest (ρ̇ came out 0
    at USA β = 700 and the Gram ODE never moved). The self term is not computed at all: its
    e^{β(1 − ρ)} overflowed (a RuntimeWarning users saw) before it was set to 0."""
    from meanfield_pde.theory.clusters import gram_rate, pair_rate
    for beta in (300.0, 500.0, 700.0):
        for rho in (-0.5, 0.0, 0.5, 0.9):
            g = np.array([[1.0, rho], [rho, 1.0]])
            got = gram_rate(g, [0.4, 0.6], "USA", beta)[0, 1]
            # both take e^{fl(βρ)}; the rest is a few products and 1 − ρ², of condition
            # (1 + ρ²)/(1 − ρ²)
            rel = (8 + 4 * (1 + rho**2) / (1 - rho**2)) * EPS
            assert got == pytest.approx(pair_rate(rho, 0.4, 0.6, "USA", beta), rel=rel)
            assert got > 0


@pytest.mark.slow
def test_solve_gram_reaches_the_merged_state_at_long_times():
    """The gap decays at a rate ~ e^β: a stiff problem that took an explicit method minutes
    to t = 1e6 (and never reached 1e300). G → all ones: the two clusters merge."""
    from meanfield_pde.theory.clusters import pair_time, solve_gram
    g0 = np.array([[1.0, -0.2], [-0.2, 1.0]])
    for kind, beta in (("SA", 5.0), ("USA", 5.0)):
        out = solve_gram(g0, [0.3, 0.7], kind, beta, [0.0, 1e6, 1e300])
        # the merged state to the solver's tolerance (atol 1e-14 on G_ij, rtol 1e-12), not round-off
        assert np.allclose(out[1:], 1.0, atol=1e-9), (kind, beta, out[:, 0, 1])
    # USA β = 700 from ρ = −0.2: the merge comes at t ≈ 9.4e57 (closed form, checked against
    # mpmath) within a window far below the float spacing of t there: a clear error, not the
    # silent unchanged G of before.
    assert pair_time(-0.2, -0.1, 0.3, 0.7, "USA", 700.0) > 1e57
    with pytest.raises(RuntimeError, match="solve_gram"):
        solve_gram(g0, [0.3, 0.7], "USA", 700.0, [0.0, 1e300])


def artanh_difference_error(rho0: float, rho: float) -> float:
    """Absolute bound on the difference of two evaluations of artanh(ρ) − artanh(ρ0): the package's
    ½(log(2 − g) − log g) at g = 1 − ρ (four logarithms, each within ε of its size, and the gap's
    rounding, ε|ρ| carried by d artanh/dρ = 1/(1 − ρ²)), numpy's arctanh (within 2 ulp each), and
    each side's subtraction (ε of the difference)."""
    logs = sum(abs(math.log(1.0 + r)) + abs(math.log(1.0 - r)) for r in (rho0, rho))
    gaps = sum(abs(r) / (1.0 - r * r) for r in (rho0, rho))
    numpy = 2 * (abs(np.arctanh(rho0)) + abs(np.arctanh(rho)))
    return (logs + gaps + numpy + 2 * abs(np.arctanh(rho) - np.arctanh(rho0))) * EPS


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).
# The two-cluster theory at its edges, found by trying every argument at its limits.

def test_pair_rate_near_antipodal_at_large_beta_has_no_overflow():
    """SA at β = 500 from ρ = −0.5: E = e^{β(1−ρ)} = e^{750} is beyond float range, and
    pair_rate raised OverflowError (a traceback) although ρ̇ is a modest number. ρ̇ =
    (1−ρ²)[w2/(w1 E + w2) + w1/(w2 E + w1)] (module doc); with w1 = 1e-300, w2 = 1 the
    first share is 1/(1 + e^{750 − 300 ln 10}) and the second below 1e-300."""
    import math
    from meanfield_pde.theory.clusters import pair_rate
    expected = 0.75 / (1.0 + math.exp(750.0 - 300.0 * math.log(10.0)))
    # the share is ≈ 1/E: e^x errs relatively by x's absolute error, ε·(750 + 300 ln 10) on each side
    # (the package's β(1 − ρ) and log of the weight, the test's exponent), a few ε more for the rest
    rel = (2 * (750 + 691) + 4) * EPS
    assert pair_rate(-0.5, 1e-300, 1.0, "SA", 500.0) == pytest.approx(expected, rel=rel)
    assert pair_rate(-1.0, 1.0, 1.0, "SA", 700.0) == 0.0  # the antipodal equilibrium
    assert pair_rate(-0.9, 1.0, 0.0, "SA", 700.0) == pytest.approx(1.0 - 0.81)  # w2 = 0: share 1


@pytest.mark.parametrize("beta", [5e-324, 2e-323])
def test_pair_time_at_subnormal_beta_is_the_beta_zero_time(beta):
    """At β = 5e-324 βδ underflows to 0 in Ei(βδ): USA returned NaN and SA inf. The rates
    differ from β = 0 by a factor 1 + O(β), so the time is the β = 0 one, artanh(ρ) − artanh(ρ0)
    over w1 + w2 (USA) or 1 (SA)."""
    from meanfield_pde.theory.clusters import pair_time_gap
    artanh = np.arctanh(0.9) - np.arctanh(0.5)
    tol = artanh_difference_error(0.5, 0.9)  # the factor 1 + O(β) is 1 in floating point
    assert pair_time_gap(0.5, 0.1, 1.0, 1.0, "USA", beta) == pytest.approx(artanh / 2.0, abs=tol / 2.0)
    assert pair_time_gap(0.5, 0.1, 1.0, 2.0, "SA", beta) == pytest.approx(artanh, abs=tol)


def test_sa_pair_time_depends_only_on_the_mass_ratio():
    """SA depends on the masses only through w1/w2 (module doc): masses 5e-324 each (p = w1 w2
    underflowed: 0/0) returned inf, masses 1e-200 and 1e200 (q overflowed) inf as well."""
    from meanfield_pde.theory.clusters import pair_time
    equal = pair_time(0.1, 0.9, 1.0, 1.0, "SA", 5.0)
    # w1/(w1 + w2) is 1/2 exactly at any scale of equal masses: the same operations follow
    assert pair_time(0.1, 0.9, 5e-324, 5e-324, "SA", 5.0) == equal
    # w1/w2 = 1e-400: the heavy cluster alone, ρ̇ = 1 − ρ² (the second share is 1)
    lone = np.arctanh(0.9) - np.arctanh(0.1)
    assert pair_time(0.1, 0.9, 1e-200, 1e200, "SA", 5.0) == pytest.approx(lone, abs=artanh_difference_error(0.1, 0.9))


@pytest.mark.parametrize("call", [
    lambda f: f.merge_time(0.99999, 1.0, 1.0, "XX", 5.0),      # starts merged: returned 0.0
    lambda f: f.merge_time(0.99999, -1.0, 1.0, "SA", 5.0),
    lambda f: f.pair_gap(0.0, 0.5, 1.0, 1.0, "SA", -5.0),       # t = 0: returned gap0
    lambda f: f.pair_gap(1.0, 2.0, float("nan"), 1.0, "SA", 5.0),  # equilibrium: returned gap0
    lambda f: f.solve_gram(np.eye(1), [1.0], "XX", 5.0, [0.0, 1.0]),  # k = 1: returned ones
])
def test_cluster_functions_check_every_argument_before_early_answers(call):
    from meanfield_pde.theory import clusters
    with pytest.raises(ValueError):
        call(clusters)


@pytest.mark.parametrize("gram", [[[1.0, np.nan], [np.nan, 1.0]], [[1.0, 5.0], [5.0, 1.0]],
                                  [[1.0, 0.5], [0.2, 1.0]], [[2.0, 0.5], [0.5, 1.0]]])
def test_gram_that_is_not_a_gram_matrix_is_refused(gram):
    """A NaN Gram matrix gave a NaN rate silently, |G_ij| = 5 a rate of −7.6e16."""
    from meanfield_pde.theory.clusters import gram_rate, solve_gram
    with pytest.raises(ValueError, match="gram"):
        gram_rate(gram, [1.0, 1.0], "USA", 7.0)
    with pytest.raises(ValueError, match="gram0"):
        solve_gram(gram, [1.0, 1.0], "USA", 7.0, [0.0, 1.0])


def test_solve_gram_with_a_nan_time_is_refused_not_a_hang():
    """times = [0, nan] passed the checks (NaN < 0 is False) and solve_ivp looped for ever;
    in a subprocess so that the original code fails by its timeout instead of hanging."""
    import subprocess
    import sys
    code = ("import numpy as np\nfrom meanfield_pde.theory.clusters import solve_gram\n"
            "try:\n    solve_gram(np.array([[1, .5], [.5, 1]]), [1, 1], 'SA', 5.0, [0.0, float('nan')])\n"
            "except ValueError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused: times" in out.stdout, out.stderr
