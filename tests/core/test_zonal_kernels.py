"""Funk–Hecke multipliers of e^{β⟨x,y⟩} on S^{d−1} in any dimension d, against the
defining integral computed by mpmath (not against the Bessel closed form the code uses).

λ_l/|S^{d−1}| = ∫_{-1}^{1} e^{βt} R_l(t) (1−t²)^{(d−3)/2} dt / ∫_{-1}^{1} (1−t²)^{(d−3)/2} dt,
R_l = C_l^{(α)}/C_l^{(α)}(1), α = (d−2)/2 (Funk–Hecke; Atkinson & Han Thm 2.22).
The quadrature (see ``_nodes``) converges exponentially and runs at the precision the
cancellation needs, so the reference is independent of Bessel functions.
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import gammaln

from meanfield_pde.core.kernels import (energy_multipliers, funk_hecke_multipliers,
                                        gradient_multipliers, log_zonal_multipliers,
                                        ratio_multipliers, scaled_multipliers)

from helpers.bounds import EPS, ive_error, multiplier_error

DIMENSIONS = (2, 3, 4, 8, 64, 512)
BETAS = (0.5, 5.0, 50.0)
LMAX = 40


def _nodes(d: int, beta: float, lmax: int):
    """Quadrature nodes t_j and weights of ∫_{-1}^{1} g(t) (1−t²)^{(d−3)/2} dt, in mpmath.

    Even d: t = cos θ turns the weight into sin^{d−2}θ dθ, a trigonometric polynomial,
    and the integrand into an even 2π-periodic analytic function: the trapezoid rule in
    θ is exact up to the Fourier tail. Odd d: the weight is a polynomial in t, and
    192-point Gauss–Legendre (exact to degree 383) integrates e^{βt} × polynomial.
    """
    if d % 2 == 0:
        n = d + lmax + int(4 * beta) + 80  # above the integrand's Fourier content
        theta = [mp.pi * j / n for j in range(n + 1)]
        return [(mp.cos(th), mp.sin(th) ** (d - 2) * (mp.mpf(1) / 2 if j in (0, n) else 1))
                for j, th in enumerate(theta)]
    gl = _gauss_legendre(mp.mp.prec)  # 192 nodes: error ~ (β/2)^384/384! < 1e-290 for β <= 50
    return [(t, w * (1 - t * t) ** ((d - 3) // 2)) for t, w in gl]


@functools.lru_cache(maxsize=None)
def _gauss_legendre(prec: int):
    return mp.calculus.quadrature.GaussLegendre(mp.mp).calc_nodes(7, prec)


@functools.lru_cache(maxsize=None)
def defining_integral(d: int, beta: float, lmax: int = LMAX) -> tuple[float, ...]:
    """λ_l/|S^{d−1}| for l = 0..lmax by quadrature of the defining integral, in mpmath.

    Working precision: λ̄_l >= Π_{j<l} β/(d+2j) (every term of its ₀F₁ series is
    positive) while the integrand is up to e^β, so that many digits cancel; 25 more are kept.
    """
    lost = max(sum(math.log10((d + 2 * j) / b) for j in range(lmax)) + b / math.log(10)
               for b in BETAS)  # one precision per d: the Gauss nodes are computed once
    with mp.workdps(int(25 + max(lost, 0))):
        alpha = mp.mpf(d - 2) / 2
        sums = [mp.mpf(0)] * (lmax + 1)
        norm = mp.mpf(0)
        for t, w in _nodes(d, beta, lmax):
            e = mp.exp(beta * t) * w
            norm += w
            r_prev, r = mp.mpf(1), t
            sums[0] += e
            sums[1] += e * t
            for l in range(1, lmax):  # R_{l+1} = (2(l+α) t R_l − l R_{l−1})/(2α + l) (DLMF 18.9.7)
                r_prev, r = r, (2 * (l + alpha) * t * r - l * r_prev) / (2 * alpha + l)
                sums[l + 1] += e * r
        return tuple(float(s / norm) for s in sums)


@pytest.mark.slow
@pytest.mark.parametrize("d", DIMENSIONS)
def test_normalised_multipliers_equal_the_defining_integral(d):
    for beta in BETAS:
        ref = np.array(defining_integral(d, beta))
        got = np.exp(log_zonal_multipliers(beta, LMAX, d))
        assert np.all(ref > 0)
        # the reference: 25 digits more than the cancellation costs, rounded once
        bound = (multiplier_error(beta, LMAX, d) + EPS) * ref
        assert np.all(np.abs(got - ref) <= bound), f"d={d} beta={beta}"


@pytest.mark.slow
@pytest.mark.parametrize("d", (2, 3, 4, 8, 64))
def test_surface_measure_multipliers_equal_the_defining_integral(d):
    """e^{−β} λ_l = e^{−β} |S^{d−1}| λ̄_l, |S^{d−1}| = 2π^{d/2}/Γ(d/2) (representable for d <= 64)."""
    area = 2 * math.pi ** (d / 2) / math.gamma(d / 2)
    # ln|S^{d−1}| − β added in logarithms (2ε of their sizes) against the reference's area (the
    # power, Γ and products: ((d/2) ln π + 4)ε) and e^{−β} (βε)
    logs = math.log(2) + d / 2 * math.log(math.pi) + abs(gammaln(d / 2))
    for beta in BETAS:
        ref = np.array(defining_integral(d, beta)) * area * math.exp(-beta)
        rel = (multiplier_error(beta, LMAX, d)
               + (2 * (logs + beta) + d / 2 * math.log(math.pi) + beta + 6) * EPS)
        assert np.all(np.abs(funk_hecke_multipliers(beta, LMAX, d) - ref) <= rel * ref)


def test_dimensions_two_and_three_are_the_circle_and_the_sphere_bit_for_bit():
    for beta in (0.0, 1e-300, 1e-7, 0.5, 5.0, 50.0, 700.0):
        assert np.array_equal(funk_hecke_multipliers(beta, 60, 3), scaled_multipliers(beta, 60))
        assert np.array_equal(funk_hecke_multipliers(beta, 60, 2),
                              scaled_multipliers(beta, 60, "circle"))


@pytest.mark.parametrize("beta", (1e-3, 0.5, 5.0, 50.0, 300.0, 700.0))
def test_zonal_route_agrees_with_the_sphere_and_circle_closed_forms(beta):
    """The general-d route (series / ive) at d = 3 and 2 against i_l and I_k, two float
    routes (the mpmath test above is the arbiter): the zonal one within multiplier_error, plus
    the rounding of a value carried as its logarithm (ε·|log|); the closed forms within
    ive_error of ive(l + ½, β) or ive(l, β) and a few products (e^β: βε)."""
    def close(got, ref, rel):
        keep = ref > 1e-280  # below, the closed form is in the subnormals
        err = np.abs(got[keep] / ref[keep] - 1)
        assert np.all(err <= rel[keep]), (err / rel[keep]).max()

    for d, man, area in ((3, "sphere", 4 * math.pi), (2, "circle", 2 * math.pi)):
        zonal = multiplier_error(beta, 80, d)
        nu = np.arange(81) + (0.5 if d == 3 else 0.0)
        closed = np.array([ive_error(v, beta) for v in nu]) * EPS
        with np.errstate(divide="ignore"):
            log = np.abs(log_zonal_multipliers(beta, 80, d))
        scaled = scaled_multipliers(beta, 80, man) / area
        close(scaled_multipliers(beta, 80, "sphere_zonal", dimension=d), scaled,
              zonal + (log + beta + 1) * EPS + closed + 6 * EPS)
        gradient = gradient_multipliers(beta, 80, man) / area
        per_beta = zonal + closed + (beta + 6) * EPS
        close(gradient_multipliers(beta, 80, "sphere_zonal", dimension=d), gradient, per_beta)
        close(gradient_multipliers(beta, 80, "sphere_zonal", True, dimension=d),
              gradient_multipliers(beta, 80, man, True),
              zonal + zonal[0] + (log + log[0] + 1) * EPS + closed + closed[0] + 2 * EPS)
        # l = 0: (λ_0 − |S|)/2β, from λ_0 (β >= 1: condition λ̄_0/(λ̄_0 − 1)), or (β < 1) on each
        # side a series of <= 12 positive terms (12ε) led by e^{ln β − ln Γ(4)} (S²), β/(2π) (S¹) or
        # β/4d (zonal): 2(|ln β| + ln 6)ε, and 3 products
        lam0 = math.exp(log_zonal_multipliers(beta, 0, d)[0])
        energy = per_beta.copy()
        energy[0] = ((per_beta[0] + 3 * EPS) * lam0 / (lam0 - 1) if beta >= 1
                     else (2 * (abs(math.log(beta)) + math.log(6)) + 2 * 12 + 6) * EPS)
        close(energy_multipliers(beta, 80, "sphere_zonal", dimension=d),
              energy_multipliers(beta, 80, man) / area, energy)


@pytest.mark.parametrize("d", (2, 3, 17, 512, 4096))
def test_small_beta_limits(d):
    """β → 0: λ̄_0 → 1, λ̄_1/β → 1/d, λ̄_l/β → 0 (l >= 2); SA: λ_1/(βλ_0) → 1/d.
    From λ_l = 2π^{d/2} (β/2)^l/Γ(l+d/2) (1 + O(β²)) (DLMF 10.25.2)."""
    for beta in (0.0, 1e-300, 1e-12):
        g = gradient_multipliers(beta, 6, "sphere_zonal", dimension=d)
        # e^{−ln d + log ₀F₁}, ₀F₁ = 1 + O(β²): (ln d + 2)ε, the β² term far below ε
        rel = (math.log(d) + 2) * EPS + beta**2
        assert g[0] == 0.0 and g[1] == pytest.approx(1.0 / d, rel=rel)
        assert np.all(g[2:] <= beta / d)
        # normalised: less log λ̄_0 = log ₀F₁ = O(β²)
        normalised = gradient_multipliers(beta, 6, "sphere_zonal", True, dimension=d)[1]
        assert normalised == pytest.approx(1 / d, rel=rel + EPS)
        assert ratio_multipliers(beta, 3, "sphere_zonal", dimension=d)[0] == 1.0
        e0 = energy_multipliers(beta, 2, "sphere_zonal", dimension=d)[0]
        # (λ̄_0 − 1)/2β = β/4d (1 + O(β²/d)): the series' first term times 1 + its rest (3 roundings);
        # β = 0: 0 exactly
        assert e0 == pytest.approx(beta / (4 * d), rel=3 * EPS + beta**2, abs=0)


@pytest.mark.parametrize("d", (2, 3, 64, 512, 4096))
@pytest.mark.parametrize("beta", (0.0, 1e-8, 1.0, 50.0, 700.0))
def test_no_overflow_up_to_beta_700_and_d_4096(d, beta):
    """Every multiplier the models use is finite and ordered (I_ν decreases in ν) at the edges."""
    lmax = 300
    for normalise in (False, True):
        g = gradient_multipliers(beta, lmax, "sphere_zonal", normalise, dimension=d)
        assert np.all(np.isfinite(g)) and np.all(g >= 0)
        assert np.all(np.diff(g[1:]) <= 0)
    r = ratio_multipliers(beta, lmax, "sphere_zonal", dimension=d)
    assert np.all(np.isfinite(r)) and r[0] == 1.0 and np.all(r <= 1.0)
    assert np.all(np.isfinite(energy_multipliers(beta, lmax, "sphere_zonal", dimension=d)))


def test_large_dimension_limit_is_the_gaussian_moment_generating_function():
    """For d → ∞ with β fixed, t√d is standard normal: λ̄_0 = E e^{βt} → e^{β²/2d}; more
    precisely ₀F₁(;d/2;β²/4) = e^{β²/2d}(1 + O(β⁴/d³))."""
    for d, beta in ((4096, 5.0), (4096, 40.0), (1000, 3.0)):
        lam0 = math.exp(log_zonal_multipliers(beta, 0, d)[0])
        assert lam0 == pytest.approx(math.exp(beta**2 / (2 * d)), rel=4 * beta**4 / d**3)


@pytest.mark.parametrize("bad", (1, 0, 4097, 2.5, None, True))
def test_dimension_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match=r"domain.dimension .* \[2, 4096\]"):
        log_zonal_multipliers(1.0, 3, bad)


@settings(max_examples=60, deadline=None)
@given(d=st.integers(2, 4096), beta=st.floats(1e-3, 700.0))
def test_bessel_recurrence_holds_across_both_routes(d, beta):
    """I_{ν−1}(β) − I_{ν+1}(β) = (2ν/β) I_ν(β) (DLMF 10.29.1), so with one prefactor for all l:
    λ̄_{l−1} − λ̄_{l+1} = (2(l + d/2 − 1)/β) λ̄_l, whichever route (series or ive) gave each
    value; and λ̄_0 = E e^{βt} >= e^{β E t} = 1 (Jensen), λ̄_l decreasing in l."""
    lam = np.exp(log_zonal_multipliers(beta, 30, d))
    assert np.all(np.isfinite(lam)) and lam[0] >= 1.0 and np.all(np.diff(lam) <= 0)
    l = np.arange(1, 30)
    lhs = lam[l - 1] - lam[l + 1]
    rhs = 2 * (l + d / 2 - 1) / beta * lam[l]
    keep = lam[l + 1] > 1e-290  # not in the subnormals
    # each λ̄ within multiplier_error; the difference (ε of λ̄_{l−1}) and the product (3ε of rhs)
    err = multiplier_error(beta, 30, d)
    bound = (err[l - 1] + EPS) * lam[l - 1] + err[l + 1] * lam[l + 1] + (err[l] + 3 * EPS) * np.abs(rhs)
    assert np.all(np.abs(lhs - rhs)[keep] <= bound[keep])
