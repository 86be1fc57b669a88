"""Initial densities, as spectral coefficients on a geometry.

All are probability densities w.r.t. the area measure (∫ f dσ = 1, uniform
= 1/|S|). The von Mises–Fisher densities come from scipy.stats.vonmises_fisher,
so a particle run can sample exactly the law the PDE starts from.
"""

from __future__ import annotations

import numpy as np
from ..core.errors import ConfigError
from ..core.geometry import Geometry, unit_rows


def uniform(geometry: Geometry) -> np.ndarray:
    """Coefficients of f̄ = 1/|S| (only the l = 0 coefficient, √|S|/|S|)."""
    coef = geometry.zeros_coef()
    coef[0] = 1.0 / np.sqrt(geometry.area)
    return coef


def perturbed_uniform(geometry: Geometry, amplitude: float, degree_min: int, degree_max: int,
                      seed: int = 0) -> np.ndarray:
    """f = f̄ (1 + δ), δ with i.i.d. Gaussian coefficients on degree_min <= l <= degree_max.

    The draws are made in (l, m) order, so the same seed gives the same δ
    at any cut-off L >= degree_max. δ is scaled so that its RMS over the
    manifold, (∫ δ² dσ / |S|)^{1/2}, equals ``amplitude``.
    """
    coef = uniform(geometry)
    sel = np.flatnonzero((geometry.degree >= degree_min) & (geometry.degree <= degree_max))
    sel = sel[np.lexsort((geometry.order[sel], geometry.degree[sel]))]
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((sel.size, 2))
    delta = geometry.zeros_coef()
    delta[sel] = draws[:, 0] + 1j * np.where(geometry.real_coefficient[sel], 0.0, draws[:, 1])
    rms = np.sqrt(geometry.inner(delta, delta) / geometry.area)
    if rms > 0:
        coef += delta * (amplitude / rms) / geometry.area
    return coef


def spherical_harmonic(geometry, degree: int, order: int, amplitude: float) -> np.ndarray:
    """f = f̄ + a f_00 Y_lm (+ conjugate): f_lm = amplitude · f_00, all else uniform."""
    coef = uniform(geometry)
    coef[geometry.index(degree, order)] = amplitude * coef[0]
    return coef


def von_mises_fisher_pdf(points: np.ndarray, centres, concentrations, weights=None) -> np.ndarray:
    """Mixture density Σ_k w_k vMF(x; μ_k, κ_k) at unit vectors ``points`` (..., d).

    Centres are normalised; default weights are equal. Uses
    scipy.stats.vonmises_fisher (Mardia & Jupp, *Directional Statistics*, §9.3.2).
    """
    from scipy.stats import vonmises_fisher  # slow import, only needed here

    centres = unit_rows(centres)
    k = len(centres)
    weights = np.full(k, 1.0 / k) if weights is None or len(weights) == 0 else np.asarray(weights)
    flat = points.reshape(-1, points.shape[-1])
    pdf = sum(w * vonmises_fisher(mu, kappa).pdf(flat)
              for w, mu, kappa in zip(weights, centres, concentrations))
    return pdf.reshape(points.shape[:-1])


def zonal_von_mises_fisher(geometry: Geometry, centres, concentrations, weights=None) -> np.ndarray:
    """Coefficients of Σ_k w_k vMF(±e, κ_k) on S^{d−1} (zonal geometry): exact, mass 1.

    ``centres``: one-entry lists [1] (the axis e) or [-1] (−e); the density of one
    component w.r.t. the uniform probability measure is e^{±κt}/λ̄_0(κ), whose degree-l
    coefficient is (±1)^l p_l(1) I_{l+d/2−1}(κ)/I_{d/2−1}(κ)
    (:func:`meanfield_pde.core.kernels.vmf_zonal_coefficients`, in logarithms: the
    normaliser κ^{d/2−1}/((2π)^{d/2} I_{d/2−1}(κ)) of the vMF law over- or underflows in
    large d, the ratio does not). Same law as scipy.stats.vonmises_fisher in R^d with
    μ = ±e (Mardia & Jupp, *Directional Statistics*, §9.3.2). Shape (ncoef,).
    """
    from ..core.kernels import vmf_coefficients_on  # the geometry's lmax and d: its own, checked
    k = len(concentrations)
    weights = np.full(k, 1.0 / k) if weights is None or len(weights) == 0 else np.asarray(weights, float)
    sign = (-1.0) ** geometry.degree
    coef = geometry.zeros_coef()
    for w, mu, kappa in zip(weights, centres, concentrations):
        c = vmf_coefficients_on(geometry, kappa)
        coef += w * (c if float(mu[-1]) > 0 else sign * c)
    return coef


def von_mises_fisher(geometry: Geometry, centres, concentrations, weights=None,
                     max_spectral_tail: float = 1e-6, negative_density: float = 1e-3) -> np.ndarray:
    """Coefficients of a vMF mixture, projected to degree L and renormalised to mass 1.

    ``max_spectral_tail``, ``negative_density`` (the run's [monitor] limits) only set the
    lmax the error names.

    The projection truncates at L: for concentration κ the neglected
    coefficients are about exp(−L²/2κ) relative; the solver's resolution
    monitor rejects an initial state whose spectral tail is too large.
    """
    grid = von_mises_fisher_pdf(geometry.points, centres, concentrations, weights)
    coef = geometry.analysis(grid)
    mass = geometry.mass(coef)
    if not abs(mass - 1.0) < 1e-3:
        # a cluster narrower than the grid spacing: quadrature misses its mass
        raise ConfigError(f"initial.concentrations = {list(concentrations)}: too concentrated for "
                          f"domain.lmax = {geometry.lmax} (the grid sees mass {mass:.3g}); "
                          + von_mises_fisher_hint(geometry.manifold, centres, concentrations, weights,
                                                  max_spectral_tail, negative_density))
    return coef / mass


LMAX_RANGE = (2, 1023)  # domain.lmax's schema range (config.DomainConfig)


def von_mises_fisher_power(manifold: str, centres, concentrations, weights, lmax: int) -> np.ndarray:
    """Exact power spectrum C_l = Σ_m w_m |f_lm|², l = 0..lmax, of a vMF mixture, shape (lmax+1,).

    Funk–Hecke (as in :mod:`meanfield_pde.core.kernels`) and the addition theorem
    Σ_m Y_lm(μ) conj(Y_lm(ν)) = (2l+1)/(4π) P_l(⟨μ,ν⟩) give on S²

        C_l = (2l+1)/(4π) Σ_ab w_a w_b r_l(κ_a) r_l(κ_b) P_l(⟨μ_a, μ_b⟩),  r_l(κ) = i_l(κ)/i_0(κ),

    and on S¹ (f_k = Σ_a w_a r_k(κ_a) e^{−ikθ_a}/√(2π), r_k = I_k(κ)/I_0(κ))
    C_k = (w_k/2π) Σ_ab w_a w_b r_k(κ_a) r_k(κ_b) cos(k(θ_a − θ_b)), w_k = 1 (k = 0) or 2.
    The ratios come from scipy.special.ive (no overflow at any κ).
    """
    from scipy.special import eval_legendre, ive
    mu = np.asarray(centres, dtype=float)
    mu = mu / np.linalg.norm(mu, axis=1, keepdims=True)
    k = len(mu)
    w = np.full(k, 1.0 / k) if weights is None or len(weights) == 0 else np.asarray(weights, float)
    l = np.arange(lmax + 1, dtype=float)
    half = 0.5 if manifold == "sphere" else 0.0
    r = np.array([ive(l + half, kappa) / ive(half, kappa) for kappa in concentrations])
    cos = np.clip(mu @ mu.T, -1.0, 1.0)
    power = np.zeros(lmax + 1)
    for a in range(k):
        for b in range(k):
            if manifold == "sphere":
                shape = (2 * l + 1) / (4 * np.pi) * eval_legendre(l, cos[a, b])
            else:
                shape = np.where(l == 0, 1.0, 2.0) / (2 * np.pi) * np.cos(l * np.arccos(cos[a, b]))
            power += w[a] * w[b] * r[a] * r[b] * shape
    return np.maximum(power, 0.0)


def _truncated_minimum(manifold: str, kappa: float, lmax: int, npoints: int) -> np.ndarray:
    """min over the manifold of the single vMF(κ) series cut at L, for L = 0..lmax (shape (lmax+1,)).

    Zonal, so a function of the angle s to the centre on npoints angles in [0, π]:
    S²: f_L(s) = Σ_{l<=L} (2l+1)/(4π) r_l(κ) P_l(cos s) (P_l by the three-term recurrence);
    S¹: f_L(s) = (1/2π)(1 + 2 Σ_{1<=k<=L} r_k(κ) cos ks). r as in :func:`von_mises_fisher_power`.
    """
    from scipy.special import ive
    s = np.linspace(0.0, np.pi, npoints)
    l = np.arange(lmax + 1, dtype=float)
    half = 0.5 if manifold == "sphere" else 0.0
    r = ive(l + half, kappa) / ive(half, kappa)
    out = np.empty(lmax + 1)
    if manifold == "sphere":
        t = np.cos(s)
        p_prev, p = np.zeros_like(t), np.ones_like(t)
        f = np.zeros_like(t)
        for n in range(lmax + 1):
            f += (2 * n + 1) / (4 * np.pi) * r[n] * p
            out[n] = f.min()
            p_prev, p = p, ((2 * n + 1) * t * p - n * p_prev) / (n + 1)
    else:
        f = np.full_like(s, 1.0 / (2 * np.pi))
        out[0] = f.min()
        for k in range(1, lmax + 1):
            f += r[k] * np.cos(k * s) / np.pi
            out[k] = f.min()
    return out


def von_mises_fisher_lmax(manifold: str, centres, concentrations, weights=None,
                          max_spectral_tail: float = 1e-6, negative_density: float = 1e-3) -> int | None:
    """The smallest domain.lmax in LMAX_RANGE at which the vMF mixture passes the resolution
    monitor (:class:`meanfield_pde.numerics.diagnostics.ResolutionMonitor` with these limits), or None.

    Both checks are made on the exact series with a factor 2 margin for the grid:
    the spectral tail (:func:`meanfield_pde.numerics.diagnostics.spectral_tail` of
    :func:`von_mises_fisher_power`) <= max_spectral_tail/2, and the Gibbs undershoot
    of the cut series, bounded below by Σ_a w_a min f_{a,L} (each component's cut series
    is zonal: ``_truncated_minimum``), >= −negative_density/(2|S|).
    """
    from .diagnostics import TAIL_FRACTION
    lo, hi = LMAX_RANGE
    power = von_mises_fisher_power(manifold, centres, concentrations, weights, hi)
    total = np.cumsum(power)
    tail_ok = np.zeros(hi + 1, dtype=bool)
    for L in range(lo, hi + 1):
        cut = int(np.floor(TAIL_FRACTION * L))
        tail_ok[L] = total[L] > 0 and (total[L] - total[cut]) / total[L] <= 0.5 * max_spectral_tail
    if not tail_ok.any():
        return None
    first = int(np.argmax(tail_ok))
    k = len(concentrations)
    w = np.full(k, 1.0 / k) if weights is None or len(weights) == 0 else np.asarray(weights, float)
    area = 4 * np.pi if manifold == "sphere" else 2 * np.pi
    floor = -0.5 * negative_density / area
    npoints = 16 * hi + 1  # ~16 points per oscillation of the highest degree
    minimum = sum(wa * _truncated_minimum(manifold, kappa, hi, npoints)
                  for wa, kappa in zip(w, concentrations))
    good = np.flatnonzero(tail_ok & (minimum >= floor))
    good = good[good >= max(first, lo)]
    return int(good[0]) if good.size else None


def von_mises_fisher_hint(manifold: str, centres, concentrations, weights=None,
                          max_spectral_tail: float = 1e-6, negative_density: float = 1e-3) -> str:
    """What to change for a vMF mixture that lmax does not resolve (a value that is accepted;
    on sphere_zonal only the direction of the change)."""
    if manifold == "sphere_zonal":
        return "raise domain.lmax or lower initial.concentrations"
    need = von_mises_fisher_lmax(manifold, centres, concentrations, weights, max_spectral_tail,
                                 negative_density)
    if need is None:
        return (f"no domain.lmax in [{LMAX_RANGE[0]}, {LMAX_RANGE[1]}] resolves it "
                f"(monitor.max_spectral_tail = {max_spectral_tail:g}): lower initial.concentrations")
    return f"use domain.lmax >= {need} or smaller initial.concentrations"


def _nonnegative(geometry: Geometry, coef: np.ndarray, spec) -> np.ndarray:
    """A band-limited perturbation of the uniform density must stay a density on the grid."""
    fmin = float(np.min(geometry.synthesis(coef)))
    if fmin < 0.0:
        raise ConfigError(f"initial.amplitude = {spec.amplitude:g}: the initial density is negative "
                          f"(min f = {fmin:.3g} on the grid, uniform = {1 / geometry.area:.3g}); "
                          "lower initial.amplitude")
    return coef


def initial_density(geometry: Geometry, spec, max_spectral_tail: float = 1e-6,
                    negative_density: float = 1e-3) -> np.ndarray:
    """Coefficients of the initial density described by a validated [initial] section.

    ``max_spectral_tail``, ``negative_density``: the [monitor] limits, for the lmax a vMF
    refusal names.

    Raises
    ------
    ConfigError
        A perturbed-uniform or spherical-harmonic density that is negative
        somewhere on the grid (amplitude too large), or a vMF mixture too
        concentrated for domain.lmax.
    """
    # Dispatch on the section's ``type`` key, not on the config classes: those live in the
    # runs layer above this one.
    if getattr(spec, "type", None) == "perturbed_uniform":
        return _nonnegative(geometry, perturbed_uniform(geometry, spec.amplitude, spec.degree_min,
                                                        spec.degree_max, spec.seed), spec)
    if getattr(spec, "type", None) == "spherical_harmonic":
        return _nonnegative(geometry, spherical_harmonic(geometry, spec.degree, spec.order,
                                                         spec.amplitude), spec)
    if getattr(spec, "type", None) == "von_mises_fisher":
        if geometry.manifold == "sphere_zonal":
            return zonal_von_mises_fisher(geometry, spec.centres, spec.concentrations, spec.weights)
        return von_mises_fisher(geometry, spec.centres, spec.concentrations, spec.weights,
                                max_spectral_tail, negative_density)
    raise TypeError(f"unknown initial specification {spec!r}")
