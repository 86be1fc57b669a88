"""Zonal densities on S^{d−1}: the Gegenbauer basis, the Gauss–Jacobi grid, the
operators, and the linear theory in any dimension, against closed forms."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.special import sph_harm_y

from meanfield_pde import ConfigError
from meanfield_pde.core.geometry import ZonalSphere, make_geometry
from meanfield_pde.core.geometry.zonal import gegenbauer_normalised
from meanfield_pde.theory.linear import critical_noise, fastest_mode, growth_rates

from helpers.bounds import EPS

DIMS = (2, 3, 4, 8, 64, 512, 4096)


def test_dimension_three_is_the_zonal_part_of_the_sphere():
    """p_l = √(4π) Y_l0 (orthonormal on S² of area 4π; the zonal measure has mass 1)."""
    g = ZonalSphere(30, 3)
    theta = np.arccos(g.t)
    y = sph_harm_y(g.degree[None, :], 0, theta[:, None], 0.0).real
    # two recurrences of l steps, 3 roundings a step: 3lε of p_l(1) = √(2l + 1) each; scipy's at
    # θ = arccos t, which moves t by <= θ sin θ·ε: |p_l'| times that; × √(4π) and its rounding: 2ε
    _, dp = gegenbauer_normalised(g.t, 30, 3, derivative=True)
    l = g.degree
    bound = EPS * (6 * l * np.sqrt(2 * l + 1) + np.abs(dp) * (theta * np.sin(theta))[:, None]
                   + 2 * np.abs(g._p))
    assert np.all(np.abs(g._p - math.sqrt(4 * math.pi) * y) <= bound)


def test_dimension_two_is_the_even_part_of_the_circle():
    """p_0 = 1, p_l = √2 cos(lθ) (Chebyshev T_l, orthonormal for dθ/π on [0, π])."""
    g = ZonalSphere(30, 2)
    theta = np.arccos(g.t)
    ref = np.sqrt(2.0) * np.cos(np.multiply.outer(theta, g.degree))
    ref[:, 0] = 1.0
    # the recurrence: 3lε of p_l(1) = √2; cos(lθ): θ = arccos t within θε, times l (ε more):
    # the argument within 2lθε, cos adds ε, √2 one rounding
    l, theta = g.degree, theta[:, None]
    bound = math.sqrt(2) * EPS * (3 * l + 2 * l * theta + 2)
    assert np.all(np.abs(g._p - ref) <= bound)


@pytest.mark.parametrize("d", DIMS)
def test_value_at_the_pole_is_the_root_of_the_harmonic_dimension(d):
    """p_l(1)² = dim H_l(S^{d−1}) = (2l+d−2)/(l+d−2) · C(l+d−2, l) (addition theorem)."""
    lmax = 40
    p = gegenbauer_normalised(np.array([1.0, -1.0]), lmax, d)
    l = np.arange(lmax + 1)
    log_dim = np.array([math.log(2 * k + d - 2) - math.log(k + d - 2) + math.lgamma(k + d - 1)
                        - math.lgamma(k + 1) - math.lgamma(d - 1) if k else 0.0 for k in l])
    # p_l(1) from l recurrence steps (3lε relative: 6lε in 2 log); log dim: three ln Γ (within
    # 2ε of their size each: CPython's lgamma, ~1 ulp measured), two logs and four sums
    lg = np.array([math.lgamma(k + d - 1) + math.lgamma(k + 1) + math.lgamma(d - 1) for k in l])
    bound = EPS * (6 * l + 2 * lg + 4 * np.abs(log_dim) + 8)
    assert np.all(np.abs(2 * np.log(p[0]) - log_dim) <= bound)
    # parity: the recurrence at −1 is the one at 1 with signs flipped, rounding symmetric: exact
    np.testing.assert_array_equal(p[1], (-1.0) ** l * p[0])


@pytest.mark.parametrize("d", DIMS)
def test_laplacian_from_gradient_and_divergence(d):
    """div ∇ p_l = −l(l+d−2) p_l exactly on the grid (the weak form and the 3/2 rule)."""
    g = ZonalSphere(24, d)
    for l in range(g.lmax + 1):
        c = g.zeros_coef()
        c[l] = 1.0
        lap = g.divergence(g.gradient(c))
        expected = np.zeros(g.ncoef)
        expected[l] = -l * (l + d - 2)
        # lap_k = Σ_j div_kj ∂_θ p_l(t_j): N products (Nε of their sum of sizes), each factor from
        # <= L recurrence steps (3Lε each)
        scale = np.abs(g._div) @ np.abs(g._dtheta[:, l])
        assert np.all(np.abs(lap.real - expected) <= (g.npoints + 6 * g.lmax + 4) * EPS * scale)
        assert g.laplacian[l] == -l * (l + d - 2)  # small integers: exact


@pytest.mark.parametrize("d", DIMS)
def test_gradient_of_the_height_is_minus_sin_theta(d):
    """g = t = cos θ: ∂_θ g = −sin θ = −√(1 − t²)."""
    g = ZonalSphere(8, d)
    coef = g.analysis(g.t)
    # t = p_1/√d: f_1 = Σ_j w_j t_j p_1(t_j), N positive terms (Nε) with weights normalised by their
    # N-term sum (Nε), p_1 = t/a_1 and a_1 = √(1/d) (3ε), the product and 1/√d (3ε)
    n = g.npoints
    np.testing.assert_allclose(coef.real[1], 1 / math.sqrt(d), rtol=(2 * n + 6) * EPS)
    # ∂_θ Σ_l f_l p_l: the f_l are N-term sums (within (N + 2)ε of Σ_j w_j |t_j p_l(t_j)|), times
    # ∂_θ p_l (3Lε, the recurrence) summed over L + 1 degrees; −√(1 − t²) errs by
    # ε(1 + t²)/√(1 − t²)
    scale = np.abs(g._dtheta) @ (np.abs(g._wp) @ np.abs(g.t))
    bound = (n + 4 * g.lmax + 4) * EPS * scale + 2 * EPS * (1 + g.t**2) / np.sqrt(1 - g.t**2)
    assert np.all(np.abs(g.gradient(coef)[0] + np.sqrt(1 - g.t**2)) <= bound)


@pytest.mark.parametrize("d", DIMS)
def test_divergence_of_a_flux_is_the_exact_weighted_derivative(d):
    """div(f ∇h) for f = 1 + t, h = t²: w⁻¹ d/dt[w (1−t²) f h'] with w = (1−t²)^{(d−3)/2}
    equals, by hand, (1−t²)(2 + 4t) − (d−1) t (1+t) 2t ... projected on degrees <= L."""
    g = ZonalSphere(12, d)
    t = g.t
    f, hp = 1 + t, 2 * t
    # d/dt[(1−t²)^{(d−1)/2} F]/(1−t²)^{(d−3)/2} = (1−t²) F' − (d−1) t F, F = f h'
    F, Fp = f * hp, 2 + 4 * t
    exact = (1 - t**2) * Fp - (d - 1) * t * F
    u = f * g.gradient(g.analysis(t**2))[0]
    # both sides are N-term quadrature sums (Nε of Σ_j |w_j ...|); u carries the analysis (N terms),
    # the gradient (L + 1 terms, 3Lε recurrence) and f (2ε): within (N + 4L + 4)ε of U; the
    # closed form's terms within 6ε of their sizes
    n, L = g.npoints, g.lmax
    U = np.abs(f) * (np.abs(g._dtheta) @ (np.abs(g._wp) @ t**2))
    X = np.abs((1 - t**2) * Fp) + np.abs((d - 1) * t * F)
    bound = (2 * n + 4 * L + 6) * EPS * (np.abs(g._div) @ U + np.abs(g._wp) @ X)
    assert np.all(np.abs(g.divergence((u,)).real - g.analysis(exact).real) <= bound)


@pytest.mark.parametrize("d", DIMS)
def test_quadrature_integrates_the_von_mises_fisher_normaliser(d):
    """∫ e^{κt} dσ̄ = ₀F₁(; d/2; κ²/4) = Γ(d/2)(2/κ)^{d/2−1} I_{d/2−1}(κ) (mpmath)."""
    kappa = 0.5 * math.sqrt(d)
    g = ZonalSphere(40, d)
    ref = float(mp.hyp0f1(mp.mpf(d) / 2, mp.mpf(kappa) ** 2 / 4))
    # N positive terms w_j e^{κ t_j} (Nε), the weights normalised by their sum (Nε), e^{κt} within
    # (κ + 1)ε; the reference rounded once
    rel = (2 * g.npoints + kappa + 3) * EPS
    assert g.integrate(np.exp(kappa * g.t)) == pytest.approx(ref, rel=rel)


def vmf_error(d: int, kappa0: float, lmax: int) -> float:
    """Relative L²(dσ̄) error of the degree-lmax representation of e^{κt}, κ = κ0 √d (a bump
    of width 1 at s = t√d ≈ κ0 for large d): coefficients by the solver's own quadrature
    (``analysis`` on its ⌊3L/2⌋+1 nodes, aliasing included), the error measured with a
    160-node rule on which both are exact to round-off."""
    kappa = kappa0 * math.sqrt(d)
    coarse, fine = ZonalSphere(lmax, d), ZonalSphere(106, d)
    c = coarse.analysis(np.exp(kappa * coarse.t)).real
    f = np.exp(kappa * fine.t)
    approx = gegenbauer_normalised(fine.t, lmax, d) @ c
    return math.sqrt(fine.integrate((f - approx) ** 2) / fine.integrate(f**2))


def degrees_needed(d: int, kappa0: float, tol: float = 1e-10) -> int:
    return next(L for L in range(2, 100) if vmf_error(d, kappa0, L) < tol)


@pytest.mark.parametrize("kappa0", (0.5, 2.0))
def test_degrees_needed_do_not_grow_with_the_dimension(kappa0):
    """The Gauss–Jacobi nodes follow the mass (width d^{−1/2} in t) by themselves, so the
    degree a vMF bump of fixed shape in s = t√d needs is bounded in d: its coefficients are
    c_l = λ̄_l(κ) p_l(1) → κ0^l/√(l!) (the Hermite limit of the Gegenbauer basis) as d → ∞.
    A basis blind to the weight would need L ∝ √d (37× more at d = 4096 than at d = 3).
    (s is a linear change of variable: polynomials in s and t are the same space, so the
    rescaled variable changes nothing in a polynomial spectral method.)"""
    needed = {d: degrees_needed(d, kappa0) for d in (3, 512, 4096)}
    # measured: κ0 = 0.5: 9, 14, 14; κ0 = 2: 15, 32, 34 (√d scaling would give ×2.8 from
    # 512 to 4096 and ×13 from 3 to 512)
    assert needed[4096] <= 1.25 * needed[512], needed
    assert needed[512] <= 2.5 * needed[3], needed


def test_make_geometry_builds_the_zonal_sphere_and_refuses_bad_sizes():
    g = make_geometry("sphere_zonal", 10, dimension=64)
    assert isinstance(g, ZonalSphere) and g.dimension == 64 and g.npoints == 16
    with pytest.raises(ValueError, match="domain.dimension"):
        make_geometry("sphere_zonal", 10, dimension=5000)
    with pytest.raises(ValueError, match="domain.lmax"):
        ZonalSphere(1, 8)
    with pytest.raises(ValueError, match="domain.lmax = 500: too large"):
        ZonalSphere(500, 4096)


# -- linear theory in any dimension --------------------------------------------------
@pytest.mark.parametrize("kind", ("SA", "USA"))
def test_growth_rates_in_dimensions_two_and_three_are_todays(kind):
    for beta, nu in ((0.0, 0.1), (3.0, 0.0), (50.0, 0.2), (700.0, 0.0)):
        assert np.array_equal(growth_rates(kind, beta, nu, 30, dimension=3),
                              growth_rates(kind, beta, nu, 30))
        assert np.array_equal(growth_rates(kind, beta, nu, 30, "sphere", dimension=2),
                              growth_rates(kind, beta, nu, 30, "circle"))
        assert critical_noise(kind, beta, dimension=3) == critical_noise(kind, beta)
        assert fastest_mode(kind, beta, nu, dimension=2) == fastest_mode(kind, beta, nu, "circle")


@pytest.mark.parametrize("d", (4, 8, 64, 512))
@pytest.mark.parametrize("kind", ("SA", "USA"))
def test_growth_rates_in_any_dimension_against_mpmath(kind, d):
    """σ_l = l(l+d−2)[λ_l/(β|S^{d−1}|) − ν] (USA), l(l+d−2)[λ_l/(βλ_0) − ν] (SA), with
    λ_l/|S^{d−1}| = Γ(d/2)(2/β)^{d/2−1} I_{l+d/2−1}(β) in mpmath."""
    beta, nu, lmax = 7.0, 0.01, 12
    with mp.workdps(30):  # at 53 bits (2/β)^{d/2−1} alone would err by (d/2 − 1)ε/2
        lam = [mp.gamma(mp.mpf(d) / 2) * (2 / mp.mpf(beta)) ** (mp.mpf(d) / 2 - 1)
               * mp.besseli(l + mp.mpf(d) / 2 - 1, beta) for l in range(lmax + 1)]
        kern = [x / beta / (lam[0] if kind == "SA" else 1) for x in lam]
        ref = np.array([float(l * (l + d - 2) * (kern[l] - nu)) if l else 0.0
                        for l in range(lmax + 1)])
    got = growth_rates(kind, beta, nu, lmax, "sphere_zonal", d)
    # the kernel part is e^{Y_l}, Y_l summed from (l − 1) ln β, Σ_{j<l} ln(d + 2j) and log ₀F₁ (a sum
    # of 2β + 60 positive terms), less the same at l = 0 for SA, each within ε of its size; then
    # − ν and × l(l + d − 2) (3ε of |κ_l| + ν, so the cancellation near κ_l = ν is counted)
    l = np.arange(lmax + 1)
    pieces = np.array([(k + 1) * math.log(beta) + sum(math.log(d + 2 * j) for j in range(k))
                       for k in l]) + 2 * beta + 60
    kernel = np.array([float(x) for x in kern])
    bound = l * (l + d - 2) * EPS * (2 * pieces * kernel + 3 * (kernel + nu)) + EPS * np.abs(ref)
    assert np.all(np.abs(got - ref) <= bound)
    assert np.array_equal(got, growth_rates(kind, beta, nu, lmax, "sphere", d))


@pytest.mark.parametrize("d", (2, 3, 8, 512, 4096))
def test_critical_noise_at_zero_beta_is_one_over_d(d):
    """λ_1/(β|S^{d−1}|) → 1/d as β → 0 (λ_1 = 2π^{d/2}(β/2)/Γ(1+d/2))."""
    for kind in ("SA", "USA"):
        # e^{−ln d} (the zonal logarithms: (ln d + 1)ε) or λ_1/(β|S|) of S¹, S² (3 roundings)
        assert critical_noise(kind, 0.0, "sphere", d) == pytest.approx(1 / d, rel=(math.log(d) + 4) * EPS)


def test_fastest_mode_moves_to_higher_degree_as_beta_grows_past_the_dimension():
    """σ_l ∝ l(l+d−2) exp(−l(l+d−2)/2β) for large β: l* ≈ argmax, one for β ≲ d."""
    assert fastest_mode("USA", 5.0, dimension=512) == 1
    ls = [fastest_mode("SA", b, dimension=64) for b in (10.0, 100.0, 400.0, 700.0)]
    assert ls == sorted(ls) and ls[-1] > 1


def test_zonal_manifold_needs_a_dimension():
    with pytest.raises(ValueError, match="dimension"):
        growth_rates("SA", 1.0, 0.0, 4, "sphere_zonal")
    with pytest.raises(ValueError, match="circle has d = 2"):
        growth_rates("SA", 1.0, 0.0, 4, "circle", 3)


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

@pytest.mark.slow  # the bisection in d = 4096: ~3 s of CPU, 12 s on a busy machine
def test_the_largest_lmax_in_d_4096_is_one_bound_and_the_bound_enforced():
    """The refusal's "must be <= N" was found by a bisection from the lmax asked: 342 for 343,
    345 for 1023, and 344 and 345 ran. Now every refusal names one N, N runs, N + 1 does not."""
    import re
    from meanfield_pde.core.geometry import ZonalSphere

    def bound(lmax: int) -> int:
        with pytest.raises(ConfigError, match=rf"^domain.lmax = {lmax}: too large for domain.dimension "
                                              r"= 4096 .*; must be <= (\d+) in d = 4096$") as info:
            ZonalSphere(lmax, 4096)
        return int(re.search(r"must be <= (\d+)", str(info.value)).group(1))

    n = bound(1023)
    assert {bound(lmax) for lmax in (400, n + 1, n + 2)} == {n}
    for lmax in range(n - 3, n + 1):  # 343 (refused before) among them
        assert ZonalSphere(lmax, 4096).lmax == lmax
