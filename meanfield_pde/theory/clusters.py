"""Cluster-level theory: k Dirac clusters of masses w_k under the noise-free SA/USA flow.

Without noise the mean-field equation is a continuity equation with a smooth
velocity field V[μ], so a weighted sum of Diracs μ = Σ_j w_j δ_{x_j}
(w_j >= 0, x_j ∈ S^{d−1}) stays one, and its points follow (:ref:`cluster-dynamics`; Geshkovski, Letrouit, Polyanskiy & Rigollet,
arXiv:2312.10794; Geshkovski, Koubbi, Polyanskiy & Rigollet, arXiv:2410.06833)

    ẋ_i = V[μ](x_i),   Φ(x) = Σ_j w_j e^{β⟨x,x_j⟩},
    USA: V(x) = P⊥_x Σ_j w_j e^{β⟨x,x_j⟩} x_j,   SA: V(x) = that / Φ(x).

The weights never change (each Dirac is carried by the flow). The particle
code moves the points themselves (:func:`meanfield_pde.particles.dynamics.velocity`
with ``weights``); this module holds what follows from the equations alone.

Reduced ODE of k clusters (Gram form)
-------------------------------------
The flow depends on the points only through their Gram matrix G_ij = ⟨x_i,x_j⟩,
and G obeys a closed ODE (rotations commute with the flow). With
a_il = w_l e^{βG_il} (USA) or w_l e^{βG_il}/Φ_i, Φ_i = Σ_l w_l e^{βG_il} (SA),
ẋ_i = Σ_l a_il (x_l − G_il x_i), hence ⟨ẋ_i, x_j⟩ = Σ_l a_il (G_lj − G_il G_ij) =: T_ij
and

    Ġ = T + Tᵀ,   T = a G − diag(Σ_l a_il G_il) G,

k(k−1)/2 unknowns whatever the dimension d (:func:`gram_rate`,
:func:`solve_gram`). T_ii = 0, so the diagonal stays 1.

Two clusters
------------
k = 2, ρ = ⟨x_1,x_2⟩ = G_12. USA: a_12 = w_2 e^{βρ}, a_21 = w_1 e^{βρ}, so

    USA: ρ̇ = (w_1 + w_2) e^{βρ} (1 − ρ²),
    SA:  ρ̇ = (1 − ρ²) [ w_2/(w_1 E + w_2) + w_1/(w_2 E + w_1) ],   E = e^{β(1−ρ)}

(SA depends on the masses only through w_1/w_2; with w_1 = w_2 it is the
equiangular equation with n = 2, :mod:`~meanfield_pde.theory.equiangular`). ρ = ±1 are the only
equilibria; ρ = −1 (antipodal clusters) is unstable, ρ = 1 (one cluster)
attracts every ρ0 > −1, only exponentially: near ρ = 1 the gap 1 − ρ decays
like e^{−2t} (SA, any masses) and e^{−2(w_1+w_2)e^β t} (USA). Near ρ = −1,
1 + ρ grows like e^{2h(−1)t} with h the bracket above (USA: (w_1+w_2)e^{−β}).

Closed form of t(ρ). Separation of variables, t = ∫_{ρ0}^{ρ} ds / ρ̇(s), with
1/(1−s²) = ½[1/(1−s) + 1/(1+s)] and the exponential integrals Ei, E_1
(Abramowitz & Stegun 5.1.1-5.1.2; d/ds Ei(β(1−s)) = −e^{β(1−s)}/(1−s)):

    USA: t = [F(ρ) − F(ρ0)] / (w_1 + w_2),
         F(s) = ∫ e^{−βs}/(1−s²) ds = −½ [ e^{−β} Ei(β(1−s)) + e^{β} E_1(β(1+s)) ],

which tends to artanh(s) as β → 0. SA: with p = w_1 w_2, q = w_1² + w_2²,
1/ρ̇ = (pE² + qE + p)/((1−s²)(qE + 2p)); dividing the polynomials in E,

    SA:  t = (p/q) e^{β} [F(ρ) − F(ρ0)] + c [artanh ρ − artanh ρ0] + r R(ρ0, ρ),
         c = 1 − 2p²/q²,   r = −p (w_1−w_2)² (w_1+w_2)² / q²,
         R = ∫_{ρ0}^{ρ} ds / ((1−s²)(q e^{β(1−s)} + 2p)).

For w_1 = w_2 (r = 0) this is closed. For w_1 ≠ w_2 the remainder R is a
Fermi–Dirac-type integral with no closed form in Ei; its two logarithmic
singularities (s → ±1) are taken out exactly, and the smooth bounded rest is
integrated by adaptive Gauss–Kronrod quadrature (``scipy.integrate.quad``,
relative tolerance 1e-13). So: USA and equal-mass SA are quadrature-free,
unequal-mass SA has one 1-D quadrature of a smooth function.

Numerics. Everything is written in the gap δ = 1 − ρ (ρ carries no digits of
a gap below 1e-16): with scaled exponential integrals ε_i(a) = e^{−a} Ei(a)
and ε_1(b) = e^{b} E_1(b), F(1−δ) = −½ e^{−β(1−δ)} [ε_i(βδ) + ε_1(β(2−δ))]; the
scaled functions are evaluated by scipy (``expi``, ``exp1``) up to argument
700 and by their asymptotic series Σ k!/a^{k+1}, Σ (−1)^k k!/b^{k+1} beyond
(30 terms: truncation below 1e-40). Times above the float range (SA from
near-antipodal clusters at large β grows like e^{2β}) are returned as inf.

Merge time
----------
Two Diracs never meet in finite time (ρ → 1 only exponentially). The merge
time T_θ is defined as the first time the angle arccos ρ between the two
centres falls below θ (default :data:`MERGE_ANGLE`): T_θ = t(cos θ), computed
from the gap 2 sin²(θ/2) (:func:`merge_time`). Small θ changes it by an
additive log: T_{θ/10} − T_θ → log 10 (SA) and log 10 / ((w_1+w_2) e^β) (USA).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special
from scipy.integrate import quad, solve_ivp
from scipy.optimize import brentq

from .linear import check_beta, check_kind
from ..core.model_kinds import model_kind

MERGE_ANGLE = 1e-2
"""Default merge angle θ (radians): two clusters count as merged once their centres are closer."""

_SCIPY_RANGE = 700.0  # above it e^{±a} of the scaled exponential integrals leaves float range
_SERIES_TERMS = 30
# below it the β = 0 closed form is exact in double precision (the rates differ from β = 0 by
# a factor 1 + O(β): e^{βρ}, E = e^{β(1−ρ)}), while βδ underflows in Ei/E_1 (inf − inf)
_BETA_ZERO = 1e-17


# -- argument checks -----------------------------------------------------------
def check_masses(masses, k: int | None = None) -> np.ndarray:
    """Masses as a float array: finite, >= 0, not all 0 (and k of them if k is given).

    Raises ValueError naming ``masses`` and the allowed range.
    """
    w = np.asarray(masses, dtype=float)
    if w.ndim != 1 or (k is not None and w.size != k) or w.size < 1:
        want = f"{k}" if k is not None else ">= 1"
        raise ValueError(f"masses: shape {w.shape}: must be one-dimensional with {want} entries")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0.0) and w.sum() > 0.0):
        raise ValueError(f"masses = {w.tolist()}: must be finite, >= 0 and not all 0")
    return w


def _check_rho(name: str, rho) -> float:
    rho = float(rho)
    if not -1.0 <= rho <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} = {rho}: must be an inner product in [-1, 1]")
    return rho


def _check_gap(name: str, gap) -> float:
    gap = float(gap)
    if not 0.0 <= gap <= 2.0:
        raise ValueError(f"{name} = {gap}: must be a gap 1 - rho in [0, 2]")
    return gap


# -- the reduced ODE of k clusters -------------------------------------------------
def gram_rate(gram, masses, kind: str, beta: float) -> np.ndarray:
    """Ġ of the Gram matrix of k Dirac clusters (module doc, Gram form).

    Parameters
    ----------
    gram : array_like (k, k)
        G_ij = ⟨x_i, x_j⟩, symmetric, unit diagonal.
    masses : array_like (k,)
        w_j >= 0 (any total; USA speeds scale with it, SA does not depend on it).
    kind : {"SA", "USA"};  beta : float in [0, 700].

    Returns
    -------
    ndarray (k, k), symmetric with zero diagonal, in 1/time.

    Raises
    ------
    ValueError : kind, beta, masses out of range, shapes that do not match, or ``gram``
        not a Gram matrix of unit vectors (finite, symmetric, unit diagonal, |G_ij| <= 1).
    """
    kind, beta = check_kind(kind), check_beta(beta)
    g = np.asarray(gram, dtype=float)
    w = check_masses(masses, g.shape[0] if g.ndim == 2 else None)
    return _gram_rate(_check_gram("gram", g, w.size), w, kind, beta)


def _check_gram(name: str, g: np.ndarray, k: int) -> np.ndarray:
    """A Gram matrix of k unit vectors: shape (k, k), finite, symmetric, unit diagonal,
    entries in [−1, 1] (each to 1e-12). Raises ValueError naming ``name``."""
    if g.shape != (k, k):
        raise ValueError(f"{name}: shape {g.shape}: must be ({k}, {k})")
    tol = 1e-12
    if not (np.all(np.isfinite(g)) and np.all(np.abs(g) <= 1.0 + tol)
            and np.all(np.abs(g - g.T) <= tol) and np.all(np.abs(np.diag(g) - 1.0) <= tol)):
        raise ValueError(f"{name}: must be a Gram matrix of unit vectors: finite, symmetric, unit "
                         "diagonal, entries in [-1, 1]")
    return g


def _gram_rate(g: np.ndarray, w: np.ndarray, kind: str, beta: float) -> np.ndarray:
    """:func:`gram_rate` on checked arguments (the integrator's right-hand side)."""
    k = g.shape[0]
    if k == 1:
        return np.zeros((1, 1))
    if model_kind(kind).normalised:  # a_il = w_l e^{βG_il} / Σ_m w_m e^{βG_im}: shifted by the diagonal G_ii = 1
        a = w[None, :] * np.exp(beta * (g - 1.0))
        a /= a.sum(axis=1, keepdims=True)
        scale = np.ones((k, 1))
    else:  # a_il = w_l e^{βG_il}: shifted by each row's largest off-diagonal G_il, put back at
        # the end, so that e^{β(G_il − 1)} does not underflow when β(1 − G_il) > 745
        # (the self terms, e^{β(1 − m)}, would overflow at large β: −inf makes them 0 at once)
        self_term = np.eye(k, dtype=bool)
        m = np.where(self_term, -np.inf, g).max(axis=1, keepdims=True)
        a = w[None, :] * np.exp(np.where(self_term, -np.inf, beta * (g - m)))
        scale = np.exp(beta * m)
    # The self term l = i adds a_ii (g_ij − g_ii g_ij) = 0 exactly, but in floating point it is
    # a difference of a_ii ~ e^β terms that swamps the others (USA β = 700: ρ̇ came out 0).
    np.fill_diagonal(a, 0.0)
    t = (a @ g - np.sum(a * g, axis=1)[:, None] * g) * scale
    return t + t.T


def solve_gram(gram0, masses, kind: str, beta: float, times, *, rtol: float = 1e-12,
               atol: float = 1e-14) -> np.ndarray:
    """The Gram matrices G(t) of k clusters at ``times`` (solve_ivp, Radau IIA of order 5).

    Radau because the problem turns stiff as clusters close in: the gap 1 − G_ij decays
    at a rate ~ e^β, and an explicit method (DOP853 before) needed steps of that scale
    for ever after (t = 1e6 took minutes; Hairer & Wanner, Solving ODEs II, §IV.8).

    Parameters
    ----------
    gram0 : array_like (k, k), the Gram matrix at t = 0.
    masses, kind, beta : as :func:`gram_rate`.
    times : array_like (nt,), increasing, >= 0.
    rtol, atol : tolerances of the integrator (relative, absolute on G_ij).

    Returns
    -------
    ndarray (nt, k, k).

    Raises
    ------
    ValueError : arguments out of range; RuntimeError if the integrator fails.
    """
    kind, beta = check_kind(kind), check_beta(beta)
    g0 = np.asarray(gram0, dtype=float)
    w = check_masses(masses, g0.shape[0] if g0.ndim == 2 else None)
    _check_gram("gram0", g0, w.size)
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 1 or not np.all(np.isfinite(times)) or np.any(times < 0) \
            or np.any(np.diff(times) < 0):  # a NaN end made solve_ivp loop for ever
        raise ValueError("times: must be a one-dimensional increasing array of finite times >= 0")
    k = w.size
    iu = np.triu_indices(k, 1)

    def full(y):
        g = np.eye(k)
        g[iu] = y
        g[iu[1], iu[0]] = y
        return g

    def rhs(_t, y):
        return _gram_rate(full(y), w, kind, beta)[iu]

    if k == 1:
        return np.ones((times.size, 1, 1))
    sol = solve_ivp(rhs, (0.0, float(times[-1])), g0[iu], method="Radau", t_eval=times,
                    rtol=rtol, atol=atol)
    if not sol.success or not np.all(np.isfinite(sol.y)):
        raise RuntimeError(f"solve_gram: integration failed: {sol.message}")
    return np.stack([full(y) for y in sol.y.T])


# -- two clusters ----------------------------------------------------------------
def pair_rate(rho, w1: float, w2: float, kind: str, beta: float) -> float:
    """ρ̇ of two clusters with inner product ρ and masses w1, w2 (module doc).

    Returns a float >= 0 (1/time); 0 exactly at ρ = ±1.
    Raises ValueError on arguments out of range.
    """
    kind, beta = check_kind(kind), check_beta(beta)
    w1, w2 = check_masses([w1, w2])
    rho = _check_rho("rho", rho)
    if not model_kind(kind).normalised:
        return float((w1 + w2) * math.exp(beta * rho) * (1.0 - rho * rho))
    x = beta * (1.0 - rho)  # E = e^x reaches e^1400 near ρ = −1 at β = 700: use shares
    return float((1.0 - rho * rho) * (_share(w2, w1, x) + _share(w1, w2, x)))


def _share(a: float, b: float, x: float) -> float:
    """a / (a + b e^x) for a, b >= 0 (not both 0), x >= 0, without overflow (1/(1 + e^{x + log(b/a)}))."""
    if a == 0.0:
        return 0.0
    if b == 0.0:
        return 1.0
    return float(special.expit(-(x + math.log(b) - math.log(a))))


def _scaled_ei(a: float) -> float:
    """e^{−a} Ei(a) for a >= 0 (−inf at 0)."""
    if a <= _SCIPY_RANGE:
        return float(np.exp(-a) * special.expi(a)) if a > 0 else -math.inf
    term, total = 1.0 / a, 0.0
    for k in range(_SERIES_TERMS):
        total += term
        term *= (k + 1) / a
    return total


def _scaled_e1(b: float) -> float:
    """e^{b} E_1(b) for b > 0."""
    if b <= _SCIPY_RANGE:
        return float(np.exp(b) * special.exp1(b))
    term, total = 1.0 / b, 0.0
    for k in range(_SERIES_TERMS):
        total += term
        term *= -(k + 1) / b
    return total


def _F(gap: float, beta: float, shift: float) -> float:
    """e^{shift} F(1 − gap), F(s) = ∫ e^{−βs}/(1−s²) ds (module doc); β > 0, 0 < gap < 2."""
    with np.errstate(over="ignore"):
        scale = np.exp(shift - beta * (1.0 - gap))
    return float(-0.5 * scale * (_scaled_ei(beta * gap) + _scaled_e1(beta * (2.0 - gap))))


def _artanh(gap: float) -> float:
    """artanh(1 − gap) = ½ log((2 − gap)/gap), accurate for tiny gaps."""
    return 0.5 * (math.log(2.0 - gap) - math.log(gap))


def _sa_remainder(gap0: float, gap: float, beta: float, p: float, q: float) -> float:
    """R = ∫_{gap}^{gap0} du / (u (2−u) (q e^{βu} + 2p)) (the SA remainder, module doc).

    The singular parts 1/(2u(q+2p)) and 1/(2(2−u)(q e^{2β}+2p)) are integrated
    exactly; the rest h(u) = (A(u) − B)/(2(2−u)) with
    A(u) = [1 − 2qβ exprel(βu)/(q e^{βu} + 2p)]/(q+2p), B = 1/(q e^{2β}+2p), is
    smooth and bounded on [0, 2] and goes to ``quad``.
    """
    b = math.exp(-2.0 * beta) / (q + 2.0 * p * math.exp(-2.0 * beta))

    def ratio(u):  # 2qβ exprel(βu) / (q e^{βu} + 2p), without overflow
        x = beta * u
        if x <= 1.0:
            return 2.0 * q * beta * special.exprel(x) / (q * math.exp(x) + 2.0 * p)
        return -2.0 * q * math.expm1(-x) / (u * (q + 2.0 * p * math.exp(-x)))

    def smooth(u):
        return ((1.0 - ratio(u)) / (q + 2.0 * p) - b) / (2.0 * (2.0 - u))

    singular = (0.5 / (q + 2.0 * p)) * (math.log(gap0) - math.log(gap)) \
        + 0.5 * b * (math.log(2.0 - gap) - math.log(2.0 - gap0))
    rest, _err = quad(smooth, gap, gap0, epsabs=0.0, epsrel=1e-13, limit=200)
    return singular + rest


def pair_time_gap(gap0: float, gap: float, w1: float, w2: float, kind: str, beta: float) -> float:
    """Time for two clusters to go from gap 1 − ρ = ``gap0`` to ``gap`` (closed form, module doc).

    Parameters
    ----------
    gap0, gap : float in [0, 2]
        1 − ρ at the start and at the end (ρ the inner product of the centres).
    w1, w2 : float >= 0, not both 0
        Masses (USA times scale like 1/(w1 + w2); SA depends only on w1/w2).
    kind : {"SA", "USA"};  beta : float in [0, 700].

    Returns
    -------
    float: the time (negative if gap > gap0: the past of the flow); inf if the
    end is not reached (gap0 = 2, the unstable antipodal equilibrium, or
    gap = 0) or beyond the float range.

    Raises
    ------
    ValueError : an argument out of range.

    Notes
    -----
    USA: Ei/E_1 closed form; SA: Ei/E_1 + artanh, plus one smooth 1-D
    quadrature for w1 ≠ w2. Derivation in the module doc.
    """
    kind, beta = check_kind(kind), check_beta(beta)
    w1, w2 = check_masses([w1, w2])
    gap0, gap = _check_gap("gap0", gap0), _check_gap("gap", gap)
    if gap == gap0:
        return 0.0
    if gap0 == 2.0 or gap == 0.0:
        return math.inf if gap < gap0 else -math.inf
    if gap == 2.0 or gap0 == 0.0:
        return -math.inf if gap > gap0 else math.inf
    if beta < _BETA_ZERO:  # SA and USA: ρ̇ = c (1 − ρ²), c = w1 + w2 (USA), 1 (SA)
        speed = (w1 + w2) if not model_kind(kind).normalised else 1.0
        return (_artanh(gap) - _artanh(gap0)) / speed
    if not model_kind(kind).normalised:
        return (_F(gap, beta, 0.0) - _F(gap0, beta, 0.0)) / (w1 + w2)
    w1, w2 = w1 / (w1 + w2), w2 / (w1 + w2)  # SA depends on w1/w2 only: p, q stay in float range
    p, q = w1 * w2, w1 * w1 + w2 * w2
    t = (p / q) * (_F(gap, beta, beta) - _F(gap0, beta, beta))
    t += (1.0 - 2.0 * p * p / (q * q)) * (_artanh(gap) - _artanh(gap0))
    r = -p * (w1 - w2) ** 2 * (w1 + w2) ** 2 / (q * q)
    if r != 0.0 and math.isfinite(t):
        t += r * _sa_remainder(gap0, gap, beta, p, q)
    if not math.isfinite(t):  # e^{βδ} of both ends overflowed (inf − inf): beyond float range
        return math.inf if gap < gap0 else -math.inf
    return float(t)


def pair_time(rho0: float, rho: float, w1: float, w2: float, kind: str, beta: float) -> float:
    """Time for the inner product of two clusters to go from ``rho0`` to ``rho``.

    :func:`pair_time_gap` with gaps 1 − ρ (use it directly for ρ within 1e-8 of 1).
    """
    rho0, rho = _check_rho("rho0", rho0), _check_rho("rho", rho)
    return pair_time_gap(1.0 - rho0, 1.0 - rho, w1, w2, kind, beta)


def merge_time(rho0: float, w1: float, w2: float, kind: str, beta: float,
               angle: float = MERGE_ANGLE) -> float:
    """T_θ: the first time the angle between the two centres falls below ``angle`` (module doc).

    Parameters
    ----------
    rho0 : float in [−1, 1], ⟨x_1, x_2⟩ at t = 0.
    w1, w2, kind, beta : as :func:`pair_time_gap`.
    angle : float in (0, π), the merge angle θ (radians).

    Returns
    -------
    float >= 0 (0 if the centres start closer than θ; inf for ρ0 = −1).
    """
    kind, beta = check_kind(kind), check_beta(beta)  # all arguments before the early returns
    check_masses([w1, w2])
    angle = float(angle)
    if not 0.0 < angle < math.pi:
        raise ValueError(f"angle = {angle}: must be in (0, pi) radians")
    rho0 = _check_rho("rho0", rho0)
    gap = 2.0 * math.sin(0.5 * angle) ** 2
    if 1.0 - rho0 <= gap:
        return 0.0
    return pair_time_gap(1.0 - rho0, gap, w1, w2, kind, beta)


def pair_gap(t: float, gap0: float, w1: float, w2: float, kind: str, beta: float) -> float:
    """The gap 1 − ρ(t) of two clusters at time t >= 0 (the inverse of :func:`pair_time_gap`).

    Solved by Brent's method on log(gap) (relative accuracy ~1e-14 in the gap).
    Returns gap0 at ρ0 = ±1 (equilibria), 0.0 if the gap is below 1e-300.
    """
    kind, beta = check_kind(kind), check_beta(beta)  # all arguments before the early returns
    check_masses([w1, w2])
    t = float(t)
    if not (t >= 0.0 and math.isfinite(t)):
        raise ValueError(f"t = {t}: must be finite and >= 0")
    gap0 = _check_gap("gap0", gap0)
    if t == 0.0 or gap0 in (0.0, 2.0):
        return gap0

    def excess(log_gap):
        return pair_time_gap(gap0, math.exp(log_gap), w1, w2, kind, beta) - t

    hi = math.log(gap0)
    lo = hi - 1.0
    while excess(lo) < 0.0:
        if lo < math.log(1e-300):
            return 0.0
        lo = hi - 2.0 * (hi - lo)
    return math.exp(brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=200))
