"""Figure of a hand-off run (:ref:`past-lost-resolution`): the staircase and its clusters.

Top: the density at the start of each plateau (the hand-off, then the first snapshot after
each merge; at most ``MAX_PLATEAUS``), as maps and orthographic views
(``meanfield_pde.plotting.plot.draw_sphere_maps``; after the hand-off the density is the
measure smoothed by the heat kernel). Bottom: energy against log t (the staircase; the hand-off
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

from ..analysis.merges import merge_checks, merge_events  # noqa: E402
from ..core.errors import printable  # noqa: E402
from .labels import attr_number, status_lines  # noqa: E402
from .plot import draw_circle_lines, draw_sphere_maps, drawable, time_values  # noqa: E402

MAX_PLATEAUS = 6


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
        draw_sphere_maps(top, ds, idx, t, None)
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
    # the status on its own wrapped lines, as under plot_run's title: a long one was cut off
    fig.suptitle("\n".join([printable(
        f"{ds.attrs.get('model', '?')} on {ds.attrs.get('manifold', '?')}: β = {attr_number(ds.attrs, 'beta')}, "
        f"ν = 0, lmax = {attr_number(ds.attrs, 'lmax')}, hand-off to {ds.attrs.get('handoff_nodes', '?')} "
        f"nodes at t = {t_h if t_h is not None else float('nan'):.3g}")] + status_lines(ds.attrs)))
    return fig
