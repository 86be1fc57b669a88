"""Figure of a hand-off run (:ref:`past-lost-resolution`): the staircase and its clusters.

Top: the density at the start of each plateau (the hand-off, then the first snapshot after
each merge; at most ``MAX_PLATEAUS``), as maps and orthographic views
(``meanfield_pde.plotting.plot.draw_sphere_maps``; after the hand-off the density is the
measure smoothed by the heat kernel), each disc centred on its own snapshot's clusters
(:func:`disc_centre`). Bottom: energy against log t (the staircase; the hand-off
and the merges marked), the number of clusters against log t, and each merge time of the run
(the bracket between two snapshots) against the two-Dirac closed form
(:func:`meanfield_pde.analysis.merges.merge_checks`).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..analysis.merges import merge_checks, merge_events  # noqa: E402
from .labels import run_description, run_title  # noqa: E402
from .plot import (draw_circle_lines, draw_sphere_maps, drawable, lat_lon, smoothed_snapshot,  # noqa: E402
                   time_values, view_centre)

MAX_PLATEAUS = 6
PEAK_RADIUS = 0.2     # radians: a cluster is a maximum of the smoothed density within ~11°
PEAK_FRACTION = 0.01  # ... at least this fraction of the highest one (lighter: not drawn as one)
MAX_PEAKS = 24        # the highest peaks considered for a disc's centre


def cluster_peaks(ds, i) -> np.ndarray:
    """Unit vectors (k, 3), highest first, of the clusters of snapshot ``i`` of a sphere run as
    its figure sees them: the maxima within ``PEAK_RADIUS`` of the density smoothed as
    :func:`meanfield_pde.plotting.plot.smoothed_snapshot` (the heat kernel of time 0.02 on the
    coefficients) above the uniform level 1/4π and above ``PEAK_FRACTION`` of the highest; at most
    ``MAX_PEAKS``. Shape (0, 3) for a snapshot without data. The same for the spectral snapshots
    and the particle ones (whose cluster variables are single-linkage groups of nodes: two broad
    clusters joined by a few stray nodes are one group there, two peaks here)."""
    found = smoothed_snapshot(ds, i)
    if found is None:
        return np.zeros((0, 3))
    grid, lat, lon = found
    f = np.where(np.isfinite(grid), grid, -np.inf)
    # the maxima of their 3 × 3 cells (longitude periodic), highest first ...
    padded = np.pad(np.pad(f, ((0, 0), (1, 1)), mode="wrap"), ((1, 1), (0, 0)), constant_values=-np.inf)
    around = np.max([padded[1 + a:padded.shape[0] - 1 + a, 1 + b:padded.shape[1] - 1 + b]
                     for a in (-1, 0, 1) for b in (-1, 0, 1)], axis=0)
    level = max(1.0 / (4.0 * np.pi), PEAK_FRACTION * float(np.max(f)))
    a, b = np.nonzero((f >= around) & (f > level))
    order = np.argsort(-f[a, b], kind="stable")
    la, lo = np.radians(lat[a[order]]), np.radians(lon[b[order]])
    x = np.stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)], axis=-1)
    # ... each a peak unless a higher one lies within PEAK_RADIUS (a plateau, a ripple on a flank)
    peaks: list[np.ndarray] = []
    for v in x:
        if len(peaks) == MAX_PEAKS:
            break
        if not peaks or np.max(np.asarray(peaks) @ v) < np.cos(PEAK_RADIUS):
            peaks.append(v)
    return np.asarray(peaks).reshape(-1, 3)  # at the nodes: to the grid's spacing (~180°/L)


def smallest_cap_centre(points: np.ndarray) -> tuple[np.ndarray, float]:
    """(c, r): the centre (unit vector) and angular radius (radians) of the smallest spherical cap
    holding every one of the unit vectors ``points`` (k >= 1, 3). As in the plane, the smallest
    cap is fixed by two points (centre their midpoint) or three (their circumcentre): every
    candidate is tried, O(k⁴) for the k <= MAX_PEAKS peaks of a figure."""
    p = np.asarray(points, float)
    cands = [p]
    if len(p) >= 2:
        i, j = np.triu_indices(len(p), 1)
        cands.append(p[i] + p[j])
    if len(p) >= 3:
        i, j, k = (a.ravel() for a in np.meshgrid(*[np.arange(len(p))] * 3, indexing="ij"))
        keep = (i < j) & (j < k)
        n = np.cross(p[j[keep]] - p[i[keep]], p[k[keep]] - p[i[keep]])
        cands += [n, -n]
    c = np.concatenate(cands)
    norm = np.linalg.norm(c, axis=1)
    c = c[norm > 1e-12] / norm[norm > 1e-12, None]
    radius = np.arccos(np.clip(c @ p.T, -1.0, 1.0)).max(axis=1)
    best = int(np.argmin(radius))
    return c[best], float(radius[best])


def disc_centre(ds, i) -> tuple[float, float]:
    """(lat, lon) in degrees on which the hand-off figure centres the disc of snapshot ``i``.

    The centre of the smallest cap holding that snapshot's clusters (:func:`cluster_peaks`,
    :func:`smallest_cap_centre`), so that each is as far from the disc's rim as any view can put
    it: two clusters sit symmetrically about the centre. Why not the final cluster (one view for
    every disc, as :func:`meanfield_pde.plotting.plot.plot_run` draws): an early cluster may be
    anywhere relative to where the last one ends, and sat on the rim or behind it. Why not the
    mass-weighted centroid of the clusters (their mean direction ∫ x f dσ): it leans to the
    heavy ones, putting a light cluster on the rim (masses 0.65 and 0.35, 120° apart: 87.5° from
    the centroid, where the disc shows nothing). Where the clusters fit in no hemisphere, no disc
    shows them all (the map above it does): the heaviest one is centred instead."""
    peaks = cluster_peaks(ds, i)
    if len(peaks) == 0:
        return view_centre(ds, i)
    centre, radius = smallest_cap_centre(peaks)
    if radius >= np.radians(85.0):
        return view_centre(ds, i)
    lat, lon = lat_lon(centre[None])
    return float(lat[0]), float(lon[0])


def plateau_starts(ds) -> list[int]:
    """Snapshot indices at the start of each plateau: the hand-off (last spectral snapshot), then
    the first snapshot at or after each merge (:func:`meanfield_pde.analysis.merges.merge_events`);
    at most MAX_PLATEAUS (the
    first and the last kept)."""
    t = ds.time.values
    phase = ds.phase.values
    spectral = np.flatnonzero(phase == 0)
    idx = [int(spectral[-1])] if spectral.size else [0]
    for tm in sorted({e.t for e in merge_events(ds)}):
        k = int(np.searchsorted(t, float(tm) * (1 - 1e-12)))
        if k < t.size and k not in idx:
            idx.append(k)
    if len(idx) > MAX_PLATEAUS:
        keep = np.unique(np.round(np.linspace(0, len(idx) - 1, MAX_PLATEAUS)).astype(int))
        idx = [idx[i] for i in keep]
    return idx


def plot_handoff(ds) -> Figure:
    """The figure of a hand-off run Dataset (module doc).

    Raises ValueError for a Dataset that is not a hand-off run (no ``phase`` variable).
    """
    if "phase" not in ds:
        raise ValueError("not a hand-off run: no 'phase' variable")
    ds = drawable(ds)  # as plot_run: a huge finite value must not crash the axes
    circle = "theta" in ds["density"].dims
    t = time_values(ds)
    idx = plateau_starts(ds)
    fig = plt.figure(figsize=(max(13.0, 3.4 * len(idx) + 1.5), 11.0), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.2, 1.0])
    if circle:
        draw_circle_lines(top, ds, idx, t)
    else:
        # each disc on its own snapshot's clusters (disc_centre says why)
        draw_sphere_maps(top, ds, idx, t, [disc_centre(ds, i) for i in idx])
    ax_e, ax_n, ax_m = bottom.subplots(1, 3)
    positive = t > 0
    t_h = float(ds.attrs["handoff_time"]) if "handoff_time" in ds.attrs else None
    merges = sorted({e.t for e in merge_events(ds)})
    phase = ds.phase.values
    ax_e.plot(t[positive & (phase == 0)], ds.energy.values[positive & (phase == 0)], ".-", label="spectral")
    ax_e.plot(t[positive & (phase == 1)], ds.energy.values[positive & (phase == 1)], ".-", label="particles")
    ax_n.step(t[phase == 1], ds.n_clusters.values[phase == 1], where="post")
    for ax in (ax_e, ax_n):
        ax.set_xscale("log")
        ax.set_xlabel("t")
        if t_h is not None:
            ax.axvline(t_h, color="k", ls=":", lw=1, label=f"hand-off t = {t_h:.3g}")
        for tm in merges:
            ax.axvline(tm, color="0.6", lw=0.6)
    ax_e.set(ylabel="energy E_β", title="energy: one step per merge")
    ax_e.legend(fontsize="small")
    ax_n.set(ylabel="number of clusters", title="clusters (grey: merges)")
    ax_n.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: no 2.5 clusters on the axis
    checks = merge_checks(ds)
    if checks:
        pred = np.array([c.predicted for c in checks])
        lo, hi = np.array([c.t_before for c in checks]), np.array([c.t for c in checks])
        mid = np.sqrt(lo * hi)
        exact = np.array([c.others == 0 for c in checks])
        for sel, label, marker in ((exact, "two clusters (exact reduced flow)", "o"),
                                   (~exact, "more clusters (others ignored)", "s")):
            if sel.any():
                ax_m.errorbar(pred[sel], mid[sel], yerr=[mid[sel] - lo[sel], hi[sel] - mid[sel]],
                              fmt=marker, label=label, capsize=3)
        finite = pred[np.isfinite(pred)]
        span = np.concatenate([finite, lo, hi])
        line = [span.min() / 2, span.max() * 2]
        ax_m.plot(line, line, "k--", lw=0.8, label="run = closed form")
        ax_m.set(xscale="log", yscale="log", xlabel="closed form t_0 + T_θ (theory.clusters.merge_time)",
                 ylabel="merge time in the run (snapshot bracket)", title="merge times")
        ax_m.legend(fontsize="small")
    else:
        ax_m.text(0.5, 0.5, "no merges", ha="center", va="center", transform=ax_m.transAxes)
        ax_m.set_axis_off()
    # as plot_run's title: the case and what ran; a stopped run's status on its own wrapped lines
    fig.suptitle(run_title(ds.attrs, f"{run_description(ds.attrs)}, hand-off to "
                                     f"{ds.attrs.get('handoff_nodes', '?')} nodes at t = "
                                     f"{t_h if t_h is not None else float('nan'):.3g}"))
    return fig
