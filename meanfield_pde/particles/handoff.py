"""Hand-off from a spectral density to weighted nodes: f on the grid -> μ = Σ_j w_j δ_{x_j}.

Without noise the mean-field equation is a continuity equation with a smooth
velocity V[μ], so a weighted sum of Diracs stays one and moves by
ẋ_i = V[μ](x_i) (:func:`.adaptive.integrate_weighted`). The density of a
spectral run, synthesised on a Gauss grid, is such a measure to quadrature
accuracy: with the grid points x_j and quadrature weights q_j,

    w_j = f(x_j) q_j,    Σ_j w_j g(x_j) = ∫ f g dσ

exactly for every g with deg f + deg g within the grid's exactness (degree
<= min(2 nlat − 1, nphi − 1) on the Gauss grid of S², < npoints on the
uniform grid of S¹). The velocity of the nodes is then the PDE's velocity up
to the kernel's tail above that degree (coefficients ~ (β/2)^l / l!,
negligible for the grids in use), and following them continues the run
with the exact flow of the quadrature measure: the particle ("blob without
blob") method for aggregation equations (Carrillo, Craig & Patacchini,
"A blob method for diffusion", Calc. Var. PDE 58, 2019, §1 and the
particle approximation of the aggregation term; Craig & Bertozzi, "A blob
method for the aggregation equation", Math. Comp. 85, 2016, eq. (1.3) and
the particle method (1.5)). What is left is the quadrature error of the
pushed-forward measure, ∫ g∘Φ_t f dσ against Σ_j w_j g(Φ_t(x_j)): g∘Φ_t
sharpens as the flow contracts, so it grows with the time since the hand-off
and falls fast with the number of nodes. Measured (SA, β = 10, two vMF,
hand-off at t = 1 from L = 31, coefficients l <= 6 at t = 2 against L = 47):
6.6e-6 with 2048 nodes (32 × 64 grid), 1.4e-6 with 3200, 4.0e-7 with 4608
(the solver's grid), 4.4e-8 with 8192.

Two choices this module makes, and how large their effect is:

* Negative grid values (Gibbs undershoot of a sharp density): a node cannot
  carry a negative mass in a probability measure, so f is clipped to 0 and the
  remaining weights are scaled by M / Σ_{f_j>0} w_j, keeping the mass M
  exactly. The clipped mass Σ q_j max(−f_j, 0) is reported
  (:attr:`Nodes.clipped_mass`); it bounds the change of every integral of a
  function |g| <= 1 by 2 × clipped_mass. A resolved density (the resolution
  monitor's min-density threshold) has clipped_mass ~ 0.
* Negligible nodes (optional, ``drop_mass`` > 0): the lightest nodes whose
  masses add up to at most ``drop_mass``·M are removed and each one's mass
  is given to the nearest kept node (chord distance), which moves to the
  normalised barycentre of itself and what it absorbed (as
  :func:`.adaptive.merge_coincident` does). The mass is kept exactly (to
  rounding) and the first moment Σ w x up to the normalisation of the
  barycentres, O(Σ w h²) for a grid spacing h; every integral of a
  Lipschitz g changes by at most Lip(g) × W1, and W1 (chord) is at most the
  cost of moving every absorbed and every receiving node to its new place,
  reported as :attr:`Nodes.moved_mass_distance`. The cost of the continuation
  is O(N²) per velocity evaluation, so dropping the empty part of the grid
  pays once the mass has concentrated. The drop lowers the energy a little
  (merging at a barycentre lowers Σ_j w_j e^{β⟨x,x_j⟩} felt elsewhere, by
  Jensen's inequality), so the energy is continuous across the hand-off only
  without it. Measured (SA, β = 10, two vMF at t = 1, L = 31, 2048 nodes,
  tests/particles/test_handoff.py): budget 1e-4 keeps 1633 nodes, lowers E by 1.5e-7
  (relative) and changes the order parameter, E and the coefficients l <= 6
  one time unit later by 2e-6, 6e-7 (relative), 5e-6; budget 1e-2 keeps 915
  nodes and changes them by 5e-5, 3e-4, 3e-4. The default is no drop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..core.errors import ConfigError
from ..core.geometry import Geometry

METHOD = "gauss_quadrature_nodes"
"""Name of the hand-off method (for run files): nodes = grid points, w_j = f(x_j) q_j."""


@dataclass(frozen=True)
class Nodes:
    """Weighted nodes of a density (result of :func:`nodes_from_density`).

    Attributes
    ----------
    positions : ndarray (n, d)
        Unit vectors (d = 3 on S², 2 on S¹); n <= grid_size.
    weights : ndarray (n,)
        Masses w_j > 0 (clipped and dropped nodes removed); Σ w_j = mass.
    mass : float
        ∫ f dσ by the grid quadrature (exact for a band-limited f): the measure's mass.
    grid_size : int
        Number of grid points (nodes before clipping and dropping).
    clipped_mass : float
        Σ_j q_j max(−f(x_j), 0) >= 0, the negative mass removed before renormalising.
    dropped_mass : float
        Mass of the nodes removed by ``drop_mass`` (given to their nearest kept nodes).
    moved_mass_distance : float
        Σ_j w_j |x_j − c_j| over the dropped nodes and the nodes that received them, c_j
        the receiving node's new place (chord): the cost of a transport plan from the
        undropped to the dropped measure, so an upper bound of their 1-Wasserstein
        distance, which bounds the drop's effect on integrals of Lipschitz functions.
    """

    positions: np.ndarray
    weights: np.ndarray
    mass: float
    grid_size: int
    clipped_mass: float
    dropped_mass: float
    moved_mass_distance: float


def quadrature_weights(geometry: Geometry) -> np.ndarray:
    """Quadrature weights q_j of the geometry's grid, shape geometry.points.shape[:-1].

    S²: the Gauss–Legendre weights times 2π/nphi (Σ q_j = 4π); S¹: 2π/npoints
    (the trapezoid rule, exact for trigonometric polynomials of degree < npoints).

    Raises
    ------
    ConfigError
        For a geometry without a quadrature grid of point masses (the zonal sphere).
    """
    if geometry.manifold == "sphere":
        return np.asarray(geometry.weights, dtype=float)
    if geometry.manifold == "circle":
        return np.full(geometry.points.shape[:-1], geometry.area / geometry.points.shape[0])
    raise ConfigError(f"manifold = {geometry.manifold!r}: the hand-off to weighted nodes needs "
                      "'sphere' or 'circle' (a zonal density has no nodes on S^{d-1})")


def nodes_from_density(geometry: Geometry, coef, *, drop_mass: float = 0.0) -> Nodes:
    """The quadrature measure of a density as weighted nodes, for :func:`.adaptive.integrate_weighted`.

    Parameters
    ----------
    geometry : Geometry
        Sphere or Circle whose grid carries the nodes. Any grid of the same lmax
        will do, since the coefficient layout depends on lmax only: e.g. the smallest
        Gauss grid ``Sphere(L, 32, 2L + 2)`` gives about 2.2× fewer nodes than the
        solver's dealiased grid and is still exact for ∫ f g with deg g <= min(63, 2L+1) − L.
    coef : array_like (geometry.ncoef,), complex
        Spectral coefficients of the density f (w.r.t. the area measure σ; a probability
        density has ∫ f dσ = 1).
    drop_mass : float in [0, 1), keyword-only
        Budget, as a fraction of the mass, of the lightest nodes to remove and merge into
        their nearest kept node (module doc); 0 (default) keeps every node with f > 0.

    Returns
    -------
    Nodes
        positions (n, d), weights (n,) with Σ w = ∫ f dσ, and the clipped and dropped masses.

    Raises
    ------
    ConfigError
        coef not of shape (ncoef,) or not finite; drop_mass outside [0, 1); the density's
        mass not positive (no measure to hand off); the zonal geometry.
    """
    q = quadrature_weights(geometry)
    coef = np.asarray(coef)
    if coef.shape != (geometry.ncoef,):
        raise ConfigError(f"coef: shape {coef.shape}: must be ({geometry.ncoef},), the "
                          f"coefficients of lmax = {geometry.lmax}")
    if not np.all(np.isfinite(coef)):
        raise ConfigError("coef: must be finite")
    drop_mass = float(drop_mass)
    if not 0.0 <= drop_mass < 1.0:
        raise ConfigError(f"drop_mass = {drop_mass}: must be in [0, 1)")
    f = geometry.synthesis(np.ascontiguousarray(coef, dtype=np.complex128)).ravel()
    w = f * q.ravel()
    x = geometry.points.reshape(-1, geometry.points.shape[-1])
    mass = float(np.sum(w))
    positive = w > 0.0
    if not (mass > 0.0 and math.isfinite(mass)) or not positive.any():
        raise ConfigError(f"coef: the density's mass is {mass!r}: must be > 0 to hand off to nodes")
    clipped = float(-np.sum(w[~positive]))
    x, w = x[positive], w[positive]
    w = w * (mass / np.sum(w))
    dropped, moved = 0.0, 0.0
    if drop_mass > 0.0 and w.size > 1:
        x, w, dropped, moved = _drop_lightest(x, w, drop_mass * mass)
    return Nodes(positions=np.ascontiguousarray(x), weights=w, mass=mass, grid_size=int(f.size),
                 clipped_mass=clipped, dropped_mass=dropped, moved_mass_distance=moved)


def _drop_lightest(x: np.ndarray, w: np.ndarray, budget: float):
    """Remove the lightest nodes with total mass <= budget; each goes to its nearest kept node."""
    order = np.argsort(w, kind="stable")
    ndrop = int(np.searchsorted(np.cumsum(w[order]), budget, side="right"))
    ndrop = min(ndrop, w.size - 1)  # keep at least one node
    if ndrop == 0:
        return x, w, 0.0, 0.0
    drop, keep = order[:ndrop], np.sort(order[ndrop:])
    nearest = cKDTree(x[keep]).query(x[drop])[1]
    mass = w[keep].copy()
    moment = w[keep, None] * x[keep]
    np.add.at(mass, nearest, w[drop])
    np.add.at(moment, nearest, w[drop, None] * x[drop])
    # the barycentre of masses within a few grid spacings never vanishes
    centre = moment / np.linalg.norm(moment, axis=1, keepdims=True)
    # transport plan: each dropped node and each kept node to its receiver's new place
    cost = np.sum(w[drop] * np.linalg.norm(x[drop] - centre[nearest], axis=1)) \
        + np.sum(w[keep] * np.linalg.norm(x[keep] - centre, axis=1))
    return centre, mass, float(np.sum(w[drop])), float(cost)
