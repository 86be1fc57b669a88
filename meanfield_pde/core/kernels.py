"""Funk–Hecke multipliers of the attention kernel e^{β⟨x,y⟩}.

The kernel is zonal, so convolution with it is diagonal in the spectral
basis (Funk–Hecke theorem; e.g. Atkinson & Han, *Spherical Harmonics and
Approximations on the Unit Sphere*, Thm 2.22):

    ∫ e^{β⟨x,y⟩} Y_lm(y) dσ(y) = λ_l Y_lm(x),
    S²: λ_l = 2π ∫_{-1}^{1} e^{βt} P_l(t) dt = 4π i_l(β),  i_l(β) = √(π/2β) I_{l+1/2}(β)
    S¹: λ_k = ∫_0^{2π} e^{β cos s} e^{iks} ds = 2π I_k(β).

Everything is computed from the exponentially scaled Bessel function
``scipy.special.ive`` (ive(ν, β) = e^{−β} I_ν(β)): the plain I_ν overflows
near β ≈ 700 and loses relative precision at large order. The factor e^β is
kept apart (``log_scale = β``) and multiplied in only where a model needs
the unscaled value (USA).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ive

from .checks import BETA_MAX, check_beta  # noqa: F401  (BETA_MAX: public here before)


def scaled_multipliers(beta: float, lmax: int, manifold: str = "sphere") -> np.ndarray:
    """e^{−β} λ_l for l = 0..lmax, shape (lmax+1,).

    At β = 0 this is λ_l(0) = |S| δ_l0. Values below the smallest float
    underflow to 0, which is their correct rounding.

    Raises
    ------
    ValueError
        If β is outside [0, 700] or the manifold is unknown.
    """
    beta = check_beta(beta)
    l = np.arange(lmax + 1, dtype=float)
    if 0.0 < beta < SMALL_BETA:  # √(π/2β) overflows for subnormal β: the power series instead
        lam = beta * _small_beta_gradient_multipliers(beta, l.astype(int), manifold)
        lam[0] = _lambda0_small_beta(beta, manifold)
        return np.exp(-beta) * lam
    if manifold == "sphere":
        if beta == 0.0:
            return np.where(l == 0, 4.0 * np.pi, 0.0)
        return 4.0 * np.pi * np.sqrt(np.pi / (2.0 * beta)) * ive(l + 0.5, beta)
    if manifold == "circle":
        return 2.0 * np.pi * ive(l, beta)
    raise ValueError(f"manifold = {manifold!r}: must be 'sphere' or 'circle'")


def ratio_multipliers(beta: float, lmax: int, manifold: str = "sphere") -> np.ndarray:
    """λ_l / λ_0, shape (lmax+1,): the kernel normalised to act as identity on constants.

    This is all the SA model needs; it is free of the e^β factor.
    """
    s = scaled_multipliers(beta, lmax, manifold)
    return s / s[0]


def gradient_multipliers(beta: float, lmax: int, manifold: str = "sphere",
                         normalise: bool = False) -> np.ndarray:
    """λ_l / β (or λ_l / (β λ_0) if ``normalise``), shape (lmax+1,).

    The velocity potential of USA is Φ/β and its gradient only sees l >= 1,
    for which λ_l/β has a finite limit as β → 0:
    S²: λ_1/β → 4π/3, λ_l/β → 0 for l >= 2; S¹: λ_1/β → π, λ_k/β → 0 for k >= 2.
    The l = 0 entry never enters a gradient and is set to 0.

    For β > 0 the unscaled value is e^β · (e^{−β} λ_l / β), a product of two
    finite floats (β <= 700), so it never overflows.
    """
    beta = check_beta(beta)
    l = np.arange(lmax + 1)
    if beta < SMALL_BETA:
        out = _small_beta_gradient_multipliers(beta, l, manifold)
        if normalise:
            out /= _lambda0_small_beta(beta, manifold)
        return out
    s = scaled_multipliers(beta, lmax, manifold)
    out = (s / s[0] if normalise else np.exp(beta) * s) / beta
    out[0] = 0.0
    return out


SMALL_BETA = 1e-6  # below: two terms of the power series are exact to double precision


def _lambda0_small_beta(beta: float, manifold: str) -> float:
    """λ_0 = 4π(1 + β²/6) on S², 2π(1 + β²/4) on S¹ (series, β < SMALL_BETA)."""
    return 4.0 * np.pi * (1 + beta**2 / 6) if manifold == "sphere" else 2.0 * np.pi * (1 + beta**2 / 4)


def _small_beta_gradient_multipliers(beta: float, l: np.ndarray, manifold: str) -> np.ndarray:
    """λ_l/β from the series of the Bessel functions, for 0 <= β < SMALL_BETA.

    S²: λ_l = 4π i_l(β), i_l(β) = β^l/(2l+1)!! · (1 + β²/(2(2l+3)) + O(β⁴));
    S¹: λ_k = 2π I_k(β),  I_k(β) = (β/2)^k/k! · (1 + β²/(4(k+1)) + O(β⁴))
    (Abramowitz & Stegun 10.2.5 and 9.6.10). The ive route underflows for
    β ≲ 1e-200 although λ_1/β stays near 4π/3 (resp. π). Entry l = 0 is 0.
    """
    from scipy.special import gammaln
    if manifold not in ("sphere", "circle"):
        raise ValueError(f"manifold = {manifold!r}: must be 'sphere' or 'circle'")
    lf = l.astype(float)
    with np.errstate(divide="ignore"):
        log_beta = np.log(beta) if beta > 0 else -np.inf
    if manifold == "sphere":
        # (2l+1)!! = 2^{l+1} Γ(l + 3/2)/√π
        log_lead = np.log(4.0 * np.pi) - ((lf + 1) * np.log(2.0) + gammaln(lf + 1.5) - 0.5 * np.log(np.pi))
        correction = 1.0 + beta**2 / (2.0 * (2.0 * lf + 3.0))
        log_power = (lf - 1.0) * log_beta if beta > 0 else np.where(lf == 1, 0.0, -np.inf)
    else:
        log_lead = np.log(2.0 * np.pi) - lf * np.log(2.0) - gammaln(lf + 1.0)
        correction = 1.0 + beta**2 / (4.0 * (lf + 1.0))
        log_power = (lf - 1.0) * log_beta if beta > 0 else np.where(lf == 1, 0.0, -np.inf)
    # l = 0 never enters (set to 0 below); -inf there keeps exp from overflowing at tiny β
    out = np.exp(log_lead + np.where(lf == 1, 0.0, np.where(lf == 0, -np.inf, log_power))) * correction
    out[l == 0] = 0.0
    return out


def kernel_degree_cutoff(beta: float, eps: float = 1e-16) -> float:
    """Degree beyond which λ_l/λ_0 < eps, from λ_l/λ_0 ≈ exp(−l(l+1)/2β) (≈ 8.6√β for 1e-16)."""
    return float(np.sqrt(2.0 * beta * np.log(1.0 / eps)))


def kernel_truncation_error(beta: float, lmax: int, manifold: str = "sphere") -> float:
    """Relative L² error of the kernel e^{β⟨x,·⟩} cut at degree (wavenumber) lmax.

    By Funk–Hecke the kernel is Σ_l λ_l Σ_m Y_lm(x) conj(Y_lm(y)), so its
    squared L²(S) norm in y is Σ_l (2l+1)/|S| · λ_l² on S² and
    Σ_k λ_k²/(2π) over k ∈ ℤ on S¹ (λ_{−k} = λ_k); the error is the part with
    l > lmax relative to the whole, in [0, 1). It is small only when
    lmax ≳ √(2β ln(1/ε)): the structures the kernel makes (width ~ β^{−1/2})
    need that resolution.
    """
    tail = int(lmax + 40 + 12 * math.sqrt(max(beta, 1.0)))  # λ_l decays like e^{−l²/2β} past √β
    lam = scaled_multipliers(beta, tail, manifold)
    l = np.arange(tail + 1)
    power = (2 * l + 1) * lam**2 if manifold == "sphere" else np.where(l == 0, 1.0, 2.0) * lam**2
    total = power.sum()
    return float(math.sqrt(power[lmax + 1:].sum() / total)) if total > 0 else 0.0


def resolving_lmax(beta: float, tol: float, manifold: str = "sphere") -> int:
    """The smallest lmax with :func:`kernel_truncation_error` <= tol (tol in (0, 1])."""
    L = 1
    while kernel_truncation_error(beta, L, manifold) > tol:
        L += 1
    return L


def _constant_part(beta: float, manifold: str) -> float:
    """(λ_0 − |S|)/(2β), the l = 0 multiplier of the energy, for 0 <= β <= 700 (0 at β = 0).

    S²: λ_0 = 4π sinh(β)/β, so (λ_0 − 4π)/(2β) = 2π (sinh β − β)/β²;
    S¹: λ_0 = 2π I_0(β), so (λ_0 − 2π)/(2β) = π (I_0(β) − 1)/β.
    Below β = 1 from the power series (sinh β − β)/β² = Σ_{k>=1} β^{2k−1}/(2k+1)! and
    (I_0(β) − 1)/β = Σ_{k>=1} β^{2k−1}/(4^k (k!)²) (Abramowitz & Stegun 4.5.62, 9.6.12),
    which have no cancellation; 12 terms are exact to round-off there. Above,
    directly from ive (the cancellation costs at most a factor 1/(1 − β/sinh β) < 7).
    """
    if beta < 1.0:
        k = np.arange(1, 13, dtype=float)
        from scipy.special import gammaln
        if manifold == "sphere":
            terms = np.exp((2 * k - 1) * np.log(beta) - gammaln(2 * k + 2)) if beta > 0 else 0.0 * k
            return float(2.0 * np.pi * np.sum(terms))
        terms = np.exp((2 * k - 1) * np.log(beta) - k * np.log(4.0) - 2 * gammaln(k + 1)) if beta > 0 else 0.0 * k
        return float(np.pi * np.sum(terms))
    area = 4.0 * np.pi if manifold == "sphere" else 2.0 * np.pi
    lam0 = math.exp(beta) * scaled_multipliers(beta, 0, manifold)[0]
    return float((lam0 - area) / (2.0 * beta))


def energy_multipliers(beta: float, lmax: int, manifold: str = "sphere") -> np.ndarray:
    """(λ_l − |S| δ_l0)/(2β), l = 0..lmax, shape (lmax+1,): the multipliers of the energy

        E_β[f] = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f(x) f(y) dσ dσ = Σ_lm w_m (λ_l − |S|δ_l0)/(2β) |f_lm|²

    (Funk–Hecke; ∬ f f = M² = |S| |f_00|²). This is the interaction energy of
    Geshkovski et al. (arXiv:2312.10794) less the constant M²/(2β), which does not
    change along a run (mass is conserved) but diverges as β → 0: so defined E_β
    is one smooth function of β ∈ [0, 700] (E_0 = |∫ x f dσ|²/2) with the same
    time derivative. Finite for β <= 700.
    """
    out = 0.5 * gradient_multipliers(beta, lmax, manifold)  # λ_l/(2β), entry 0 = 0
    out[0] = _constant_part(check_beta(beta), manifold)
    return out
