"""Counting clusters: of a density on the circle or the sphere, and of tokens.

Peaks (:func:`count_peaks`, the sweeps' "clusters" measure): grid points where
f is the largest within geodesic distance ``radius`` and exceeds
``threshold`` f̄. This separates clusters that still hang together by
ridges (the network the sphere forms at large β before its nodes empty it).

Regions (:func:`count_clusters`): a cluster of a density f is a connected region of the grid where f exceeds
``threshold`` times the uniform density f̄ = 1/|S| and which holds at least
``min_mass`` of the mass; on the circle the grid is periodic, on the sphere
the longitude wraps and every grid row next to a pole is one neighbourhood.
For the sharp clusters of a metastable state (peaks far above f̄, depleted
in between) the count does not depend on these choices.

Tokens: the fraction of pairs i < j with ⟨x_i, x_j⟩ > 1 − ε (Geshkovski et
al., arXiv:2312.10794, the (t, β) phase diagram uses 1 − ε = 0.999).

Weighted points (:func:`~meanfield_pde.particles.clusters.weighted_clusters`, :func:`~meanfield_pde.particles.clusters.track_clusters`): clusters as data of
tokens or weighted nodes, defined in :mod:`meanfield_pde.particles.clusters` (a hand-off run
tracks them while it runs) and re-exported here.
"""

from __future__ import annotations


import numpy as np
from scipy import ndimage

from ..core.checks import check_number
from ..core.errors import ConfigError
from ..particles.clusters import (ClusterTracker, Clusters, MergeEvent,  # noqa: F401 (re-exported)
                                  track_clusters, weighted_clusters)

THRESHOLD = 1.0
MIN_MASS = 0.01
PAIR_LEVEL = 0.999


def _merge(labels: np.ndarray, n: int, pairs) -> np.ndarray:
    """Relabel after joining the label pairs (union–find); returns the map old -> root."""
    parent = np.arange(n + 1)

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for a, b in pairs:
        if a and b:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(a) for a in range(n + 1)])


def _grid_density(density, weights, area) -> tuple[np.ndarray, np.ndarray, float]:
    """(density, weights, area) checked: one snapshot (N,) or (nlat, nlon), weights of its shape,
    area > 0; else ConfigError naming the argument (a run's whole density(time, lat, lon) gave
    numpy's "truth value of an array is ambiguous", area = 0 a ZeroDivisionError)."""
    f, w = np.asarray(density, dtype=float), np.asarray(weights, dtype=float)
    if f.ndim not in (1, 2) or w.shape == f.shape[1:]:  # the latter: a time axis in front
        raise ConfigError(f"density: shape {f.shape}: must be one snapshot, (N,) on the circle or "
                          "(nlat, nlon) on the sphere (select a time: ds.density.isel(time=-1))")
    if w.shape != f.shape:
        raise ConfigError(f"weights: shape {w.shape}: must be the density's {f.shape}")
    return f, w, check_number("area", area, 1e-300, np.inf)


def cluster_masses(density: np.ndarray, weights: np.ndarray, area: float,
                   threshold: float = THRESHOLD) -> np.ndarray:
    """Masses of the connected regions where f > threshold/|S|, largest first.

    Parameters
    ----------
    density : ndarray, (N,) on the circle (periodic) or (nlat, nlon) on the sphere
    weights : ndarray, same shape, quadrature weights (Σ weights = |S|)
    area : float, |S| (2π or 4π)

    Raises
    ------
    ConfigError (a ValueError)
        density not one snapshot of those shapes, weights of another shape, area not > 0.
    """
    density, weights, area = _grid_density(density, weights, area)
    mask = density > threshold / area
    labels, n = ndimage.label(mask)
    if n == 0:
        return np.zeros(0)
    if density.ndim == 1:
        pairs = [(labels[0], labels[-1])]
    else:
        pairs = [(a, b) for a, b in zip(labels[:, 0], labels[:, -1])]  # longitude wraps
        for row in (labels[0], labels[-1]):  # the rows next to a pole meet there
            ids = row[row > 0]
            pairs += [(ids[0], i) for i in ids[1:]]
    root = _merge(labels, n, pairs)
    masses = np.bincount(root[labels].ravel(), weights=(density * weights).ravel(), minlength=n + 1)
    return np.sort(masses[1:][masses[1:] > 0])[::-1]


def count_clusters(density, weights, area, threshold: float = THRESHOLD,
                   min_mass: float = MIN_MASS) -> int:
    """Number of regions above threshold/|S| holding at least ``min_mass`` (see module doc);
    arguments and errors as :func:`cluster_masses`."""
    return int(np.sum(cluster_masses(density, weights, area, threshold) >= min_mass))


PEAK_RADIUS = 0.2
PEAK_THRESHOLD = 1.0


def peak_indices(points: np.ndarray, density: np.ndarray, area: float, radius: float = PEAK_RADIUS,
                 threshold: float = PEAK_THRESHOLD) -> np.ndarray:
    """Flat indices of the grid points where f > threshold/|S| and f is the maximum within ``radius``.

    Parameters
    ----------
    points : ndarray (..., dim)
        Unit vectors of the grid.
    density : ndarray (...)
        Values of f there (per unit area: the uniform density of unit mass is 1/|S|).
    area : float
        |S| (4π on S², 2π on S¹, 1 for a zonal density w.r.t. the probability measure).
    radius : float in [0, π]
        Geodesic radius (radians) of the neighbourhood.
    threshold : float
        In units of the uniform density 1/|S|.

    Returns
    -------
    ndarray of int, shape (n_peaks,), increasing: indices into ``density.ravel()``. Equal
    values on a plateau count once (the first point in grid order).

    Raises
    ------
    ConfigError (a ValueError)
        points and density do not match (one point per value), area not > 0, radius not in [0, π].
    """
    from scipy.spatial import cKDTree
    if np.shape(points)[:-1] != np.shape(density):  # was an IndexError from the tree's indices
        raise ConfigError(f"points: shape {np.shape(points)}: must be the density's "
                          f"{np.shape(density)} plus one axis of coordinates")
    x = np.asarray(points, float).reshape(-1, np.shape(points)[-1])
    f = np.asarray(density, float).ravel()
    area = check_number("area", area, 1e-300, np.inf)
    radius = check_number("radius", radius, 0.0, np.pi)
    candidates = np.flatnonzero(f > threshold / area)
    if candidates.size == 0:
        return candidates
    tree = cKDTree(x)
    chord = 2.0 * np.sin(radius / 2.0)
    peaks = []
    for i, near in zip(candidates, tree.query_ball_point(x[candidates], chord)):
        fmax = f[near].max()
        if f[i] == fmax and i == min(j for j in near if f[j] == fmax):
            peaks.append(i)
    return np.asarray(peaks, dtype=int)


def count_peaks(points: np.ndarray, density: np.ndarray, area: float, radius: float = PEAK_RADIUS,
                threshold: float = PEAK_THRESHOLD) -> int:
    """Number of grid points where f > threshold/|S| and f is the maximum within ``radius``
    (:func:`peak_indices`, whose arguments and errors it has).

    points : (..., dim) unit vectors of the grid; density : (...) values of f there;
    radius : geodesic radius (radians) of the neighbourhood; area : |S|.
    Equal values on a plateau count once (the first point in grid order).
    For a run's Dataset, :func:`meanfield_pde.analysis.dataset.cluster_centres` builds the
    points from the grid's coordinates.

    Raises ConfigError (a ValueError) if points and density do not match (one point per value),
    area is not > 0 or radius not >= 0.
    """
    return int(peak_indices(points, density, area, radius, threshold).size)


def clustered_pair_fraction(positions: np.ndarray, level: float = PAIR_LEVEL) -> np.ndarray:
    """Fraction of token pairs i < j with ⟨x_i, x_j⟩ > level, per snapshot.

    positions : (..., n, d) unit rows, n >= 2; returns shape (...).
    Raises ConfigError (a ValueError) for fewer than 2 tokens (no pair: the fraction was NaN).
    """
    x = np.asarray(positions)
    if x.ndim < 2 or x.shape[-2] < 2:
        raise ConfigError(f"positions: shape {x.shape}: must be (..., n, d) with n >= 2 tokens")
    n = x.shape[-2]
    gram = x @ np.swapaxes(x, -1, -2)
    iu = np.triu_indices(n, 1)
    return np.mean(gram[..., iu[0], iu[1]] > level, axis=-1)


# -- clusters of weighted points, and their merges -------------------------------------
