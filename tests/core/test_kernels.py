"""Funk–Hecke multipliers against an independent computation (acceptance 2)."""

import mpmath
import numpy as np
import pytest

from meanfield_pde.core.kernels import gradient_multipliers, ratio_multipliers, scaled_multipliers

from helpers.bounds import EPS, SMALL_BETA_LEAD, ive_error

mpmath.mp.dps = 40


def lambda_series(beta, l):
    """e^{−β} · 2π ∫_{-1}^{1} e^{βt} P_l(t) dt from the power series of e^{βt}.

    ∫ t^n P_l dt = 2^{l+1} n! ((n+l)/2)! / (((n−l)/2)! (n+l+1)!) for n >= l, n − l even
    (Gradshteyn & Ryzhik 7.126.2); every term is positive, so no cancellation.
    """
    b = mpmath.mpf(beta)
    total, n = mpmath.mpf(0), l
    while True:
        moment = (2 ** (l + 1) * mpmath.factorial(n) * mpmath.factorial((n + l) // 2)
                  / (mpmath.factorial((n - l) // 2) * mpmath.factorial(n + l + 1)))
        term = b**n / mpmath.factorial(n) * moment
        total += term
        if n > l + 10 and term < total * mpmath.mpf(10) ** (-35):
            break
        n += 2
    return 2 * mpmath.pi * total * mpmath.exp(-b)


@pytest.mark.slow
@pytest.mark.parametrize("beta", [1e-6, 0.5, 5.0, 50.0, 500.0])
def test_scaled_multipliers_match_series(beta):
    ours = scaled_multipliers(beta, 60)
    checked = 0
    for l in range(61):
        exact = lambda_series(beta, l)
        if exact < mpmath.mpf("1e-290"):
            continue
        # 4π √(π/2β) ive(l + ½, β): ive_error, the root and three products (5ε)
        rel = (ive_error(l + 0.5, beta) + 5) * EPS
        assert abs(ours[l] - float(exact)) <= rel * float(exact), (beta, l, ours[l], exact)
        checked += 1
    assert checked >= 40 if beta >= 0.5 else checked >= 30


def test_no_overflow_up_to_beta_700():
    for beta in (300.0, 699.0, 700.0):
        g = gradient_multipliers(beta, 200)
        assert np.all(np.isfinite(g)) and np.all(g[1:] > 0)
        r = ratio_multipliers(beta, 200)
        assert np.all(np.isfinite(r)) and r[0] == 1.0 and np.all(np.diff(r) < 0)


def test_beta_to_zero_limit_of_lambda_over_beta():
    """λ_1/β → 4π/3, λ_l/β → 0 (l >= 2) on S²; exact value at β = 0 equals the limit."""
    at_zero = gradient_multipliers(0.0, 5)
    assert at_zero[1] == pytest.approx(4 * np.pi / 3, rel=(SMALL_BETA_LEAD + 2) * EPS)
    assert np.all(at_zero[2:] == 0.0)
    small = gradient_multipliers(1e-9, 5)
    # the series' next term, β²/10, and the same roundings
    assert small[1] == pytest.approx(4 * np.pi / 3, rel=1e-18 + (SMALL_BETA_LEAD + 3) * EPS)
    assert np.all(small[2:] < 1e-8)
    # divided by λ_0 = 4π(1 + 0): 3 roundings more
    assert gradient_multipliers(0.0, 5, normalise=True)[1] == pytest.approx(
        1 / 3, rel=(SMALL_BETA_LEAD + 4) * EPS)


def test_kernel_tail_estimate():
    """λ_l/λ_0 ≈ exp(−l(l+1)/2β) for l ≪ β (docs/mathematics/model.md (Funk–Hecke multipliers))."""
    beta = 400.0
    l = np.arange(0, 12)
    r = ratio_multipliers(beta, 11)
    # l = 0: log(λ_0/λ_0) = log 1 = 0 exactly, as is the right side
    np.testing.assert_allclose(np.log(r), -l * (l + 1) / (2 * beta), rtol=0.05, atol=0)


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
@pytest.mark.parametrize("normalise", [False, True])
def test_small_beta_series_is_continuous_and_does_not_underflow(manifold, normalise):
    from meanfield_pde.core.kernels import SMALL_BETA
    below = gradient_multipliers(SMALL_BETA * (1 - 1e-12), 6, manifold, normalise)
    above = gradient_multipliers(SMALL_BETA * (1 + 1e-12), 6, manifold, normalise)
    # λ_l/β ∝ β^{l−1}: the two β differ by a factor (1 + 1e-12)/(1 − 1e-12), so the values by
    # that to the power l − 1; and the round-off of the series (below) and of the ive route
    # (above: ive_error of λ_l and, normalised, of λ_0; 6 roundings)
    l = np.arange(1, 4)
    nu = l + (0.5 if manifold == "sphere" else 0.0)
    model = ((1 + 1e-12) / (1 - 1e-12)) ** (l - 1) - 1
    roundoff = EPS * (SMALL_BETA_LEAD + 2 + np.array([ive_error(v, SMALL_BETA) for v in nu])
                      + ive_error(nu[0] - 1, SMALL_BETA) + 6)
    assert np.all(np.abs(below[1:4] / above[1:4] - 1) <= model + roundoff)
    tiny = gradient_multipliers(1e-250, 3, manifold, normalise)
    # at β = 1e-250 the series' correction 1 + β²/… rounds to 1 and l = 1 takes no power of β:
    # the operations of β = 0, bit for bit
    assert tiny[1] == gradient_multipliers(0.0, 3, manifold, normalise)[1]


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
@pytest.mark.parametrize("beta", [0.3, 5.0, 80.0, 650.0])
def test_kernel_truncation_error_against_closed_forms(manifold, beta):
    """The squared L² norm of e^{β⟨x,·⟩} is known in closed form: 4π sinh(2β)/(2β) on S²,
    2π I_0(2β) on S¹. Parseval on the truncation: error² = 1 − (Σ_{l≤L} power)/norm²."""
    from scipy.special import ive

    from meanfield_pde.core.kernels import kernel_truncation_error
    L = 40
    lam = scaled_multipliers(beta, L, manifold)  # e^{−β} λ_l
    l = np.arange(L + 1)
    if manifold == "sphere":
        head = np.sum((2 * l + 1) / (4 * np.pi) * lam**2)
        norm2 = 4 * np.pi * (1 - np.exp(-4 * beta)) / (4 * beta)  # e^{−2β} · 4π sinh(2β)/(2β)
    else:
        head = np.sum(np.where(l == 0, 1.0, 2.0) * lam**2) / (2 * np.pi)
        norm2 = 2 * np.pi * ive(0, 2 * beta)  # e^{−2β} · 2π I_0(2β)
    # squared: the closed form loses digits (1 − head/norm2) when the error is tiny: head, 41
    # positive terms (41ε), each λ_l² within 2·ive_error, norm2 within ive_error(0, 2β) (S¹) or
    # 4β + 4 roundings (S²) make an absolute error (head/norm2 <= 1); the package's tail/total,
    # sums of n = L + 40 + 12√β positive terms with the same λ_l² errors, a relative one
    n = int(L + 40 + 12 * np.sqrt(max(beta, 1.0)))
    shift = 0.5 if manifold == "sphere" else 0.0
    head_err = 2 * max(ive_error(v + shift, beta) for v in range(L + 1)) + 4
    tail_err = 2 * max(ive_error(v + shift, beta) for v in range(n + 1)) + 4
    norm_err = ive_error(0.0, 2 * beta) if manifold == "circle" else 4 * beta + 4
    got = kernel_truncation_error(beta, L, manifold) ** 2
    tol = EPS * (L + 1 + head_err + norm_err + 2) + EPS * (2 * n + 2 * tail_err) * got
    assert got == pytest.approx(1.0 - head / norm2, rel=0, abs=tol)


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
@pytest.mark.parametrize("beta", [1e-308, 1e-200, 1e-12])
def test_subnormal_beta_gives_the_series_not_nan(manifold, beta):
    """At β → 0: λ_0 → |S|, λ_1 ≈ β·(4π/3 on S², π on S¹), λ_l/λ_0 = O(β^l) (A&S 10.2.5, 9.6.10);
    √(π/2β) overflows at subnormal β, so a naive evaluation gives inf·0 = NaN."""
    area, slope = (4 * np.pi, 4 * np.pi / 3) if manifold == "sphere" else (2 * np.pi, np.pi)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is right
        s = scaled_multipliers(beta, 6, manifold)
        r = ratio_multipliers(beta, 6, manifold)
    # e^{−β}λ_0, λ_0 = area·(1 + β²/6 or β²/4): 3 roundings, the β² term below ε
    assert s[0] == pytest.approx(area * np.exp(-beta), rel=3 * EPS + beta**2) and r[0] == 1.0
    # e^{−β}·β·(λ_1/β): the series' lead (SMALL_BETA_LEAD), 3 products; slope·β·e^{−β}: 3 more
    assert s[1] == pytest.approx(slope * beta * np.exp(-beta), rel=(SMALL_BETA_LEAD + 6) * EPS + beta**2)
    assert np.all(np.isfinite(s)) and np.all(s[2:] <= beta**2)
