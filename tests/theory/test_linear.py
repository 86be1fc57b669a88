"""meanfield_pde.theory.linear against independent Bessel functions, the PDE right-hand side,
the published fastest modes, and a direct check of the cluster-position derivation."""

import mpmath
import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.theory import linear

from helpers.bounds import EPS, SMALL_BETA_LEAD, linear_response_rounding, ive_error, rate_tolerance, reference_sigma


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [1e-3, 0.5, 2.0, 10.0, 50.0, 300.0])
@pytest.mark.parametrize("nu", [0.0, 0.1])
def test_growth_rates_match_scipy(manifold, kind, beta, nu):
    lmax = 30
    sigma = linear.growth_rates(kind, beta, nu, lmax, manifold)
    assert sigma.shape == (lmax + 1,) and sigma[0] == 0.0
    l = np.arange(1, lmax + 1)
    ref = reference_sigma(kind, beta, nu, l, manifold)
    # skip values scipy itself underflows (tiny β, high l): their truth is ~0 anyway
    ok = np.abs(ref) > 1e-280
    assert np.all(np.abs(sigma[1:] - ref)[ok] <= rate_tolerance(kind, beta, nu, l, manifold)[ok])


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_growth_rates_at_beta_700_match_mpmath(manifold, kind):
    beta, lmax = 700.0, 40
    sigma = linear.growth_rates(kind, beta, 0.0, lmax, manifold)
    assert np.all(np.isfinite(sigma))
    b = mpmath.mpf(beta)
    if manifold == "sphere":
        bessel = lambda l: mpmath.sqrt(mpmath.pi / (2 * b)) * mpmath.besseli(l + 0.5, b)
        eig = lambda l: l * (l + 1)
    else:
        bessel = lambda l: mpmath.besseli(l, b)
        eig = lambda l: l * l
    norm = bessel(0) if kind == "SA" else 1
    shift = 0.5 if manifold == "sphere" else 0.0
    for l in (1, 2, 5, 14, 40):
        # ive_error of λ_l (and λ_0, SA), e^β (βε), a few products; mpmath's 53-bit products
        rel = (ive_error(l + shift, beta) + ive_error(shift, beta) * (kind == "SA") + beta + 20) * EPS
        assert sigma[l] == pytest.approx(float(eig(l) * bessel(l) / (b * norm)), rel=rel)
    if kind == "USA":
        assert sigma[1] > 1e297  # ~ e^β/β^{3/2}: huge but finite


@pytest.mark.parametrize("manifold,first", [("sphere", 1 / 3), ("circle", 1 / 2)])
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_beta_zero_limit(manifold, first, kind):
    sigma = linear.growth_rates(kind, 0.0, 0.0, 6, manifold)
    eig1 = 2.0 if manifold == "sphere" else 1.0
    # λ_1/β from the small-β series (SMALL_BETA_LEAD), over λ_0 for SA and × l(l+1): 4 roundings;
    # l >= 2: e^{−inf} = 0 exactly
    rel = (SMALL_BETA_LEAD + 4) * EPS
    np.testing.assert_allclose(sigma, [0, eig1 * first, 0, 0, 0, 0, 0], rtol=rel, atol=0)
    assert linear.critical_noise(kind, 0.0, manifold) == pytest.approx(first, rel=rel)
    # continuity: small β approaches the β = 0 values (the series' next term, β²/10)
    small = linear.growth_rates(kind, 1e-8, 0.0, 1, manifold)[1]
    assert small == pytest.approx(eig1 * first, rel=rel + 1e-8**2)


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta,lstar", [(2, 2), (5, 3), (10, 4), (20, 6), (50, 10), (100, 14)])
def test_fastest_mode_sphere(kind, beta, lstar):
    assert linear.fastest_mode(kind, beta) == lstar


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta,kstar", [(5, 3), (7, 4)])
def test_fastest_mode_circle(kind, beta, kstar):
    assert linear.fastest_mode(kind, beta, manifold="circle") == kstar


def test_fastest_mode_auto_lmax_is_large_enough():
    for beta in (0.0, 0.3, 3.0, 30.0, 300.0, 700.0):
        auto = linear.fastest_mode("SA", beta)
        assert auto == linear.fastest_mode("SA", beta, lmax=400)
    # above the critical noise nothing grows and the least damped mode is l = 1
    nu = 1.01 * linear.critical_noise("SA", 10.0)
    assert linear.fastest_mode("SA", 10.0, nu=nu) == 1


@pytest.mark.parametrize("beta", [0.5, 3.0, 20.0, 700.0])
def test_critical_noise(beta):
    b = mpmath.mpf(beta)
    i = lambda l: mpmath.sqrt(mpmath.pi / (2 * b)) * mpmath.besseli(l + 0.5, b)
    # ive_error of λ_1 (and λ_0, SA), e^β (βε), a few products; mpmath's 53-bit products
    rel = (ive_error(1.5, beta) + ive_error(0.5, beta) + beta + 20) * EPS
    assert linear.critical_noise("USA", beta) == pytest.approx(float(i(1) / b), rel=rel)
    assert linear.critical_noise("SA", beta) == pytest.approx(float(i(1) / (b * i(0))), rel=rel)
    assert linear.critical_noise("USA", beta, "circle") == pytest.approx(
        float(mpmath.besseli(1, b) / b), rel=(ive_error(1.0, beta) + beta + 20) * EPS)
    # the threshold is where σ_1 changes sign, and all modes are stable above it
    for kind in ("SA", "USA"):
        nu1 = linear.critical_noise(kind, beta)
        assert linear.growth_rates(kind, beta, nu1 * (1 - 1e-9), 50)[1] > 0
        assert np.all(linear.growth_rates(kind, beta, nu1 * (1 + 1e-9), 50)[1:] < 0)


@pytest.mark.parametrize("kind,beta,nu", [("SA", 5.0, 0.0), ("USA", 2.0, 0.05), ("SA", 20.0, 0.02)])
def test_growth_rates_match_pde_rhs(kind, beta, nu):
    """Central difference of MeanFieldModel.rhs about uniform ± ε Y_l0 gives σ_l."""
    g = Sphere(16)
    model = MeanFieldModel.funk_hecke(g, kind, beta, nu)
    sigma = linear.growth_rates(kind, beta, nu, 16)
    base = g.zeros_coef()
    base[0] = 1 / np.sqrt(4 * np.pi)
    eps = 1e-5 * base[0].real
    for l in range(1, 11):
        d = g.zeros_coef()
        d[g.index(l, 0)] = eps
        response = (model.rhs(base + d) - model.rhs(base - d)) / (2 * eps)
        # rel: the central difference's O(eps²) truncation; abs: its rounding where σ_l cancels
        floor = linear_response_rounding(g, l, sigma[l], nu)
        assert response[g.index(l, 0)].real == pytest.approx(sigma[l], rel=1e-8, abs=floor), l


@pytest.mark.parametrize("k,c", [(1, 1.0), (3, 0.2 - 0.7j), (4, -1.0 + 1e-3j),
                                 (5, -0.3 - 0.01j), (7, 2j)])
def test_predicted_cluster_positions_are_the_maxima(k, c):
    """Build f = 1/2π + ε Re(c e^{ikθ}), check μ̂_k = ∫ f e^{−ikθ} = π ε c and that the
    predicted angles are exactly the local maxima of f."""
    n, eps = 4096, 1e-2
    theta = 2 * np.pi * np.arange(n) / n
    f = 1 / (2 * np.pi) + eps * np.real(c * np.exp(1j * k * theta))
    mu_k = np.sum(f * np.exp(-1j * k * theta)) * (2 * np.pi / n)  # exact for trig polynomials
    # numpy's pairwise sum of n terms ((log2 n + 16)ε) of sizes |f_j|, e^{−ikθ_j} at arguments within
    # 2kθε <= 4πkε, relative to |μ_k| (the sum cancels down to it)
    size = np.sum(np.abs(f)) * (2 * np.pi / n)
    rel = (np.log2(n) + 16 + 4 * np.pi * k + 4) * EPS * size / abs(np.pi * eps * c)
    assert mu_k == pytest.approx(np.pi * eps * c, rel=rel)
    pred = linear.predicted_cluster_positions(mu_k, k)
    assert pred.shape == (k,) and np.all(np.diff(pred) > 0)
    assert np.all((pred >= 0) & (pred < 2 * np.pi))
    # maxima of f, refined by a parabola through the three grid points around each peak
    peaks = np.flatnonzero((f > np.roll(f, 1)) & (f >= np.roll(f, -1)))
    fm, f0, fp = np.roll(f, 1)[peaks], f[peaks], np.roll(f, -1)[peaks]
    found = np.sort(np.mod(theta[peaks] + 0.5 * (fm - fp) / (fm - 2 * f0 + fp) * (2 * np.pi / n),
                           2 * np.pi))
    assert len(found) == k
    dist = np.abs(np.angle(np.exp(1j * (found - pred))))
    assert np.max(dist) < 1e-6
    # any positive normalisation (e.g. 1/2π) gives the same positions
    np.testing.assert_allclose(linear.predicted_cluster_positions(mu_k / (2 * np.pi), k), pred)


@pytest.mark.parametrize("call,name", [
    (lambda: linear.growth_rates("XA", 1.0, 0.0, 4), "kind"),
    (lambda: linear.growth_rates("SA", 701.0, 0.0, 4), "beta"),
    (lambda: linear.growth_rates("SA", -1.0, 0.0, 4), "beta"),
    (lambda: linear.growth_rates("SA", 1.0, -0.1, 4), "nu"),
    (lambda: linear.growth_rates("SA", 1.0, 0.0, -1), "lmax"),
    (lambda: linear.growth_rates("SA", 1.0, 0.0, 4, "torus"), "manifold"),
    (lambda: linear.fastest_mode("SA", 1.0, lmax=0), "lmax"),
    (lambda: linear.critical_noise("USA", float("nan")), "beta"),
    (lambda: linear.predicted_cluster_positions(0.0, 3), "coef_k_star"),
    (lambda: linear.predicted_cluster_positions(1.0, 0), "k_star"),
    (lambda: linear.predicted_cluster_positions(1.0, 2.5), "k_star"),
])
def test_errors_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

@pytest.mark.parametrize("call", [
    lambda lin: lin.growth_rates("SA", 5.0, 0.0, 10**9),
    lambda lin: lin.fastest_mode("SA", 5.0, lmax=10**9),
])
def test_growth_rates_refuse_an_absurd_lmax_before_allocating(call):
    """lmax = 10**9 built several arrays of 8 GB (the process took the machine's memory or ran
    for minutes); a clear error names lmax and the largest accepted value."""
    from meanfield_pde.theory import linear
    with pytest.raises(mf.ConfigError, match=r"lmax = 1000000000: must be an integer in \[.*, 1000000\]"):
        call(linear)
    assert linear.growth_rates("SA", 5.0, 0.0, 10**6).shape == (10**6 + 1,)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_predicted_cluster_positions_takes_a_coefficient_from_a_run():
    from meanfield_pde.theory.linear import predicted_cluster_positions
    # f = 1/2π + ε cos(3θ + φ): μ̂_3 = π ε e^{iφ}, maxima at θ_j = (2πj − φ)/3
    phi = 0.3
    expected = np.sort(np.mod((2 * np.pi * np.arange(3) - phi) / 3, 2 * np.pi))
    for c in (np.exp(1j * phi), np.array([np.exp(1j * phi)]), np.array(np.exp(1j * phi))):
        # np.angle(e^{iφ}) is φ within 2εφ; then the same operations on both sides, whose two
        # roundings (−, /3) may fall apart: within 2ε of the angles
        np.testing.assert_allclose(predicted_cluster_positions(c, 3), expected, rtol=2 * EPS)
    for bad in (np.array([1j, 2j]), "abc", None):  # a 1-d array was a TypeError
        with pytest.raises(ValueError, match="coef_k_star"):
            predicted_cluster_positions(bad, 3)
