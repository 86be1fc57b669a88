"""Clusters as data of a weighted point set Σ_j w_j δ_{x_j} on the sphere (tokens, or the nodes
of a run continued past lost resolution): centres, masses and radii at each snapshot
(:func:`weighted_clusters`), with persistent identities and the merge events (time bracket,
the two parents, the new mass) (:class:`ClusterTracker`, :func:`track_clusters`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..theory.clusters import MERGE_ANGLE


# A cluster of a weighted point set Σ_j w_j δ_{x_j} (tokens, or the nodes of a continued
# run) is a group of points linked by geodesic distances <= ``angle`` (single linkage:
# connected components of that graph), holding at least ``min_mass``. Its centre is the
# normalised barycentre, its radius the mass-weighted rms geodesic distance to the centre.
# For Dirac clusters this is the merge criterion of theory.clusters (two clusters are one
# once their centres are closer than θ), so with the same θ the detected merge times
# bracket the closed-form T_θ.
@dataclass(frozen=True)
class Clusters:
    """Clusters of a weighted point set at one time (see the comment above).

    centres : ndarray (k, d), unit rows;  masses : ndarray (k,), Σ w_j of the members;
    radii : ndarray (k,), rms geodesic distance of the members to the centre (radians);
    labels : ndarray (n,), the cluster of each point (−1: in a group lighter than min_mass);
    ids : ndarray (k,), persistent identities (set by :func:`track_clusters`, else 0..k−1).
    Clusters are ordered by decreasing mass.
    """

    centres: np.ndarray
    masses: np.ndarray
    radii: np.ndarray
    labels: np.ndarray
    ids: np.ndarray


@dataclass(frozen=True)
class MergeEvent:
    """Two clusters became one between the snapshots at ``t_before`` and ``t``.

    parents : (int, int), the ids of the two clusters;  child : int, the id of the result;
    mass : float, the mass of the result at ``t``.
    """

    t_before: float
    t: float
    parents: tuple
    child: int
    mass: float


def weighted_clusters(x, weights=None, angle: float = MERGE_ANGLE,
                      min_mass: float = 0.0) -> Clusters:
    """Clusters (centres, masses, radii) of the points x with masses ``weights``.

    Parameters
    ----------
    x : array_like (n, d), unit rows;  weights : array_like (n,) >= 0, or None (1/n each).
    angle : float in (0, π), the linkage distance (radians; default theory.clusters.MERGE_ANGLE).
    min_mass : float >= 0, lighter groups are not clusters (their points get label −1).

    Returns
    -------
    Clusters, ordered by decreasing mass.

    Raises
    ------
    ValueError : x not (n, d), weights not n values >= 0, angle or min_mass out of range.

    Notes
    -----
    Single linkage chains: a few stray points between two clusters can join them.
    Without noise the flow empties the space between clusters, so for continued runs
    this only matters right at a merge.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"x: shape {x.shape}: must be (n, d) with n >= 1, d >= 2")
    n = x.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weights: must be {n} finite values >= 0")
    if not 0.0 < float(angle) < np.pi:
        raise ValueError(f"angle = {angle}: must be in (0, pi) radians")
    if not float(min_mass) >= 0.0:
        raise ValueError(f"min_mass = {min_mass}: must be >= 0")
    pairs = cKDTree(x).query_pairs(2.0 * np.sin(0.5 * float(angle)), output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])) if len(pairs)
                       else (np.zeros(0), (np.zeros(0, int), np.zeros(0, int))), shape=(n, n))
    count, group = connected_components(graph, directed=False)
    mass = np.bincount(group, weights=w, minlength=count)
    sums = np.zeros((count, x.shape[1]))
    np.add.at(sums, group, w[:, None] * x)
    keep = np.flatnonzero((mass >= min_mass) & (mass > 0.0))
    keep = keep[np.argsort(-mass[keep], kind="stable")]
    rank = np.full(count, -1)
    rank[keep] = np.arange(keep.size)
    labels = rank[group]
    centres = sums[keep] / np.linalg.norm(sums[keep], axis=1, keepdims=True)
    radii = np.zeros(keep.size)
    member = labels >= 0
    theta = np.arccos(np.clip(np.einsum("ij,ij->i", x[member], centres[labels[member]]), -1, 1))
    np.add.at(radii, labels[member], w[member] * theta ** 2)
    radii = np.sqrt(radii / mass[keep])
    return Clusters(centres=centres, masses=mass[keep], radii=radii, labels=labels,
                    ids=np.arange(keep.size))


class ClusterTracker:
    """Clusters snapshot by snapshot with persistent ids, and the merge events (the step of
    :func:`track_clusters`, for runs that store each snapshot as it comes).

    Parameters
    ----------
    angle, min_mass : as :func:`weighted_clusters`.

    Each call of :meth:`update` matches the clusters of the new snapshot to those of the
    previous one as :func:`track_clusters` describes.
    """

    def __init__(self, angle: float = MERGE_ANGLE, min_mass: float = 0.0):
        self.angle, self.min_mass = angle, min_mass
        self.previous: Clusters | None = None
        self.t_previous = 0.0
        self.next_id = 0

    def update(self, t: float, x, weights=None) -> tuple[Clusters, list]:
        """The clusters at time ``t`` of the points x (n, d) with masses ``weights`` (ids set),
        and the list of :class:`MergeEvent` since the previous call (empty on the first).

        No points (n = 0: e.g. no density peak above a threshold) gives no clusters and ends
        the tracks: the clusters of the next call are new (they appear; they do not merge),
        with ids after every earlier one."""
        x = np.asarray(x, dtype=float)
        if x.ndim == 2 and x.shape[0] == 0:
            none = Clusters(np.zeros((0, x.shape[1])), np.zeros(0), np.zeros(0),
                            np.zeros(0, dtype=int), np.zeros(0, dtype=int))
            self.previous, self.t_previous = None, float(t)
            return none, []
        c = weighted_clusters(x, weights, self.angle, self.min_mass)
        events = []
        prev = self.previous
        if prev is None:
            ids = np.arange(c.masses.size) + self.next_id
        else:
            ids = np.full(c.masses.size, -1)
            if c.masses.size and prev.masses.size:
                nearest = np.argmax(prev.centres @ c.centres.T, axis=1)
            else:
                nearest = np.zeros(0, dtype=int)
            for j in range(c.masses.size):
                parents = list(np.flatnonzero(nearest == j))
                if len(parents) == 1:
                    ids[j] = prev.ids[parents[0]]
                    continue
                if not parents:
                    ids[j], self.next_id = self.next_id, self.next_id + 1
                    continue
                # pairwise: the closest centres first; a union is represented by its barycentre
                nodes = [(int(prev.ids[i]), prev.masses[i] * prev.centres[i], prev.masses[i]) for i in parents]
                while len(nodes) > 1:
                    a, b = max(((a, b) for a in range(len(nodes)) for b in range(a + 1, len(nodes))),
                               key=lambda ab: (nodes[ab[0]][1] / np.linalg.norm(nodes[ab[0]][1]))
                               @ (nodes[ab[1]][1] / np.linalg.norm(nodes[ab[1]][1])))
                    last = len(nodes) == 2
                    mass = c.masses[j] if last else nodes[a][2] + nodes[b][2]
                    events.append(MergeEvent(t_before=float(self.t_previous), t=float(t),
                                             parents=(nodes[a][0], nodes[b][0]), child=self.next_id,
                                             mass=float(mass)))
                    merged = (self.next_id, nodes[a][1] + nodes[b][1], nodes[a][2] + nodes[b][2])
                    self.next_id += 1
                    nodes = [nd for i, nd in enumerate(nodes) if i not in (a, b)] + [merged]
                ids[j] = nodes[0][0]
        self.next_id = max(self.next_id, int(ids.max()) + 1 if ids.size else 0)
        found = Clusters(c.centres, c.masses, c.radii, c.labels, ids)
        self.previous, self.t_previous = found, float(t)
        return found, events


def track_clusters(times, positions, weights=None, angle: float = MERGE_ANGLE,
                   min_mass: float = 0.0) -> tuple[list, list]:
    """Clusters at every snapshot with persistent ids, and the merge events between snapshots.

    Each cluster of snapshot k is matched to the cluster of snapshot k+1 nearest to its
    centre (geodesic). A cluster of k+1 that receives one cluster keeps its id; one that
    receives none gets a new id; one that receives m >= 2 is the result of m − 1 merges,
    reported pairwise (the closest pair of centres first, their union standing for the
    pair in the next comparison), each with a new id, all at the time t of snapshot k+1
    (``t_before`` = the time of snapshot k: the merge happened in between).

    Parameters
    ----------
    times : array_like (nt,), increasing.
    positions : sequence of nt arrays (n_k, d), unit rows (n_k may change: merged nodes).
    weights : sequence of nt arrays (n_k,), or None (1/n_k each).
    angle, min_mass : as :func:`weighted_clusters`.

    Returns
    -------
    (clusters, events): a list of nt :class:`Clusters` (with ``ids``), a list of
    :class:`MergeEvent` in time order.
    """
    times = np.asarray(times, dtype=float)
    if len(positions) != times.size or (weights is not None and len(weights) != times.size):
        raise ValueError("positions (and weights): need one array per time")
    tracker = ClusterTracker(angle, min_mass)
    found, events = [], []
    for k, t in enumerate(times):
        c, new = tracker.update(t, positions[k], None if weights is None else weights[k])
        found.append(c)
        events.extend(new)
    return found, events
