"""Initial densities, as spectral coefficients on a geometry.

All are probability densities w.r.t. the area measure (∫ f dσ = 1, uniform
= 1/|S|). The von Mises–Fisher densities come from scipy.stats.vonmises_fisher,
so a particle run can sample exactly the law the PDE starts from.
"""

from __future__ import annotations

import numpy as np
from .config import PerturbedUniform, SphericalHarmonic, VonMisesFisher
from .errors import ConfigError
from .geometry import Geometry


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

    from .particles.sampling import unit_rows
    centres = unit_rows(centres)
    k = len(centres)
    weights = np.full(k, 1.0 / k) if weights is None or len(weights) == 0 else np.asarray(weights)
    flat = points.reshape(-1, points.shape[-1])
    pdf = sum(w * vonmises_fisher(mu, kappa).pdf(flat)
              for w, mu, kappa in zip(weights, centres, concentrations))
    return pdf.reshape(points.shape[:-1])


def von_mises_fisher(geometry: Geometry, centres, concentrations, weights=None) -> np.ndarray:
    """Coefficients of a vMF mixture, projected to degree L and renormalised to mass 1.

    The projection truncates at L: for concentration κ the neglected
    coefficients are about exp(−L²/2κ) relative; the solver's resolution
    monitor rejects an initial state whose spectral tail is too large.
    """
    grid = von_mises_fisher_pdf(geometry.points, centres, concentrations, weights)
    coef = geometry.analysis(grid)
    mass = geometry.mass(coef)
    if not abs(mass - 1.0) < 1e-3:
        # a cluster narrower than the grid spacing: quadrature misses its mass
        need = int(np.ceil(5.3 * np.sqrt(max(concentrations))))  # exp(−L²/2κ) ≈ 1e-6
        raise ConfigError(f"initial.concentrations = {list(concentrations)}: too concentrated for "
                          f"domain.lmax = {geometry.lmax} (the grid sees mass {mass:.3g}); "
                          f"use domain.lmax >= {need} or smaller concentrations")
    return coef / mass


def _nonnegative(geometry: Geometry, coef: np.ndarray, spec) -> np.ndarray:
    """A band-limited perturbation of the uniform density must stay a density on the grid."""
    fmin = float(np.min(geometry.synthesis(coef)))
    if fmin < 0.0:
        raise ConfigError(f"initial.amplitude = {spec.amplitude:g}: the initial density is negative "
                          f"(min f = {fmin:.3g} on the grid, uniform = {1 / geometry.area:.3g}); "
                          "lower initial.amplitude")
    return coef


def initial_density(geometry: Geometry, spec) -> np.ndarray:
    """Coefficients of the initial density described by a validated [initial] section.

    Raises
    ------
    ConfigError
        A perturbed-uniform or spherical-harmonic density that is negative
        somewhere on the grid (amplitude too large), or a vMF mixture too
        concentrated for domain.lmax.
    """
    if isinstance(spec, PerturbedUniform):
        return _nonnegative(geometry, perturbed_uniform(geometry, spec.amplitude, spec.degree_min,
                                                        spec.degree_max, spec.seed), spec)
    if isinstance(spec, SphericalHarmonic):
        return _nonnegative(geometry, spherical_harmonic(geometry, spec.degree, spec.order,
                                                         spec.amplitude), spec)
    if isinstance(spec, VonMisesFisher):
        return von_mises_fisher(geometry, spec.centres, spec.concentrations, spec.weights)
    raise TypeError(f"unknown initial specification {spec!r}")
