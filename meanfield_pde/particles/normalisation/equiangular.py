"""Equiangular (ρ, r) ODEs of every normalisation scheme, and their asymptotic rates.

If the n tokens start with equal radii r and equal pairwise inner products
⟨θ_i, θ_j⟩ = ρ (i ≠ j), every scheme keeps them so (permutation symmetry, as
for SA, :mod:`meanfield_pde.theory.equiangular`), and with E = e^{−β(1−ρ)},
D = 1 + (n−1)E the SA attention of the directions gives exactly

    ⟨θ_i, A_i⟩ = (1 + (n−1)Eρ)/D,
    |A_i|²     = (1 + 2(n−1)Eρ + (n−1)E²(1 + (n−2)ρ))/D²,
    ⟨P⊥_{θ_i} A_i, θ_j⟩ = E(1−ρ)(1+(n−1)ρ)/D,

so, for a scheme with speed s and radial law g (:mod:`.schemes`,
arXiv:2510.22026 §3-4; Rigollet arXiv:2512.01868 §6.2, the equiangular model),

    ρ̇ = 2E(1−ρ)(1+(n−1)ρ) / (D s),      ṙ = g(r, ⟨θ,A⟩, |A|, t).

(s = 1 is the SA equation of :ref:`model`.) We integrate u = log(1−ρ), which
stays accurate when 1−ρ is far below the float spacing of ρ:

    u̇ = −2E(1+(n−1)ρ)/(D s),   ρ = −expm1(u),

with ``solve_ivp`` (DOP853, rtol 1e-12), restarted at the scheme's breaks.

Asymptotics: as ρ → 1, E → 1 and ⟨θ,A⟩, |A| → 1, so u̇ → −2/s_∞(t) with
s_∞ the speed at the collapsed state: 1−ρ(t) ≍ exp(−2 ∫_0^t dt'/s_∞(t')).
:data:`ASYMPTOTIC_LAWS` lists the closed forms (r ~ t for Pre/Peri/Mix-LN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ...core.errors import ConfigError
from ..dynamics import check_beta
from .dynamics import check_times, solve_piecewise
from .schemes import NormalisationScheme, get_scheme


def attention_moments(rho, beta: float, n: int):
    """(⟨θ_i,A_i⟩, |A_i|, ⟨P⊥_{θ_i}A_i, θ_j⟩/(1−ρ)) of an equiangular configuration (formulas above).

    Parameters
    ----------
    rho : float or ndarray, common inner product in [−1/(n−1), 1];
    beta : float >= 0;  n : int >= 2.

    Returns
    -------
    three arrays of the shape of ``rho``.
    """
    rho = np.asarray(rho, dtype=float)
    e = np.exp(-beta * (1.0 - rho))
    d = 1.0 + (n - 1) * e
    dot = (1.0 + (n - 1) * e * rho) / d
    norm = np.sqrt(1.0 + 2.0 * (n - 1) * e * rho + (n - 1) * e**2 * (1.0 + (n - 2) * rho)) / d
    tangential = e * (1.0 + (n - 1) * rho) / d
    return dot, norm, tangential


@dataclass(frozen=True)
class EquiangularRun:
    """Solution of the (ρ, r) ODEs: ``times`` (T,), ``gap`` = 1−ρ (T,), ``radius`` r (T,)."""

    times: np.ndarray
    gap: np.ndarray
    radius: np.ndarray

    @property
    def rho(self) -> np.ndarray:
        """ρ(t) = 1 − gap."""
        return 1.0 - self.gap


LOG_2 = math.log(2.0)  # u = log(1 − ρ) at ρ = −1, its largest value


def _check(n, rho0, r0):
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ConfigError(f"n = {n!r}: must be an integer >= 2")
    n = int(n)
    rho0 = float(rho0)
    if not -1.0 / (n - 1) < rho0 < 1.0:
        raise ConfigError(f"rho0 = {rho0}: must be in (-1/(n-1), 1) = ({-1.0 / (n - 1):.6g}, 1)")
    r0 = float(r0)
    if not (math.isfinite(r0) and r0 > 0):
        raise ConfigError(f"r0 = {r0!r}: must be a finite number > 0")
    return n, rho0, r0


def solve_scheme_equiangular(scheme: str | NormalisationScheme, rho0: float, beta: float, n: int, t, *,
                             r0: float = 1.0, rtol: float = 1e-12,
                             atol: float = 1e-12) -> EquiangularRun:
    """1−ρ(t) and r(t) of the equiangular reduction of ``scheme`` (module formulas).

    Parameters
    ----------
    scheme : name or NormalisationScheme;  rho0 : float in (−1/(n−1), 1);  beta : float in [0, 700];
    n : int >= 2 tokens;  t : increasing times >= 0;
    r0 : initial radius > 0 (ignored, r ≡ 1, for schemes on the sphere);
    rtol, atol : solve_ivp tolerances (on u = log(1−ρ) and r).

    Returns
    -------
    EquiangularRun (gap accurate to ~rtol relative even when tiny).

    Raises
    ------
    ConfigError
        Bad scheme, rho0, beta, n, r0 or times.
    """
    scheme, beta = get_scheme(scheme), check_beta(beta)
    n, rho0, r0 = _check(n, rho0, r0)
    t_eval = check_times(t)
    if scheme.starts_normalised:
        r0 = 1.0

    def rhs(tt, y):
        u, r = y
        # ρ >= −1 is u <= log 2; a rejected trial step can go far beyond (u ~ 5e14 at r0 = 1e-20,
        # where the angles move at speed 1/r): expm1 overflowed (a traceback after the schemes before)
        rho = -math.expm1(min(u, LOG_2))
        dot, norm, tang = attention_moments(rho, beta, n)
        s = float(scheme.speed(np.array([r]), np.array([dot]), np.array([norm]), tt)[0])
        g = 0.0 if scheme.radial is None else float(
            scheme.radial(np.array([r]), np.array([dot]), np.array([norm]), tt)[0])
        return [-2.0 * tang / s, g]

    out = solve_piecewise(rhs, [math.log1p(-rho0), r0], t_eval, scheme.breaks, rtol=rtol, atol=atol)
    return EquiangularRun(t_eval, np.exp(out[:, 0]), out[:, 1])


ASYMPTOTIC_LAWS = {
    "post_ln": ("exponential", "1-rho ~ C exp(-2 t)", -2.0),
    "ngpt": ("exponential", "1-rho ~ C exp(-2 alpha t)", -2.0),
    "pre_ln": ("power", "1-rho ~ C t^-2 (r ~ t)", -2.0),
    "peri_ln": ("power", "1-rho ~ C t^-2 (r ~ t)", -2.0),
    "mix_ln": ("power", "1-rho ~ C t^-2 (Pre-LN after the switch)", -2.0),
    "sqrt_scaling": ("stretched", "1-rho ~ C exp(-4 sqrt(t))", -4.0),
}
"""scheme -> (kind, law, exponent): the slope of log(1−ρ) against t ("exponential",
times α for nGPT), against log t ("power") or against √t ("stretched"), from
u̇ → −2/s_∞ (module docstring; arXiv:2510.22026 §4)."""


def collapse_clock(scheme: str | NormalisationScheme, t, *, r0: float = 1.0) -> np.ndarray:
    """τ(t) = ∫_0^t dt'/s_∞(t') with 1−ρ(t) ≍ C e^{−2τ(t)} as t → ∞, for any scheme.

    s_∞ is the scheme's speed at the collapsed state (⟨θ,A⟩ = |A| = 1), with
    the radius of that state, ṙ = g(r, 1, 1, t), r(0) = r0 (module docstring;
    arXiv:2510.22026 §4). Closed forms: τ = t (Post-LN), αt (nGPT),
    log(1 + t/r0) (Pre-LN, Peri-LN), 2(√(1+t) − 1) (sqrt-scaling).
    Integrated with ``solve_ivp`` (DOP853, rtol 1e-12) from the scheme's own
    laws, so a user scheme gets its asymptotic law too.

    Returns
    -------
    ndarray, shape of the increasing times ``t``.

    Raises
    ------
    ConfigError
        Bad scheme, times or r0.
    """
    scheme = get_scheme(scheme)
    _n, _rho, r0 = _check(2, 0.0, r0)
    t_eval = check_times(t)
    if scheme.starts_normalised:
        r0 = 1.0
    one = np.ones(1)

    def rhs(tt, y):
        r = np.array([y[1]])
        g = 0.0 if scheme.radial is None else float(scheme.radial(r, one, one, tt)[0])
        return [1.0 / float(scheme.speed(r, one, one, tt)[0]), g]

    return solve_piecewise(rhs, [0.0, r0], t_eval, scheme.breaks, atol=1e-12)[:, 0]


MIN_FIT_TIMES = 3  # times a rate is fitted on, at least


def rate_window(run: EquiangularRun, decades: float = 1.0) -> np.ndarray:
    """The times :func:`fitted_rate` fits (a boolean mask of ``run.times``): those of the last
    ``decades`` of t where 1−ρ > 0 (an exponential collapse reaches 0 in float64: e^{−2t}
    underflows at t ≈ 370). A rate needs ``MIN_FIT_TIMES`` of them."""
    t = run.times
    return (t >= t[-1] * 10.0 ** (-decades)) & (t > 0) & (run.gap > 0)


def fitted_rate(run: EquiangularRun, kind: str, decades: float = 1.0) -> float:
    """Least-squares slope of log(1−ρ) over the last ``decades`` of t, in the variable of ``kind``.

    kind: "exponential" (against t), "power" (against log t) or "stretched"
    (against √t). Compare with the exponent of :data:`ASYMPTOTIC_LAWS`.

    Raises
    ------
    ConfigError
        Unknown kind, or fewer than ``MIN_FIT_TIMES`` positive times in the window
        (:func:`rate_window`).
    """
    variables = {"exponential": lambda t: t, "power": np.log, "stretched": np.sqrt}
    if kind not in variables:
        raise ConfigError(f"kind = {kind!r}: must be one of {', '.join(variables)}")
    t = run.times
    window = rate_window(run, decades)
    if window.sum() < MIN_FIT_TIMES:
        raise ConfigError(f"fitted_rate: fewer than {MIN_FIT_TIMES} times with 1-rho > 0 in the last decade")
    return float(np.polyfit(variables[kind](t[window]), np.log(run.gap[window]), 1)[0])
