"""Linear stability of the uniform density for the SA/USA mean-field equation.

Linearising ∂_t f + div(f V[f]) = ν Δf about the uniform density f̄ = 1/|S|
diagonalises in spherical harmonics (S²) or Fourier modes (S¹), because the
kernel e^{β⟨x,y⟩} is zonal (Funk–Hecke, λ_l in :mod:`meanfield_pde.core.kernels`).
A perturbation ε Y_l grows like e^{σ_l t} with (:ref:`linear-theory`)

    S²:  σ_l^USA = l(l+1) [ i_l(β)/β − ν ]     σ_l^SA = l(l+1) [ i_l(β)/(β i_0(β)) − ν ]
    S¹:  σ_k^USA = k²     [ I_k(β)/β − ν ]     σ_k^SA = k²     [ I_k(β)/(β I_0(β)) − ν ]
    S^{d−1}: σ_l^USA = l(l+d−2) [ λ_l/(β|S^{d−1}|) − ν ]   σ_l^SA = l(l+d−2) [ λ_l/(β λ_0) − ν ]

where i_l(β) = √(π/2β) I_{l+1/2}(β). Derivation: USA V = ∇(λ_l ε Y_l)/β, so
−div(f̄ V) = f̄ λ_l l(l+1) ε Y_l / β and f̄ λ_l = i_l(β) (S²: λ_l = 4π i_l) or
I_k(β) (S¹: λ_k = 2π I_k); SA divides by Φ̄ = λ_0 f̄. In any dimension the same
computation with the Gegenbauer harmonics of degree l (eigenvalue −l(l+d−2) of Δ) and
λ_l = (2π)^{d/2} β^{1−d/2} I_{l+d/2−1}(β) gives the third line. Sources: Geshkovski,
Letrouit, Polyanskiy & Rigollet, "A mathematical perspective on Transformers"
(arXiv:2312.10794), the linearisation of the mean-field equation about the
uniform measure and the mode selection it implies (number of clusters of the
first metastable state ≈ the fastest mode); Bruno, Pasqualotto, Agazzi et al.
on the emergence of metastable clusters from the uniform state, which use the
same growth rates; derivation in :ref:`linear-theory`.

Everything is built on :func:`kernels.gradient_multipliers`, which works from
exponentially scaled Bessel functions: β = 0 gives the exact limits and β up
to 700 gives the USA rates (~ e^β/β²) without overflow.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.checks import (KINDS, check_beta, check_choice, check_int, check_kind,  # noqa: F401
                           check_nonnegative)  # (KINDS, check_beta, check_kind: public here before)
from ..core.checks import check_dimension
from ..core.kernels import gradient_multipliers, kernel_degree_cutoff
from ..core.model_kinds import model_kind

MANIFOLDS = ("sphere", "circle", "sphere_zonal")
_AREA = {"sphere": 4.0 * np.pi, "circle": 2.0 * np.pi}


# -- argument checks: core.checks (one set for every layer; ConfigError, a ValueError)
def _check_nu(nu) -> float:
    return check_nonnegative("nu", nu)


def _check_manifold(manifold) -> str:
    return check_choice("manifold", manifold, MANIFOLDS)


def _resolve(manifold: str, dimension) -> tuple[str, int | None]:
    """(manifold, d) for the kernel: d = 2, 3 are the circle and the sphere (today's
    closed forms); any other d is S^{d−1} by the general formula ("sphere_zonal").

    "sphere" and "circle" accept dimension None or their own d (3, 2), and "sphere"
    any d (S^{d−1}); "sphere_zonal" needs d.
    """
    manifold = _check_manifold(manifold)
    if dimension is None:
        if manifold == "sphere_zonal":
            raise ValueError("dimension = None: manifold 'sphere_zonal' needs the dimension d")
        return manifold, None
    d = check_dimension(dimension)
    if manifold == "circle" and d != 2:
        raise ValueError(f"dimension = {d}: the circle has d = 2")
    if d == 2:
        return "circle", None
    if d == 3:
        return "sphere", None
    return "sphere_zonal", d



# -- growth rates ---------------------------------------------------------------
# σ_l of every degree up to 10**6 takes 0.2 s; lmax = 10**9 (a typo) took the machine's memory
# (several float arrays of lmax + 1 entries), and past l ~ 40√β σ_l is −ν l(l+1) to round-off
LMAX_MAX = 10**6


def _kernel_part(kind: str, beta: float, lmax: int, manifold: str,
                 dimension: int | None = None) -> np.ndarray:
    """The bracket's kernel term, shape (lmax+1,), entry 0 set to 0 (mass is conserved).

    USA: λ_l/(|S| β) = i_l(β)/β (S²) or I_k(β)/β (S¹);  SA: λ_l/(β λ_0).
    ``manifold``, ``dimension`` as resolved by :func:`_resolve`.
    """
    if model_kind(kind).normalised:
        return gradient_multipliers(beta, lmax, manifold, normalise=True, dimension=dimension)
    if manifold == "sphere_zonal":  # multipliers of the normalised measure: |S| = 1
        return gradient_multipliers(beta, lmax, manifold, dimension=dimension)
    return gradient_multipliers(beta, lmax, manifold) / _AREA[manifold]


def growth_rates(kind: str, beta: float, nu: float, lmax: int,
                 manifold: str = "sphere", dimension: int | None = None) -> np.ndarray:
    """Growth rates σ_l of mode l about the uniform density, l = 0..lmax.

    Parameters
    ----------
    kind : {"SA", "USA"}
    beta : float
        Inverse temperature β in [0, 700] (dimensionless).
    nu : float
        Noise ν >= 0 (diffusion coefficient, units of 1/time on the unit sphere).
    lmax : int
        Largest degree l (sphere) or wavenumber k (circle), >= 0.
    manifold : {"sphere", "circle", "sphere_zonal"}
    dimension : int or None
        Ambient dimension d in [2, 4096] of S^{d−1}; None: the manifold's own (3 for
        "sphere", 2 for "circle"; required for "sphere_zonal"). d = 3 and d = 2 give the
        sphere's and the circle's values bit for bit.

    Returns
    -------
    ndarray, shape (lmax+1,)
        σ_l in units of 1/time (the time of the PDE, i.e. transformer depth).
        σ_0 = 0. Mode l grows iff σ_l > 0. USA rates are ~ e^β/β², large but
        finite for β <= 700 (each is a product of finite floats).

    Raises
    ------
    ValueError
        kind not in {SA, USA}; beta outside [0, 700]; nu < 0 or not finite;
        lmax not an integer in [0, LMAX_MAX = 10**6]; manifold not in {sphere, circle, sphere_zonal};
        dimension outside [2, 4096] or not the manifold's.
    """
    kind, beta, nu = check_kind(kind), check_beta(beta), _check_nu(nu)
    lmax = check_int("lmax", lmax, 0, LMAX_MAX)
    manifold, d = _resolve(manifold, dimension)
    l = np.arange(lmax + 1, dtype=float)
    if manifold == "sphere":
        eig = l * (l + 1.0)  # eigenvalue of −Δ
    elif manifold == "circle":
        eig = l * l
    else:
        eig = l * (l + d - 2.0)
    return eig * (_kernel_part(kind, beta, lmax, manifold, d) - nu)


def _auto_lmax(beta: float) -> int:
    # Beyond the kernel cutoff (λ_l/λ_0 < 1e-16) the kernel part is negligible,
    # while σ_l peaks near l(l+1) ≈ 2β (l ≈ √(2β) < 8.6√β): the argmax lies below it.
    return max(4, int(math.ceil(kernel_degree_cutoff(beta))) + 2)


def fastest_mode(kind: str, beta: float, nu: float = 0.0, manifold: str = "sphere",
                 lmax: int | None = None, dimension: int | None = None) -> int:
    """The fastest-growing degree l*(β) (sphere) or wavenumber k*(β) (circle).

    argmax over l >= 1 of σ_l (:func:`growth_rates`); l* sets the number of
    clusters of the first metastable state. SA and USA select the same mode
    (their kernel parts differ by the positive factor i_0(β)), except through
    ν. Examples: l* = 2, 3, 4, 6, 10, 14 at β = 2, 5, 10, 20, 50, 100 on S²;
    k* = 3 at β = 5 and 4 at β = 7 on S¹.

    If ν >= :func:`critical_noise` no mode grows; the result is then the least
    damped mode, which is l = 1 (κ_l − ν < κ_1 − ν <= 0 and l(l+1) > 2).

    Parameters
    ----------
    lmax : int or None
        Largest degree searched (>= 1). Default: the kernel cutoff
        ≈ 8.6√β, plus 2 and at least 4 (:func:`kernels.kernel_degree_cutoff`),
        where λ_l/λ_0 < 1e-16; σ_l peaks near l ≈ √(2β), well below it. In
        dimension d, λ_l/λ_0 ≈ exp(−l(l+d−2)/2β) falls faster: the same bound holds.
    Other parameters as in :func:`growth_rates`.

    Returns
    -------
    int >= 1

    Raises
    ------
    ValueError
        As :func:`growth_rates`; lmax < 1.
    """
    beta = check_beta(beta)
    lmax = _auto_lmax(beta) if lmax is None else check_int("lmax", lmax, 1, LMAX_MAX)
    sigma = growth_rates(kind, beta, nu, lmax, manifold, dimension)
    return int(np.argmax(sigma[1:])) + 1


def critical_noise(kind: str, beta: float, manifold: str = "sphere",
                   dimension: int | None = None) -> float:
    """The largest noise ν at which the uniform density has an unstable mode.

    Mode l is unstable iff ν < kernel part κ_l (the bracket of σ_l without ν),
    so the threshold is max_{l>=1} κ_l. κ_l is strictly decreasing in l for
    β > 0 (I_a(β) decreases in the order a >= 0), and zero for l >= 2 at β = 0,
    so the maximum is attained at l = 1 for both kinds::

        USA: ν_1 = i_1(β)/β (S²), I_1(β)/β (S¹)
        SA:  ν_1 = i_1(β)/(β i_0(β)) (S²), I_1(β)/(β I_0(β)) (S¹).

    At β = 0 both give 1/3 on S² and 1/2 on S¹ (the noisy Kuramoto pitchfork), 1/d on
    S^{d−1} (λ_1/β → |S^{d−1}|/d); in general ν_1 = λ_1/(β|S^{d−1}|) (USA),
    λ_1/(βλ_0) = I_{d/2}(β)/(β I_{d/2−1}(β)) (SA).
    This is the *linear* threshold; for β > 0 the transition may be
    discontinuous (a clustered minimiser can exist above it; :ref:`linear-theory`).

    Parameters
    ----------
    kind : {"SA", "USA"};  beta : float in [0, 700];  manifold, dimension : as in
    :func:`growth_rates`.

    Returns
    -------
    float
        ν_1 (units of 1/time). For USA it grows like e^β/(2β²) on S² and
        e^β/(√(2π) β^{3/2}) on S¹, finite for β <= 700.

    Raises
    ------
    ValueError
        kind, beta or manifold out of range.
    """
    # Computed as an explicit max (not just l = 1) so the claim above is checked by the tests.
    manifold, d = _resolve(manifold, dimension)
    kappa = _kernel_part(check_kind(kind), check_beta(beta), 8, manifold, d)
    return float(np.max(kappa[1:]))


# -- cluster positions on the circle --------------------------------------------
def predicted_cluster_positions(coef_k_star: complex, k_star: int) -> np.ndarray:
    """Angles of the k* clusters grown by the linear instability on the circle.

    Convention (stated so no guessing is needed): μ̂_k = ∫_0^{2π} f(θ) e^{−ikθ} dθ,
    the k-th Fourier coefficient of the initial density f. Any coefficient
    a·μ̂_k with a > 0 (e.g. the normalisation 1/2π or an empirical 1/n Σ
    e^{−ikθ_i}) has the same argument and gives the same answer; for a
    convention with e^{+ikθ}, pass the complex conjugate.

    Derivation: the linear flow multiplies mode k by the real factor e^{σ_k t},
    so the dominant part of f is f̄ + ε Re(c e^{ikθ}), c = |c| e^{iφ}, ε > 0,
    i.e. f̄ + ε|c| cos(kθ + φ), whose maxima are at kθ + φ = 2πj::

        θ_j = (2πj − φ)/k  mod 2π,   j = 0..k−1.

    And ∫ (ε/2)(c e^{ikθ} + c̄ e^{−ikθ}) e^{−ikθ} dθ = π ε c, so arg μ̂_k = φ.

    Parameters
    ----------
    coef_k_star : complex
        μ̂_{k*} of the initial density (nonzero).
    k_star : int
        The selected wavenumber k* >= 1 (e.g. :func:`fastest_mode` on the circle).

    Returns
    -------
    ndarray, shape (k_star,)
        The angles θ_j in radians, in [0, 2π), sorted ascending.

    Raises
    ------
    ValueError
        k_star not an integer >= 1; coef_k_star not one number, zero or not finite (no phase).
    """
    k = check_int("k_star", k_star, 1)
    a = np.asarray(coef_k_star)
    try:  # one number, also as a size-1 array (coefficients sliced from a run: complex() of a
        c = complex(a.reshape(-1)[0]) if a.size == 1 else None  # 1-d array is a TypeError)
    except (TypeError, ValueError):
        c = None
    if c is None:
        raise ValueError(f"coef_k_star = {coef_k_star!r}: must be one complex number")
    if not (c != 0 and np.isfinite(c.real) and np.isfinite(c.imag)):
        raise ValueError(f"coef_k_star = {coef_k_star!r}: must be finite and nonzero "
                         "(its phase sets the positions)")
    theta = np.mod((2.0 * np.pi * np.arange(k) - np.angle(c)) / k, 2.0 * np.pi)
    theta[theta >= 2.0 * np.pi] = 0.0  # mod of a tiny negative rounds up to 2π
    return np.sort(theta)
