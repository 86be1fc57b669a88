"""The order of the noisy-USA transition on S^{d−1} (theory.transition): the tricritical β*(d)
of Mun & Rosenzweig (arXiv:2606.05140) against independent routes, its large-d form, the
coupling K = 1/(2ν), and the Landau pitchfork slope against the β = 0 closed forms."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ive

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.theory.linear import critical_noise
from meanfield_pde.theory.transition import (degree_two_ratio, landau_coefficient,
                                             pitchfork_slope, tricritical_beta, transition_order)

from helpers.bounds import EPS, multiplier_error



def root_rounding(d: int, beta: float, relative: float) -> float:
    """Bound on how far the root of r(β) = 1/d (r = degree_two_ratio) moves when r is computed
    within ``relative``: relative·r/|r'| at the root (r' by a central difference: a condition
    factor, its O(h²) error immaterial)."""
    h = 1e-6 * beta
    slope = (degree_two_ratio(beta + h, d) - degree_two_ratio(beta - h, d)) / (2 * h)
    return relative / d / slope


def tricritical_error(d: int) -> float:
    """Bound on |tricritical_beta(d) − β*|: brentq's xtol + rtol·β (1e-15 each) about the root of
    the computed ratio, and that root's shift by the ratio's rounding, e^{log λ̄_2 − log λ̄_1}
    within the two multipliers' errors (multiplier_error) and ε."""
    beta = tricritical_beta(d)
    errors = multiplier_error(beta, 2, d)
    return 1e-15 * (1 + beta) + root_rounding(d, beta, errors[1] + errors[2] + EPS)

def test_tricritical_beta_in_d3_is_the_root_of_the_spherical_bessel_closed_forms():
    """d = 3: I_{5/2}/I_{3/2} = i_2/i_1 with i_1 = (x cosh x − sinh x)/x²,
    i_2 = ((x² + 3) sinh x − 3x cosh x)/x³ (DLMF 10.49.12): the root of i_2/i_1 = 1/3."""
    def ratio(x):
        i1 = (x * math.cosh(x) - math.sinh(x)) / x**2
        i2 = ((x * x + 3) * math.sinh(x) - 3 * x * math.cosh(x)) / x**3
        return i2 / i1 - 1 / 3
    root = brentq(ratio, 1.0, 3.0, xtol=1e-15)  # rtol: brentq's default 4ε
    # the closed forms cancel: ~3 roundings per term over each difference, 2 and 3 more for the
    # powers of x, and the quotient
    x = root
    i1_terms, i2_terms = (x * math.cosh(x), math.sinh(x)), ((x * x + 3) * math.sinh(x), 3 * x * math.cosh(x))
    closed_form = (3 * sum(i1_terms) / (i1_terms[0] - i1_terms[1]) + 2
                   + 3 * sum(i2_terms) / (i2_terms[0] - i2_terms[1]) + 3 + 1) * EPS
    reference_error = 1e-15 + 4 * EPS * root + root_rounding(3, root, closed_form)
    assert tricritical_beta(3) == pytest.approx(root, rel=0, abs=tricritical_error(3) + reference_error)
    assert tricritical_beta(3) == pytest.approx(1.8162, abs=5e-5)


@pytest.mark.parametrize("d,value", [(2, 2.4469), (8, 1.2666), (32, 1.0635), (128, 1.0157)])
def test_tricritical_beta_against_mpmath_besseli(d, value):
    with mpmath.workdps(30):  # the reference to ~1e-28: the error is the package's alone
        root = mpmath.findroot(lambda b: mpmath.besseli(d / 2 + 1, b) / mpmath.besseli(d / 2, b)
                               - mpmath.mpf(1) / d, value)
    assert tricritical_beta(d) == pytest.approx(float(root), rel=0, abs=tricritical_error(d) + EPS * float(root))
    assert tricritical_beta(d) == pytest.approx(value, abs=5e-5)


def test_tricritical_beta_decreases_in_d_to_one_like_its_series():
    """I_{a+1}/I_a = β/(2a + 2) (1 − β²/(4(a + 1)(a + 2)) + O(β⁴/a⁴)) (DLMF 10.25.2) with a = d/2
    gives β* = 1 + 2/d + 1/d² + O(d⁻³): decreasing, → 1."""
    ds = np.unique(np.r_[np.arange(2, 65), np.geomspace(64, 4096, 40).astype(int)])
    betas = np.array([tricritical_beta(int(d)) for d in ds])
    assert np.all(np.diff(betas) < 0)
    assert np.all(betas > 1.0)
    big = ds >= 32
    series = 1 + 2 / ds[big] + 1 / ds[big] ** 2
    assert np.all(np.abs(betas[big] - series) <= 2.0 / ds[big] ** 3)
    assert tricritical_beta(4096) - 1 == pytest.approx(2 / 4096, rel=1e-3)


@pytest.mark.slow
def test_the_bracket_holds_in_every_dimension():
    """r(1) < 1/d < r(3) for d = 2 … 4096 (the brentq bracket), and the ratio has no 0/0 where
    I_{d/2}(β) underflows (d = 4096, β = 1e-3: r ≈ β/(d + 2))."""
    for d in range(2, 4097):
        assert degree_two_ratio(1.0, d) < 1 / d < degree_two_ratio(3.0, d), d
    assert degree_two_ratio(1e-3, 4096) == pytest.approx(1e-3 / 4098, rel=1e-6)
    assert ive(2049, 1e-3) == 0.0  # the naive route would divide 0 by 0
    assert degree_two_ratio(0.0, 8) == 0.0


def test_their_coupling_is_one_over_twice_our_noise():
    """K_#(β) = β^{d/2}/(2^{d/2} Γ(d/2) I_{d/2}(β)) (arXiv:2606.05140) equals 1/(2ν_1(β, d))."""
    for d in (3, 8, 32, 128):
        for beta in (0.3, 1.0, 2.5, 10.0):
            k_sharp = mpmath.mpf(beta) ** (d / 2) / (2 ** (d / 2) * mpmath.gamma(d / 2)
                                                       * mpmath.besseli(d / 2, beta))
            nu1 = critical_noise("USA", beta, "sphere_zonal", d)
            # ν_1 = λ̄_1/β within multiplier_error, 1/(2ν_1) 2 roundings; mpmath's 53-bit products 5
            rel = multiplier_error(beta, 1, d)[1] + 7 * EPS
            assert 1 / (2 * nu1) == pytest.approx(float(k_sharp), rel=rel), (d, beta)


def test_landau_coefficient_changes_sign_at_the_tricritical_beta():
    for d in (2, 3, 8, 32, 128, 4096):
        b = tricritical_beta(d)
        # Q = (d r − 1)/((d + 2)(1 − r)) at the root of r = 1/d: d r − 1 within the error of
        # λ̄_2/λ̄_1 (multiplier_error at l = 1, 2), of the root (brentq: xtol = rtol = 1e-15; |r'| <= 1)
        # times d, and ε
        err = multiplier_error(b, 2, d)
        num = err[1] + err[2] + 2 * d * (1e-15 + 1e-15 * b) + EPS
        assert landau_coefficient(b, d) == pytest.approx(0.0, abs=num / ((d + 2) * (1 - 1 / d)))
        assert landau_coefficient(0.99 * b, d) < 0 < landau_coefficient(1.01 * b, d)
        assert transition_order(0.7 * b, d) == "continuous"
        assert transition_order(2 * b, d) == "discontinuous"
    assert landau_coefficient(0.0, 5) == pytest.approx(-1 / 7)  # β = 0: Q = −1/(d + 2)


@pytest.mark.parametrize("d", [2, 3])
def test_pitchfork_slope_at_beta0_is_the_langevin_and_kuramoto_expansion(d):
    """β = 0: the stationary m solves m = A_d(m/ν) (S²: coth x − 1/x; S¹: I_1(x)/I_0(x)); solved
    here at ν = ν_1 − ε, m²/ε → d + 2 = pitchfork_slope(0, d)."""
    a_d = (lambda x: ive(d / 2, x) / ive(d / 2 - 1, x))  # coth x − 1/x (d = 3), I_1/I_0 (d = 2)
    nu1, eps = 1 / d, 1e-6
    nu = nu1 - eps
    m = brentq(lambda m: a_d(m / nu) - m, 1e-4, 0.5, xtol=1e-15)
    assert m * m / eps == pytest.approx(pitchfork_slope(0.0, d), rel=1e-4)
    # 1/(d |Q| ν_1), Q = −1/(d + 2) exactly at β = 0, ν_1 = e^{−ln d} ((ln d + 2)ε): 4 roundings more
    assert pitchfork_slope(0.0, d) == pytest.approx(d + 2, rel=(math.log(d) + 6) * EPS)


def test_bad_arguments_are_config_errors_naming_the_range():
    with pytest.raises(ConfigError, match=r"dimension = 1.*\[2, 4096\]"):
        tricritical_beta(1)
    with pytest.raises(ConfigError, match=r"dimension = 5000"):
        tricritical_beta(5000)
    with pytest.raises(ConfigError, match=r"dimension = 2.5"):
        tricritical_beta(2.5)
    with pytest.raises(ConfigError, match=r"beta = -1"):
        landau_coefficient(-1.0, 8)
    with pytest.raises(ConfigError, match=r"beta = 3.0: must be below the tricritical beta\*\(8\) = 1.26655"):
        pitchfork_slope(3.0, 8)
