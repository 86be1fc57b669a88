"""Between particle clouds and densities: the same initial law for PDE and particles.

- :func:`density_from_particles`: the empirical measure (1/n) Σ δ_{x_i}
  projected on degrees <= L and smoothed by the heat kernel,
  f_lm = e^{−s l(l+1)} (1/n) Σ_i conj(Y_lm(x_i))  (S²; e^{−s k²} on S¹),
  i.e. the density of the cloud after Brownian motion run for time s
  (Grigor'yan, *Heat Kernel and Analysis on Manifolds*, §4.3: e^{sΔ} is
  diagonal in the eigenbasis of Δ).
- :func:`sample_density`: n i.i.d. points from a PDE density, by rejection
  from the uniform law (von Neumann), exact for any f >= 0 on the grid.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ..core.geometry import Geometry


def density_from_particles(geometry: Geometry, points: np.ndarray, smoothing: float) -> np.ndarray:
    """Coefficients (ncoef,) of the heat-smoothed empirical density of ``points`` (n, dim).

    Parameters
    ----------
    smoothing : float
        Heat-kernel time s >= 0 (units of the Laplacian: degree l is damped
        by e^{−s l(l+1)}); s = 0 is the plain projection on degrees <= L,
        which is not a positive function.

    Raises
    ------
    ConfigError
        If smoothing < 0 or the points are not unit vectors of the manifold.
    """
    if not smoothing >= 0:
        raise ConfigError(f"smoothing = {smoothing}: must be >= 0")
    pts = np.asarray(points, dtype=float)
    dim = 3 if geometry.manifold == "sphere" else 2
    if pts.ndim != 2 or pts.shape[1] != dim or not np.allclose(np.linalg.norm(pts, axis=1), 1, atol=1e-8):
        raise ConfigError(f"points: must be unit vectors of shape (n, {dim}) on the {geometry.manifold}")
    return geometry.heat(geometry.empirical_coefficients(pts), smoothing)


def sample_density(geometry: Geometry, coef: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """n points (n, dim) distributed with the density given by ``coef``.

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
    dim = 3 if geometry.manifold == "sphere" else 2
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
