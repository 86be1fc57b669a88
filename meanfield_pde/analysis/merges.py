"""The merge events of a hand-off run beside the two-Dirac closed form (theory.clusters).

A hand-off run (:mod:`meanfield_pde.runs.handoff_run`) stores the clusters of every snapshot
after its hand-off (``cluster_id``, ``cluster_centre``, ``cluster_mass``) and its merge events
with the snapshot each was found at (:func:`merge_events`). For each event the
prediction starts from the first snapshot of the plateau that the merge ends (the first
snapshot after the previous merge, or after the hand-off, holding both parents): with the
parents' masses w_a, w_b and ρ0 = ⟨c_a, c_b⟩ there, the merge is predicted at
t_0 + T_θ(ρ0, w_a, w_b) (:func:`meanfield_pde.theory.clusters.merge_time`, θ the run's
``cluster_angle``: the angle at which the run's single-linkage clusters join two Diracs).
This is exact for two Dirac clusters alone (the SA/USA two-cluster ODE, :ref:`cluster-dynamics`) and neglects the pull of the other clusters when there are more; clusters that are
not yet Diracs (radius > 0) merge earlier than their centres' closed form says (their nearest
nodes link first), by a time that vanishes with the radius.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..particles.clusters import MergeEvent
from ..theory.clusters import merge_time


@dataclass(frozen=True)
class MergeCheck:
    """One merge of a run beside its closed-form prediction.

    parents : (int, int) cluster ids;  t_before, t : the snapshots around the merge in the run;
    t_start : the snapshot the prediction starts from;  rho0 : ⟨c_a, c_b⟩ there;
    masses : (w_a, w_b);  predicted : t_start + T_θ (inf if the pair is antipodal);
    others : number of other clusters at t_start (0: the closed form is the exact reduced flow).
    """

    parents: tuple
    t_before: float
    t: float
    t_start: float
    rho0: float
    masses: tuple
    predicted: float
    others: int


def merge_events(ds: xr.Dataset) -> list[MergeEvent]:
    """The merge events of a hand-off run Dataset, in time order.

    Read from the variables written with each snapshot (``merge_count`` and, along the
    ``merge`` dimension, ``merge_time_before``, ``merge_parent_a/b``, ``merge_child``,
    ``merge_mass``; the event's ``t`` is the snapshot's time): also a run killed before its end
    has every merge up to its last snapshot. A snapshot with more merges than the ``merge``
    dimension (``handoff.max_clusters``) holds gives the first ones (``merge_count`` counts all).
    A file written before these variables has its events as global attributes ``merge_*``
    (written at the end of the run), read the same way.

    Returns [] for a run without merges (or without either record of them).
    """
    if "merge_count" in ds.variables:
        count = np.asarray(ds["merge_count"].values)
        times = np.asarray(ds["time"].values, dtype=float)
        before, mass, a, b, child = (np.asarray(ds[k].values) for k in (
            "merge_time_before", "merge_mass", "merge_parent_a", "merge_parent_b", "merge_child"))
        return [MergeEvent(t_before=float(before[i, j]), t=float(times[i]),
                           parents=(int(a[i, j]), int(b[i, j])), child=int(child[i, j]),
                           mass=float(mass[i, j]))
                for i in np.flatnonzero(count > 0) for j in range(min(int(count[i]), before.shape[1]))]
    n = int(ds.attrs.get("n_merges", 0))
    if n == 0:
        return []
    before, at, a, b, child, mass = (np.atleast_1d(ds.attrs[k]) for k in (
        "merge_time_before", "merge_time", "merge_parent_a", "merge_parent_b", "merge_child", "merge_mass"))
    return [MergeEvent(t_before=float(before[i]), t=float(at[i]), parents=(int(a[i]), int(b[i])),
                       child=int(child[i]), mass=float(mass[i])) for i in range(n)]


def merge_checks(ds: xr.Dataset, max_radius: float = np.inf) -> list[MergeCheck]:
    """The merge events of a hand-off run Dataset with their two-Dirac predictions (module doc).

    ``max_radius`` (radians): start each prediction only from a snapshot where both parents'
    radii are at most this (e.g. 1e-6: Diracs, where the closed form is exact for two clusters).

    Returns [] for a run without merges. Raises ValueError for a Dataset that is not a hand-off
    run (no ``phase`` / ``cluster_id`` variables).
    """
    if "phase" not in ds or "cluster_id" not in ds:
        raise ValueError("not a hand-off run: no 'phase' or 'cluster_id' variable")
    events = merge_events(ds)
    if not events:
        return []
    kind, beta = str(ds.attrs["model"]), float(ds.attrs["beta"])
    angle = float(ds.attrs["cluster_angle"])
    times = ds.time.values
    ids = ds.cluster_id.values
    after = np.flatnonzero(ds.phase.values == 1)
    begin = float(times[after[0]]) if after.size else float(times[-1])
    out = []
    for event in events:
        a, b = event.parents
        start = None
        for k in after:
            if times[k] >= begin and a in ids[k] and b in ids[k]:
                radii = ds.cluster_radius.values[k, [list(ids[k]).index(a), list(ids[k]).index(b)]]
                if np.all(radii <= max_radius):
                    start = k
                    break
        if start is None:  # a parent made and merged between two snapshots
            begin = event.t
            continue
        row = list(ids[start])
        ja, jb = row.index(a), row.index(b)
        ca, cb = ds.cluster_centre.values[start, ja], ds.cluster_centre.values[start, jb]
        wa, wb = float(ds.cluster_mass.values[start, ja]), float(ds.cluster_mass.values[start, jb])
        rho0 = float(np.clip(ca @ cb, -1.0, 1.0))
        t0 = float(times[start])
        out.append(MergeCheck(parents=(a, b), t_before=event.t_before, t=event.t, t_start=t0,
                              rho0=rho0, masses=(wa, wb),
                              predicted=t0 + merge_time(rho0, wa, wb, kind, beta, angle),
                              others=int(ds.n_clusters.values[start]) - 2))
        begin = event.t
    return out
