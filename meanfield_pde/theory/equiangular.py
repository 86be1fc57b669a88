"""The equiangular reduction of the SA/USA particle flows (noise-free).

If n unit tokens start equiangular, ⟨x_i, x_j⟩ = ρ for all i ≠ j, both flows
keep them so (the Gram matrix obeys a closed ODE that commutes with permuting
the tokens; an equiangular Gram matrix is permutation invariant, so by
uniqueness it stays equiangular), and the common inner product solves a
scalar ODE (:ref:`equiangular-reduction`; Geshkovski, Letrouit, Polyanskiy & Rigollet,
arXiv:2312.10794, the equiangular / simplex example)::

    SA:  ρ̇ = 2(1−ρ)(1+(n−1)ρ) / (e^{β(1−ρ)} + n − 1)
    USA: ρ̇ = (2/n) e^{βρ} (1−ρ)(1+(n−1)ρ)

Admissible ρ lie in [−1/(n−1), 1] (the Gram matrix (1−ρ)I + ρ11ᵀ must be
positive semidefinite); both ends are equilibria (regular simplex, full
collapse), and every ρ0 in between flows to 1.

Numerics. Both right-hand sides are h(ρ)·L(ρ) with the logistic part
L(ρ) = (1−ρ)(1+(n−1)ρ) and a speed factor h > 0 that increases with ρ::

    SA:  h = 2/(e^{β(1−ρ)} + n − 1)        USA: h = (2/n) e^{βρ}.

So in the clock s = ∫ h(ρ(t)) dt both flows are the same logistic equation,
dρ/ds = L(ρ), solved exactly::

    1−ρ(s) = (n/(n−1)) / (1 + R0 e^{ns}),   R0 = (1+(n−1)ρ0) / ((n−1)(1−ρ0)),

and only the real time t(s) = ∫_0^s ds'/h(ρ(s')) is integrated (solve_ivp,
DOP853, rtol 1e-12) and inverted. Two reasons, both about the collapse:

- ρ → 1 exponentially, so 1−ρ reaches 1e-12 within a few time units and ρ
  itself carries no digits of the gap. We never form ρ: u = log(1−ρ) is
  explicit in s (``solve_equiangular(..., gap=True)`` returns e^u, accurate
  to ~1e-11 relative even at 1e-300).
- USA speeds up by e^{β(1−ρ0)} during the collapse: integrating u(t) in t
  needs steps of ~e^{−β}, below the float spacing of t once β(1−ρ0) ≳ 35
  (solve_ivp then fails). dt/ds = 1/h is smooth and bounded instead.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from ..core.checks import check_beta, check_kind
from ..core.checks import check_n as _check_n
from ..core.model_kinds import model_kind


def rho_rate(kind: str, rho, beta: float, n: int):
    """ρ̇ of the equiangular reduction, vectorised over ``rho``.

    Parameters
    ----------
    kind : {"SA", "USA"}
    rho : float or array_like
        Common inner product(s), dimensionless, normally in [−1/(n−1), 1]
        (not checked here, so the formula can be probed outside).
    beta : float in [0, 700]
    n : int >= 2, the number of tokens.

    Returns
    -------
    ndarray (shape of ``rho``) or float, in 1/time.

    Raises
    ------
    ValueError
        kind not in {SA, USA}; beta outside [0, 700]; n not an integer >= 2.
    """
    kind, beta, n = check_kind(kind), check_beta(beta), _check_n(n)
    rho = np.asarray(rho, dtype=float)
    core = (1.0 - rho) * (1.0 + (n - 1) * rho)
    if model_kind(kind).normalised:
        return 2.0 * core / (np.exp(beta * (1.0 - rho)) + n - 1)
    return (2.0 / n) * np.exp(beta * rho) * core


def _check_rho(name: str, rho, n: int) -> float:
    """``rho`` as a float in the open interval (−1/(n−1), 1) of equiangular Gram matrices whose
    flow moves (both ends are equilibria), else ValueError naming ``name``."""
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {rho!r}: must be a number in (-1/(n-1), 1)") from None
    if not -1.0 / (n - 1) < rho < 1.0:
        raise ValueError(f"{name} = {rho}: must be in (-1/(n-1), 1) = ({-1.0 / (n - 1):.6g}, 1)")
    return rho


def _log_r0(rho0: float, n: int) -> float:
    """log R0, R0 = (1+(n−1)ρ0) / ((n−1)(1−ρ0)) (finite for ρ0 in the open range)."""
    return float(np.log1p((n - 1) * rho0) - np.log(n - 1) - np.log1p(-rho0))


def _log_gap(s, rho0: float, n: int):
    """u(s) = log(1−ρ(s)) of the logistic equation dρ/ds = (1−ρ)(1+(n−1)ρ), exact."""
    return np.log(n / (n - 1)) - np.logaddexp(0.0, _log_r0(rho0, n) + n * np.asarray(s))


def _log_speed(kind: str, beta: float, n: int, gap):
    """log h as a function of the gap g = 1−ρ, in a form that cannot overflow."""
    if model_kind(kind).normalised:  # log(2 / (e^{βg} + n − 1))
        return np.log(2.0) - beta * gap - np.log1p((n - 1) * np.exp(-beta * gap))
    return np.log(2.0 / n) + beta * (1.0 - gap)


def solve_equiangular(kind: str, rho0: float, beta: float, n: int, t, *,
                      gap: bool = False) -> np.ndarray:
    """ρ(t) of the equiangular reduction from ρ(0) = ρ0.

    Method (module docstring): ρ is exact in the logistic clock s; the map
    s ↦ τ(s) = h(ρ0)·t(s) = ∫_0^s h(ρ0)/h(ρ(s')) ds' (an integrand in (0, 1],
    as h increases along the flow) is integrated with ``solve_ivp`` (DOP853,
    rtol 1e-12, atol 1e-14, dense output) up to the s where 1−ρ underflows,
    and inverted at the requested times by bisection (τ is increasing).

    Parameters
    ----------
    kind : {"SA", "USA"}
    rho0 : float
        Initial inner product, in the open interval (−1/(n−1), 1).
    beta : float in [0, 700]
    n : int >= 2
    t : float or array_like
        Times >= 0 (any order), in the time unit of the particle ODE.
    gap : bool, keyword-only
        If True return 1−ρ(t), to ~1e-11 relative precision however small,
        instead of ρ(t). It is 0.0 exactly once it is below the smallest float.

    Returns
    -------
    ndarray, shape of ``t``
        ρ(t), or 1−ρ(t) if ``gap``.

    Raises
    ------
    ValueError
        kind, beta, n invalid (see :func:`rho_rate`); rho0 outside
        (−1/(n−1), 1); t negative or not finite.

    Notes
    -----
    The condition number of u = log(1−ρ) with respect to t is |u̇| t. For SA
    |u̇| <= 2 and the result is accurate to ~1e-12 relative in 1−ρ. For USA
    |u̇| reaches 2e^β during the collapse, which lasts ~e^{−β} in t: when
    β(1−ρ0) is large (≳ 35) that window is narrower than the float spacing of
    t itself, so ρ(t) there is only as determined as t is (the clock s, and
    hence ρ as a function of s, stays exact).
    """
    kind, beta, n = check_kind(kind), check_beta(beta), _check_n(n)
    rho0 = _check_rho("rho0", rho0, n)
    t = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("t: times must be finite and >= 0")
    if t.size == 0:  # no times, no values (was numpy's "need at least one array to concatenate")
        return np.empty(t.shape)
    n = float(n)  # n beyond int64 (10**20 tokens) made numpy's log of an int object fail

    log_h0 = _log_speed(kind, beta, n, 1.0 - rho0)

    def dtau_ds(s, _tau):  # h(ρ0)/h(ρ(s)) in (0, 1]
        return np.exp(log_h0 - _log_speed(kind, beta, n, np.exp(_log_gap(s, rho0, n))))

    # Beyond s_end, u < −750 and 1−ρ underflows to 0.0: nothing left to resolve.
    s_end = max(760.0 - _log_r0(rho0, n), 1.0) / n
    sol = solve_ivp(dtau_ds, (0.0, s_end), [0.0], method="DOP853", rtol=1e-12, atol=1e-14,
                    dense_output=True)
    if not sol.success:  # pragma: no cover - the integrand is smooth and bounded
        raise RuntimeError(f"equiangular clock integration failed: {sol.message}")
    with np.errstate(over="ignore", divide="ignore"):  # t = 0 -> log 0; huge τ -> inf
        tau = np.exp(np.log(t.ravel()) + log_h0)
    # bisection for τ(s) = τ, vectorised over the requested times: 64 halvings of
    # [0, s_end] reach the float spacing of s
    lo, hi = np.zeros_like(tau), np.full_like(tau, s_end)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        below = sol.sol(mid)[0] < tau
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    u = _log_gap(0.5 * (lo + hi), rho0, n)
    u[tau >= sol.y[0, -1]] = -np.inf  # past s_end: the gap is below the smallest float
    u[tau == 0.0] = np.log1p(-rho0)
    u = u.reshape(t.shape)
    return np.exp(u) if gap else -np.expm1(u)


def collapse_rate(kind: str, beta: float) -> float:
    """Exponential rate r of the collapse 1−ρ(t) ~ C e^{−r t} as t → ∞.

    Linearise at ρ = 1 with g = 1−ρ: ġ = −ρ̇ = −g · q(ρ), q(ρ) = ρ̇/(1−ρ),
    and q(1) is the rate::

        SA:  q(1) = 2(1+(n−1)) / (e^0 + n − 1) = 2n/n = 2
        USA: q(1) = (2/n) e^β (1+(n−1)) = 2 e^β

    Neither depends on n. (At β = 0 both are 2, matching the exact solution
    1−ρ = (n/(n−1)) / (1 + R0 e^{2t}) of the USA Riccati equation.)

    Parameters
    ----------
    kind : {"SA", "USA"};  beta : float in [0, 700]

    Returns
    -------
    float, in 1/time.

    Raises
    ------
    ValueError
        kind or beta out of range.
    """
    kind, beta = check_kind(kind), check_beta(beta)
    return 2.0 if model_kind(kind).normalised else 2.0 * float(np.exp(beta))


def equiangular_transition_time(kind: str, beta: float, n: int, rho0: float = 0.0,
                                level: float = 0.999) -> float:
    """The time t* at which the equiangular ρ(t) from ρ0 reaches ``level``.

    :ref:`equiangular-reduction`: ρ̇ = h(ρ) L(ρ) with L = (1−ρ)(1+(n−1)ρ), h_SA = 2/(e^{β(1−ρ)} + n − 1),
    h_USA = (2/n) e^{βρ}. In the clock s with ds = h dt, ρ is logistic
    (:func:`solve_equiangular`): 1 − ρ(s) = (n/(n−1)) / (1 + R0 e^{ns}),
    R0 = (1+(n−1)ρ0)/((n−1)(1−ρ0)), so ρ = level at
    s* = log(((n/(n−1))/(1−level) − 1)/R0)/n and t* = ∫_0^{s*} ds/h(ρ(s)) (quad); 0 if
    level <= ρ0.

    Raises
    ------
    ValueError
        kind, beta, n as :func:`rho_rate`; rho0 or level outside (−1/(n−1), 1).
    """
    from scipy.integrate import quad
    rho_rate(kind, rho0, beta, n)  # checks kind, beta, n
    # ρ = 1 is an equilibrium that the flow only approaches: a level >= 1 is never reached (it
    # returned 0.0 for 1.5, and ρ0 = 1 ended in ZeroDivisionError)
    rho0, level = _check_rho("rho0", rho0, n), _check_rho("level", level, n)
    r0 = (1 + (n - 1) * rho0) / ((n - 1) * (1 - rho0))
    s_star = np.log(((n / (n - 1)) / (1 - level) - 1) / r0) / n
    if s_star <= 0:
        return 0.0

    def inv_h(s):
        gap = (n / (n - 1)) / (1 + r0 * np.exp(n * s))
        if model_kind(kind).normalised:
            return (np.exp(beta * gap) + n - 1) / 2.0
        return n * np.exp(-beta * (1 - gap)) / 2.0
    return float(quad(inv_h, 0.0, s_star, epsabs=0, epsrel=1e-10, limit=200)[0])
