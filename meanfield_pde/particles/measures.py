"""Between particle clouds and densities: the same initial law for PDE and particles.

- :func:`density_from_particles`: the empirical measure (1/n) Σ δ_{x_i}
  projected on degrees <= L and smoothed by the heat kernel,
  f_lm = e^{−s l(l+1)} (1/n) Σ_i conj(Y_lm(x_i))  (S²; e^{−s k²} on S¹),
  i.e. the density of the cloud after Brownian motion run for time s
  (Grigor'yan, *Heat Kernel and Analysis on Manifolds*, §4.3: e^{sΔ} is
  diagonal in the eigenbasis of Δ); with ``degree_max`` only its degrees <= degree_max
  (the low-degree perturbation a PDE run can start from, matched to one token seed).
- :func:`sample_density`: n i.i.d. points from a PDE density, by rejection
  from the uniform law (von Neumann), exact for any f >= 0 on the grid.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ..core.geometry import Geometry


def density_from_particles(geometry: Geometry, points: np.ndarray, smoothing: float,
                           degree_max: int | None = None) -> np.ndarray:
    """Coefficients (ncoef,) of the heat-smoothed empirical density of ``points`` (n, dim).

    f_lm = e^{−s l(l+1)} (1/n) Σ_i conj(Y_lm(x_i)) for l <= degree_max (default: the
    geometry's L), 0 above: the L²(dσ) projection of (1/n) Σ δ_{x_i} on the degrees <= degree_max
    (orthonormal Y_lm, so f_00 = 1/√|S|: mass 1 for any cloud). A PDE run started from it with
    smoothing 0 and a small degree_max follows the same low-degree perturbation of the uniform
    state as the cloud's tokens, which is what seeds an instability (:ref:`past-lost-resolution`); the degrees above are what the Diracs are made of.

    Parameters
    ----------
    smoothing : float
        Heat-kernel time s >= 0 (units of the Laplacian: degree l is damped
        by e^{−s l(l+1)}); s = 0 is the plain projection on degrees <= L,
        which is not a positive function.
    degree_max : int, optional
        Highest degree kept, 0 <= degree_max <= L (L = geometry.lmax; the circle's
        wavenumbers |k|).

    Raises
    ------
    ConfigError
        If smoothing < 0, degree_max is outside [0, L] or the points are not unit vectors of
        the manifold.
    """
    if not smoothing >= 0:
        raise ConfigError(f"smoothing = {smoothing}: must be >= 0")
    top = int(np.max(geometry.degree))
    if degree_max is not None and not (isinstance(degree_max, (int, np.integer)) and 0 <= degree_max <= top):
        raise ConfigError(f"degree_max = {degree_max}: must be an integer in [0, {top}] (the geometry's lmax)")
    pts = np.asarray(points, dtype=float)
    dim = geometry.dimension  # proposals uniform on S^{d−1} ⊂ R^d (zonal: f depends on x_d alone)
    if pts.ndim != 2 or pts.shape[1] != dim or not np.allclose(np.linalg.norm(pts, axis=1), 1, atol=1e-8):
        raise ConfigError(f"points: must be unit vectors of shape (n, {dim}) on the {geometry.manifold}")
    coef = geometry.heat(geometry.empirical_coefficients(pts), smoothing)
    if degree_max is not None:
        coef[geometry.degree > degree_max] = 0
    return coef


def sample_density(geometry: Geometry, coef: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """n points (n, d) distributed with the density given by ``coef``, d = ``geometry.dimension``
    (on sphere_zonal: tokens in R^d whose t = ⟨x, e⟩ has the zonal density's law).

    Rejection sampling: propose uniform points, accept with probability
    f(x)/M where M bounds f (the grid maximum times 1.05, checked on every
    batch). Exact for densities >= 0.

    Raises
    ------
    ConfigError
        If n < 1 or the density is negative somewhere on the grid.
    """
    if n < 1:
        raise ConfigError(f"n = {n}: must be >= 1")
    grid = geometry.synthesis(coef)
    if np.min(grid) < -1e-12 * np.max(np.abs(grid)):
        raise ConfigError(f"the density is negative (min {np.min(grid):.3g}): cannot sample it")
    bound = 1.05 * np.max(grid)
    rng = np.random.default_rng(seed)
    dim = geometry.dimension  # proposals uniform on S^{d−1} ⊂ R^d (zonal: f depends on x_d alone)
    accepted, count = [], 0
    while count < n:
        batch = max(1024, int(1.5 * (n - count) * bound * geometry.area))
        x = rng.standard_normal((batch, dim))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        f = geometry.evaluate(coef, x)
        if np.max(f) > bound:
            raise ConfigError("sample_density: the density exceeds its grid maximum by > 5%: "
                              "raise lmax (the density is under-resolved)")
        keep = x[rng.uniform(0.0, bound, size=batch) < f]
        accepted.append(keep)
        count += len(keep)
    return np.concatenate(accepted)[:n]
