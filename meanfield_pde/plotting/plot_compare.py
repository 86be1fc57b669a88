"""Figure of a comparison of two runs (PDE, limit or particles), from :func:`compare.compare`.

:func:`plot_comparison` draws the densities of both runs side by side at a
few common times (row A, row B) and, below, the distances over time with
their sampling-noise levels and the differences of the order parameter and
energy. :func:`save_comparison_figure` writes it to a PNG. Plain matplotlib
with the Agg backend, as in :mod:`meanfield_pde.plotting.plot`.
"""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")  # never needs a display; we only save files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..runs.outputs import save_png  # noqa: E402

from ..analysis.compare import (comparison_geometry, complex_coefficients,  # noqa: E402
                                is_particle_run, on_common_time_axis, snapshot_positions)
from .events import departure, event_indices  # noqa: E402
from .labels import time_axis, time_symbol  # noqa: E402
from .plot import (lat_lon, degree_power, token_directions, cell_edges, draw_orthographic,  # noqa: E402
                   orthographic, positive_only, select_times, view_centre)

__all__ = ["plot_comparison", "save_comparison_figure"]

MAX_SCATTER = 4000  # particles drawn per map when a cloud is shown as points


# --------------------------------------------------------------------------
# what to draw for one run at one time
# --------------------------------------------------------------------------
def _nearest(ds, t):
    """Index of the snapshot of ``ds`` nearest to time t."""
    return int(np.argmin(np.abs(np.asarray(ds["time"].values, float) - t)))


def _map_smoothing(runs, comparison):
    """Heat-kernel time of the maps, applied to both runs: the comparison's smoothing, else a
    particle run's own ``smoothing`` attribute, else 0 (particles then drawn as points)."""
    candidates = [comparison.attrs.get("smoothing", 0.0)]
    candidates += [ds.attrs.get("smoothing", 0.0) for ds in runs if is_particle_run(ds)]
    return next((float(s) for s in candidates if float(s) > 0), 0.0)


def _snapshot(ds, i, manifold, smoothing):
    """What represents snapshot i of a run.

    Returns
    -------
    ("grid", coords, values, label)
        A density on a grid: coords = (lat, lon) on the sphere, (theta,) on the circle.
    ("points", positions, None, label)
        A particle cloud drawn as points (no smoothing to make it a density).
    """
    particles = is_particle_run(ds)
    if particles and smoothing <= 0:
        return "points", snapshot_positions(ds, i), None, f"particles (n = {ds['positions'].shape[1]})"
    what = f"particles (n = {ds['positions'].shape[1]})" if particles else "density"
    if smoothing <= 0 and "density" in ds:
        dens = ds["density"]
        if manifold == "sphere":
            return ("grid", (np.asarray(ds["lat"], float), np.asarray(ds["lon"], float)),
                    np.asarray(dens.transpose("time", "lat", "lon").values[i], float), what)
        return ("grid", (np.asarray(ds["theta"], float),),
                np.asarray(dens.transpose("time", "theta").values[i], float), what)
    coef = complex_coefficients(ds).isel(time=i)
    geo = comparison_geometry(manifold, int(coef.l.max()))
    values = geo.synthesis(geo.heat(geo.from_table(coef.values), smoothing))
    coords = (geo.lat, geo.lon) if manifold == "sphere" else (geo.theta,)
    return "grid", coords, values, what + (f", heat-smoothed s = {smoothing:g}" if smoothing > 0 else "")


def _run_label(ds, comparison, key):
    title = comparison.attrs.get(f"run_{key}", "") or ds.attrs.get("title", "")
    kind = comparison.attrs.get(f"kind_{key}", "particles" if is_particle_run(ds) else "pde")
    return f"{key.upper()}: {title or kind}"


# --------------------------------------------------------------------------
# panels
# --------------------------------------------------------------------------
def _time_attrs(runs) -> dict:
    """The attributes naming the common time axis: a limit run's τ if one of the runs is one."""
    units = [ds.attrs.get("time_unit", "natural") for ds in runs]
    return {"time_unit": next((u for u in units if u != "natural"), "natural")}


def _event_times(ds_a, comparison, n_times):
    """Indices into the comparison's times where run A changes (:func:`.events.event_indices`)."""
    t = np.asarray(comparison["time"].values, float)
    valid = np.flatnonzero(np.isfinite(t))
    _, power = degree_power(ds_a)
    signal = departure(power)[[_nearest(ds_a, x) for x in t[valid]]] if power is not None else None
    if signal is None:
        return select_times(comparison, None, n_times)
    full = np.full(t.shape, np.nan)
    full[valid] = signal
    return event_indices(full, valid, n_times)


def _draw_sphere_rows(subfig, runs, comparison, times):
    # rows: A and B on lon–lat maps, then A and B on orthographic discs centred on A's
    # heaviest cluster at the last time (a polar cluster is a smeared band on the maps)
    axes = subfig.subplots(4, len(times), squeeze=False, height_ratios=[1, 1, 1.25, 1.25])
    smoothing = _map_smoothing(runs, comparison)
    snaps = [[_snapshot(ds, _nearest(ds, t), "sphere", smoothing) for t in times] for ds in runs]
    grids = [s[2] for row in snaps for s in row if s[0] == "grid"]
    finite = np.concatenate([g[np.isfinite(g)].ravel() for g in grids]) if grids else np.zeros(0)
    norm = Normalize(*(finite.min(), finite.max()) if finite.size else (0.0, 1.0))
    mesh = None
    rng = np.random.default_rng(0)
    tsym = time_symbol(_time_attrs(runs))
    view = view_centre(runs[0], _nearest(runs[0], times[-1])) if "density" in runs[0] else (0.0, 0.0)
    for r, (row, ds) in enumerate(zip(snaps, runs)):
        for c, (kind, coords, values, label) in enumerate(row):
            ax = axes[r, c]
            if kind == "grid":
                lat_e, lon_e = cell_edges(*coords)
                mesh = ax.pcolormesh(lon_e, lat_e, np.ma.masked_invalid(values), norm=norm,
                                     cmap="viridis", shading="flat")
                tokens = token_directions(ds, _nearest(ds, times[c]))
                if tokens is not None:  # the tokens themselves over their smoothed density
                    tlat, tlon = lat_lon(tokens)
                    ax.plot(tlon, tlat, ".", ms=1.0, color="w", mec="none", alpha=0.6)
                    label = label.replace(",", ", dots: tokens,", 1) if "," in label else label + ", dots: tokens"
                xlim = (lon_e[0], lon_e[-1])
                draw_orthographic(axes[2 + r, c], *coords, values, view, norm, tokens)
            else:
                pts = coords if len(coords) <= MAX_SCATTER else \
                    coords[rng.choice(len(coords), MAX_SCATTER, replace=False)]
                lat, lon = lat_lon(pts)
                ax.scatter(lon, lat, s=1.5, c="k", alpha=0.4, linewidths=0)
                xlim = (0.0, 360.0)
                disc = axes[2 + r, c]
                x, y, depth = orthographic(lat, lon, *view)
                disc.scatter(x[depth > 0], y[depth > 0], s=1.5, c="k", alpha=0.4, linewidths=0)
                disc.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="k", lw=0.8))
                disc.set(xlim=(-1.05, 1.05), ylim=(-1.05, 1.05), aspect="equal")
                disc.set_axis_off()
            axes[2 + r, c].set_title(f"{'AB'[r]}, {tsym} = {times[c]:.4g}", fontsize="small")
            ax.set(xticks=[0, 90, 180, 270], yticks=[-90, -45, 0, 45, 90])
            ax.set(xlim=xlim, ylim=(-90, 90))
            ax.set_aspect("equal")
            # one short line per fact: four maps share the width
            ax.set_title(f"{'AB'[r]}, {tsym} = {times[c]:.4g}\n" + label.replace(", heat", "\nheat"),
                         fontsize="small")
            if c == 0:
                ax.set_ylabel("latitude (°N)")
            if r == 1:
                ax.set_xlabel("longitude (°E)")
    axes[2, 0].set_title(f"A, {tsym} = {times[0]:.4g}\ndiscs centred on A's heaviest cluster "
                         f"({view[0]:.0f}°N, {view[1]:.0f}°E)", fontsize="small")
    if mesh is not None:
        cbar = subfig.colorbar(mesh, ax=axes, label="density f (uniform = 1/4π)", shrink=0.9)
        if norm.vmin < 1 / (4 * np.pi) < norm.vmax:
            cbar.ax.axhline(1 / (4 * np.pi), color="w", lw=1.5)


def _draw_circle_rows(subfig, runs, comparison, times):
    axes = subfig.subplots(1, len(times), squeeze=False)[0]
    smoothing = _map_smoothing(runs, comparison)
    for c, t in enumerate(times):
        ax = axes[c]
        for key, ds, style in (("A", runs[0], "-"), ("B", runs[1], "--")):
            kind, coords, values, label = _snapshot(ds, _nearest(ds, t), "circle", smoothing)
            if kind == "grid":
                theta = np.append(coords[0], coords[0][0] + 2 * np.pi)
                ax.plot(theta, np.append(values, values[0]), style, label=f"{key}: {label}")
            else:
                angle = np.arctan2(coords[:, 1], coords[:, 0]) % (2 * np.pi)
                ax.hist(angle, bins=64, range=(0, 2 * np.pi), density=True, histtype="step",
                        label=f"{key}: {label} (histogram)")
        ax.axhline(1 / (2 * np.pi), color="gray", ls=":", lw=1)
        ax.set(title=f"{time_symbol(_time_attrs(runs))} = {t:.4g}", xlabel="θ (rad)", xlim=(0, 2 * np.pi),
               xticks=np.linspace(0, 2 * np.pi, 5), xticklabels=["0", "π/2", "π", "3π/2", "2π"])
        if c == 0:
            ax.set_ylabel("density f (uniform = 1/2π)")
            ax.legend(fontsize="x-small")


def _plot_series(ax, t, y, label, log=False, **kw):
    y = np.asarray(y, float)
    ax.plot(t, positive_only(y) if log else y, ".-", ms=3, lw=1, label=label, **kw)


def _draw_distances(axes, comparison, attrs):
    """The distances over time; ``attrs`` name the time axis (:func:`.labels.time_axis`)."""
    t = np.asarray(comparison["time"].values, float)
    scale, xlabel = time_axis(t, attrs)  # t / 10^k where matplotlib cannot draw t itself
    t = t / scale
    ax = axes[0]
    _plot_series(ax, t, comparison["l2_distance"], "‖a − b‖ (L²)", log=True)
    if "expected_statistical_l2" in comparison:
        ax.plot(t, positive_only(comparison["expected_statistical_l2"]), "k--", lw=1,
                label="expected from sampling")
    s = comparison.attrs.get("smoothing", 0.0)
    ax.set(xlabel=xlabel, ylabel="L² distance",
           title=f"degrees <= {comparison.attrs.get('degrees_compared', '?')}"
                 + (f", heat smoothing s = {float(s):g}" if s else ""))
    if np.isfinite(positive_only(comparison["l2_distance"])).any():
        ax.set_yscale("log")
    ax.legend(fontsize="small")

    ax = axes[1]
    if "sliced_wasserstein" in comparison:
        _plot_series(ax, t, comparison["sliced_wasserstein"], "A vs B")
        floor = float(comparison["sliced_wasserstein_floor"])
        if np.isfinite(floor):
            ax.axhline(floor, color="k", ls="--", lw=1, label="floor (exact sample)")
        name = "sliced W₂" if comparison.attrs.get("manifold") == "sphere" else "W₂"
        ax.set(xlabel=xlabel, ylabel=f"{name} (radians)", title="Wasserstein distance", ylim=(0, None))
        ax.legend(fontsize="small")
    else:
        _plot_series(ax, t, comparison["relative_l2_distance"], "relative", log=True)
        if np.isfinite(positive_only(comparison["relative_l2_distance"])).any():
            ax.set_yscale("log")
        ax.set(xlabel=xlabel, ylabel="‖a − b‖ / ‖a − mean(a)‖", title="relative L² distance")

    for ax, name, label in ((axes[2], "order_parameter_difference", "order parameter A − B"),
                            (axes[3], "energy_relative_difference", "(energy A − B)/max|energy|")):
        if name in comparison:
            _plot_series(ax, t, comparison[name], label)
            ax.axhline(0.0, color="gray", lw=0.8)
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        else:
            ax.text(0.5, 0.5, f"no {name}", ha="center", va="center", transform=ax.transAxes,
                    color="gray")
        ax.set(xlabel=xlabel, ylabel=label)


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------
def plot_comparison(ds_a, ds_b, comparison, times=None, n_times=4) -> Figure:
    """Draw two runs side by side and their comparison over time.

    Parameters
    ----------
    ds_a, ds_b : xarray.Dataset
        The runs compared (PDE, limit or particle runs; :ref:`dataset-contract`).
    comparison : xarray.Dataset
        ``compare.compare(ds_a, ds_b, ...)``.
    times : float or sequence of float, optional
        Times of the density maps (on the comparison's time axis), each
        replaced by the nearest common snapshot; default ``n_times``
        common times where run A changes (:func:`.events.event_indices`:
        start, mid-growth, saturation, late).
    n_times : int
        Number of maps per row when ``times`` is None.

    Returns
    -------
    matplotlib.figure.Figure
        Top: row A and row B of density maps (lon–lat, one colour scale
        shared by all maps; circle: density(θ) of both runs per panel). With
        a heat-kernel time s (the comparison's smoothing, else a particle
        run's attribute ``smoothing``) both runs are drawn smoothed alike:
        coefficients times e^{−s l(l+1)} (circle e^{−s k²}) synthesised on
        the Gauss grid, so the maps show what the L² distance compares.
        Without smoothing a particle run is a scatter of its positions (at
        most MAX_SCATTER points; a histogram on the circle) and a PDE run
        its stored density. Bottom: the
        L² distance with the expected sampling level (dashed), the
        Wasserstein distance with its floor (dashed; relative L² distance
        when no particle run is involved), the order-parameter difference and
        the relative energy difference.

    Raises
    ------
    ValueError
        If a requested time is outside the comparison's range.
    """
    ds_a, ds_b = on_common_time_axis(ds_a, ds_b)
    idx = select_times(comparison, times, n_times) if times is not None else \
        _event_times(ds_a, comparison, n_times)
    times = np.asarray(comparison["time"].values, float)[idx]
    manifold = comparison.attrs.get("manifold") or ds_a.attrs.get("manifold", "sphere")
    circle = manifold == "circle"
    ncol = len(times)
    fig = plt.figure(figsize=(max(13.0, 3.4 * ncol + 1.5), 8.5 if circle else 14.0),
                     layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[0.9, 1.0] if circle else [2.5, 1.0])
    if circle:
        _draw_circle_rows(top, (ds_a, ds_b), comparison, times)
    else:
        _draw_sphere_rows(top, (ds_a, ds_b), comparison, times)
    _draw_distances(bottom.subplots(1, 4), comparison, _time_attrs((ds_a, ds_b)))
    fig.suptitle(f"{_run_label(ds_a, comparison, 'a')}   vs   {_run_label(ds_b, comparison, 'b')}",
                 fontsize="medium")
    return fig


def save_comparison_figure(ds_a, ds_b, comparison, output, times=None, *,
                           overwrite: bool = False) -> pathlib.Path:
    """Draw :func:`plot_comparison` and write it to a PNG file.

    Parameters
    ----------
    ds_a, ds_b, comparison : xarray.Dataset or str or os.PathLike
        The runs and their comparison, or paths of their netCDF files.
    output : str or os.PathLike
        PNG to write.
    times : float or sequence of float, optional
        Passed to :func:`plot_comparison`.
    overwrite : bool, keyword-only
        Replace an existing PNG (:func:`meanfield_pde.runs.outputs.save_png`).

    Returns
    -------
    pathlib.Path
        The PNG written.
    """
    opened = []
    def load(obj):
        if isinstance(obj, xr.Dataset):
            return obj
        from ..runs.runcheck import open_checked
        ds = open_checked(pathlib.Path(obj), f"figure input {str(obj)!r}")
        opened.append(ds)
        return ds
    try:
        fig = plot_comparison(load(ds_a), load(ds_b), load(comparison), times=times)
        inputs = [d.encoding["source"] for d in (ds_a, ds_b, comparison)
                  if isinstance(d, xr.Dataset) and "source" in d.encoding]
        inputs += [d for d in (ds_a, ds_b, comparison) if not isinstance(d, xr.Dataset)]
        output = save_png(fig, output, overwrite=overwrite, inputs=inputs)  # closes the figure
    finally:
        for ds in opened:
            ds.close()
    return output
