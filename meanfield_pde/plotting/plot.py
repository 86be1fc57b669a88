"""Figures of a mean-field PDE run read from its xarray Dataset.

One call, :func:`plot_run`, draws everything a user looks at after a run:
density maps at the times where the state changes (:mod:`.events`), orthographic
views centred on the largest cluster (with the tokens of a particle run), the
diagnostics over time, the growth of the fastest modes beside linear theory
(:mod:`meanfield_pde.plotting.growth`) and the angular power spectrum.  :func:`meanfield_pde.plotting.figure_file.save_figure` writes it to a
PNG, PDF or SVG file (by the output's suffix).  Only plain
matplotlib is used (no cartopy), with the non-interactive Agg backend so that
it works on machines without a display.
"""

from __future__ import annotations


import matplotlib

matplotlib.use("Agg")  # never needs a display; we only save files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..analysis.growth import degree_power  # noqa: E402 (C_l of a run: one place, with the growth fits)
from ..core.errors import NotARunError  # noqa: E402
from ..numerics.quantities import panels  # noqa: E402 (what is drawn over time: the registry's panels)
from ..runs.cf import ZONAL_GRID  # noqa: E402
from .events import departure, event_indices  # noqa: E402
from .growth import draw_growth  # noqa: E402
from .labels import equation_title, time_axis, time_symbol  # noqa: E402

__all__ = ["plot_run", "cell_edges", "orthographic", "select_times", "view_centre", "smoothed_snapshot",
           "degree_power", "token_directions", "lat_lon", "draw_orthographic", "panel_series"]

DENSITY_LABEL = "density f (uniform = 1/4π)"

MAX_TOKENS = 3000  # tokens drawn per view of a particle run (a random subset beyond)
CLUSTER_SMOOTHING = 0.02  # heat time s whose kernel (width ~ √(2s) ≈ 11°) finds the heaviest cluster



# --------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------
def cell_edges(lat, lon):
    """Cell edges of a (Gauss) latitude–longitude grid, for ``pcolormesh``.

    Parameters
    ----------
    lat : array_like, shape (nlat,)
        Cell-centre latitudes in degrees_north, monotone (Gauss latitudes are
        not equally spaced, usually north first).
    lon : array_like, shape (nlon,)
        Cell-centre longitudes in degrees_east, equally spaced over [0, 360).

    Returns
    -------
    lat_edges : ndarray, shape (nlat + 1,)
        Midpoints between neighbouring latitudes with ±90 at the ends, in the
        same order as ``lat`` (90 first for a north-first grid).
    lon_edges : ndarray, shape (nlon + 1,)
        Midpoints between neighbouring longitudes, wrapping at 0/360, so that
        ``lon_edges[-1] - lon_edges[0] == 360``.
    """
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    # Gauss latitudes are unevenly spaced: the edges must come from the actual
    # coordinate, not from a uniform step, or cells near the poles are wrong.
    pole = 90.0 if lat[0] > lat[-1] else -90.0
    lat_edges = np.concatenate([[pole], 0.5 * (lat[1:] + lat[:-1]), [-pole]])
    # The first cell straddles 0/360: its west edge is halfway to the last
    # centre shifted down by a full turn.
    lon_ext = np.concatenate([[lon[-1] - 360.0], lon, [lon[0] + 360.0]])
    lon_edges = 0.5 * (lon_ext[1:] + lon_ext[:-1])
    return lat_edges, lon_edges


def orthographic(lat, lon, lat0, lon0):
    """Orthographic projection of points on the unit sphere.

    Parameters
    ----------
    lat, lon : array_like (broadcastable)
        Points in degrees.
    lat0, lon0 : float
        View direction (centre of the disc) in degrees.

    Returns
    -------
    x, y : ndarray
        Projected coordinates on the unit disc (x east, y north at the centre).
    depth : ndarray
        Cosine of the angle to the view centre; > 0 on the visible hemisphere.
    """
    phi, lam = np.deg2rad(lat), np.deg2rad(lon)
    phi0, lam0 = np.deg2rad(lat0), np.deg2rad(lon0)
    p = np.stack(np.broadcast_arrays(np.cos(phi) * np.cos(lam),
                                     np.cos(phi) * np.sin(lam),
                                     np.sin(phi)), axis=-1)
    # Orthonormal frame at the view centre: rotating the points into it and
    # dropping the depth component is the orthographic projection.
    centre = np.array([np.cos(phi0) * np.cos(lam0), np.cos(phi0) * np.sin(lam0), np.sin(phi0)])
    east = np.array([-np.sin(lam0), np.cos(lam0), 0.0])
    north = np.cross(centre, east)
    return p @ east, p @ north, p @ centre


# --------------------------------------------------------------------------
# data helpers
# --------------------------------------------------------------------------
def time_values(ds):
    """The snapshot times of a run as floats (0, 1, ... when the Dataset has no time coordinate)."""
    n = ds.sizes["time"]
    return np.asarray(ds["time"].values, dtype=float) if "time" in ds.coords else np.arange(n, dtype=float)


def select_times(ds, times, n_times):
    """Indices of the snapshots to draw (sorted, unique).

    ``times`` None: :func:`.events.event_indices` of the departure from uniform (from the
    coefficients; else the order parameter): start, mid-growth, saturation, late.
    Otherwise the snapshot nearest to each requested time.

    Raises
    ------
    ValueError
        No snapshot with a finite time; a requested time outside the run's range.
    """
    t = time_values(ds)
    valid = np.flatnonzero(np.isfinite(t))
    if valid.size == 0:
        raise ValueError("the run has no snapshot with a finite time value")
    if times is None:
        _, power = degree_power(ds)
        if power is not None:
            signal = departure(power)
        elif "order_parameter" in ds:
            signal = np.asarray(ds["order_parameter"].values, float)
        else:
            signal = np.full(t.shape, np.nan)
        return event_indices(signal, valid, n_times)
    tv = t[valid]
    lo, hi = tv.min(), tv.max()
    # rounding of each end by itself (one tolerance from the largest time, 1e-9 × 1e12 for a
    # hand-off run, let --times=-1 through as t = 0)
    out = []
    for req in np.atleast_1d(np.asarray(times, dtype=float)):
        if not np.isfinite(req) or req < lo - 1e-9 * max(1.0, abs(lo)) or req > hi + 1e-9 * max(1.0, abs(hi)):
            raise ValueError(f"requested time {req:g} is outside the run's range: "
                             f"allowed times are {lo:g} <= t <= {hi:g}")
        out.append(valid[np.argmin(np.abs(tv - req))])  # nearest stored snapshot
    return np.unique(out)


# Beyond about 1e307 matplotlib's axis and colour-bar ranges (max − min, with margins) overflow:
# an OverflowError in the tick formatter, a RecursionError in the colour bar (measured with
# 1.7e308). Finite values are drawn clipped to ±DRAWABLE, which no axis can tell apart anyway.
DRAWABLE = 1e300


def drawable(ds):
    """``ds`` with its finite float values beyond ±:data:`DRAWABLE` clipped to it (a copy, made
    only if there are any; NaN and ±inf stay as they are); ``ds`` itself otherwise."""
    huge = []
    for name, var in ds.data_vars.items():
        if var.dtype.kind == "f" and var.size:
            values = np.asarray(var.values)
            if np.any(np.isfinite(values) & (np.abs(values) > DRAWABLE)):
                huge.append(name)
    if not huge:
        return ds
    ds = ds.copy()
    for name in huge:
        values = np.asarray(ds[name].values)
        ds[name] = ds[name].copy(data=np.where(np.isfinite(values), np.clip(values, -DRAWABLE, DRAWABLE),
                                               values))
    return ds


def positive_only(y):
    """y with non-positive values hidden, so a log axis never sees them."""
    y = np.asarray(y, dtype=float).copy()
    y[~(y > 0)] = np.nan
    return y


def _first_finite(y):
    finite = y[np.isfinite(y)]
    return finite[0] if finite.size else np.nan


def panel_series(ds, name: str, change: str = "") -> np.ndarray:
    """The values of the recorded quantity ``name`` of ``ds`` as ``plot`` draws them
    (:class:`meanfield_pde.numerics.quantities.Panel`): as stored (``change`` ""), or their
    change from the first finite value y₀, (y − y₀)/|y₀| ("relative"; y − y₀ where y₀ = 0: what
    a user checks of an energy) or |y − y₀| ("absolute": the drift of a conserved quantity)."""
    y = np.asarray(ds[name].values, float)
    if change == "relative":
        y0 = _first_finite(y)
        return (y - y0) / abs(y0) if y0 else y - y0
    if change == "absolute":
        return np.abs(y - _first_finite(y))
    return y


# --------------------------------------------------------------------------
# panels
# --------------------------------------------------------------------------
def smoothed_snapshot(ds, i):
    """(grid, lat, lon) of snapshot ``i`` of a sphere run: its density smoothed by the heat kernel
    for time ``CLUSTER_SMOOTHING`` (coefficients × e^{−s l(l+1)}, synthesised on the Gauss grid of
    their degree), so that a maximum is where the most mass lies within ~10°, not the sharpest
    peak (a narrow light cluster); without finite coefficients the stored density on the run's
    grid. None where the snapshot has no finite value. Degrees; the grid is (nlat, nlon)."""
    grid = np.asarray(ds["density"].transpose("time", "lat", "lon")[i].values)
    if not np.isfinite(grid).any():
        return None
    lat, lon = np.asarray(ds["lat"], float), np.asarray(ds["lon"], float)
    if "coef_real" in ds and "m" in ds["coef_real"].dims:
        from ..analysis.compare import comparison_geometry, complex_coefficients
        coef = complex_coefficients(ds.isel(time=i)).values
        if np.isfinite(coef).all():
            geo = comparison_geometry("sphere", coef.shape[0] - 1)
            grid = geo.synthesis(geo.heat(geo.from_table(coef), CLUSTER_SMOOTHING))
            lat, lon = geo.lat, geo.lon
    return grid, lat, lon


def view_centre(ds, i=None):
    """(lat, lon) in degrees of the heaviest cluster of snapshot ``i`` (default: the last with data).

    The maximum of the snapshot's density smoothed as :func:`smoothed_snapshot` says: where the
    most mass lies within ~10°, not the sharpest peak (a narrow light cluster). Without
    coefficients: the maximum of the stored density. (0, 0) if no snapshot has data.
    """
    # one snapshot at a time: a run opened from its file is read lazily, never whole
    order = range(ds.sizes["time"] - 1, -1, -1) if i is None else [i]
    for j in order:
        found = smoothed_snapshot(ds, j)
        if found is None:
            continue
        grid, lat, lon = found
        a, b = np.unravel_index(np.nanargmax(grid), grid.shape)
        return float(lat[a]), float(lon[b])
    return 0.0, 0.0


def token_directions(ds, i):
    """Unit vectors (n, 3) of the tokens of snapshot i of a particle run (a random subset of at
    most MAX_TOKENS, the same for every snapshot), or None for a PDE run."""
    if "positions" not in ds:
        return None
    pos = np.asarray(ds["positions"].isel(time=i).values, float)
    if pos.ndim != 2 or pos.shape[1] != 3:
        return None
    if len(pos) > MAX_TOKENS:
        pos = pos[np.random.default_rng(0).choice(len(pos), MAX_TOKENS, replace=False)]
    pos = pos[np.all(np.isfinite(pos), axis=1)]
    return pos / np.linalg.norm(pos, axis=1, keepdims=True)


def lat_lon(points):
    """(lat, lon in [0, 360)) in degrees of unit vectors (n, 3)."""
    return (np.degrees(np.arcsin(np.clip(points[:, 2], -1.0, 1.0))),
            np.degrees(np.arctan2(points[:, 1], points[:, 0])) % 360.0)


def draw_orthographic(ax, lat, lon, values, view, norm, tokens=None):
    """One orthographic disc of a sphere density centred on ``view`` = (lat0, lon0) in degrees.

    values : (nlat, nlon) on the cell centres ``lat``, ``lon`` (degrees); tokens : (n, 3) or None,
    drawn as dots on the visible hemisphere. Returns the QuadMesh.
    """
    lat_e, lon_e = cell_edges(lat, lon)
    cx, cy, cdepth = orthographic(*np.meshgrid(lat_e, lon_e, indexing="ij"), *view)
    # Corners on the far side would fold back into the disc; push them out to
    # the limb so cells at the edge of the visible hemisphere end at the disc.
    behind = cdepth < 0
    r = np.hypot(cx, cy)
    r[r == 0] = 1.0
    cx = np.where(behind, cx / r, cx)
    cy = np.where(behind, cy / r, cy)
    _, _, depth = orthographic(*np.meshgrid(lat, lon, indexing="ij"), *view)
    mesh = ax.pcolormesh(cx, cy, np.ma.masked_array(values, (depth <= 0) | ~np.isfinite(values)),
                         norm=norm, cmap="viridis", shading="flat")
    if tokens is not None and len(tokens):
        x, y, d = orthographic(*lat_lon(tokens), *view)
        ax.plot(x[d > 0], y[d > 0], ".", ms=1.5, color="w", mec="none", alpha=0.7)
    ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="k", lw=0.8))
    ax.set(xlim=(-1.05, 1.05), ylim=(-1.05, 1.05), aspect="equal")
    ax.set_axis_off()
    return mesh


def draw_sphere_maps(subfig, ds, idx, t, view):
    """The density rows of a sphere run's figure into ``subfig``: a longitude–latitude map and an
    orthographic disc per snapshot of ``idx``, on one colour scale, with the tokens of a particle
    run as dots. ``view``: (lat, lon) in degrees, the centre of every disc (so they compare);
    None: the heaviest cluster at the end (:func:`view_centre`); or a list of one (lat, lon)
    per snapshot of ``idx``, each disc centred on its own (its title says where)."""
    dens = ds["density"].transpose("time", "lat", "lon")
    lat, lon = np.asarray(ds["lat"], float), np.asarray(ds["lon"], float)
    lat_e, lon_e = cell_edges(lat, lon)
    snaps = np.asarray(dens.values[idx], float)
    finite = snaps[np.isfinite(snaps)]
    norm = Normalize(*(finite.min(), finite.max()) if finite.size else (0.0, 1.0))
    # one view for all discs (so they compare), centred on the heaviest cluster at the end,
    # unless the caller gives each disc its own
    own = isinstance(view, list)
    views = view if own else [view if view is not None else view_centre(ds)] * len(idx)
    lat0, lon0 = views[0]
    tsym = time_symbol(ds.attrs)

    axes = subfig.subplots(2, len(idx), squeeze=False)
    mesh = None
    for col, (i, snap) in enumerate(zip(idx, snaps)):
        ax = axes[0, col]
        mesh = ax.pcolormesh(lon_e, lat_e, np.ma.masked_invalid(snap), norm=norm,
                             cmap="viridis", shading="flat")
        tokens = token_directions(ds, i)
        if tokens is not None:
            tlat, tlon = lat_lon(tokens)
            ax.plot(tlon, tlat, ".", ms=1.0, color="w", mec="none", alpha=0.6)
        # Ticks first: set_xticks would widen the limits to include 360.
        ax.set(xticks=[0, 90, 180, 270], yticks=[-90, -45, 0, 45, 90],
               title=f"{tsym} = {t[i]:.4g}", xlabel="longitude (°E)")
        ax.set(xlim=(lon_e[0], lon_e[-1]), ylim=(-90, 90))
        ax.set_aspect("equal")
        if col == 0:
            ax.set_ylabel("latitude (°N)")
        ax = axes[1, col]
        draw_orthographic(ax, lat, lon, snap, views[col], norm, tokens)
        if own:
            ax.set_title(f"centred on {views[col][0]:.0f}°N, {views[col][1]:.0f}°E"
                         + ("\nwhite dots: tokens" if tokens is not None and col == 0 else ""),
                         fontsize="small")
        elif col == 0:
            ax.set_title(f"centred on the heaviest cluster ({lat0:.0f}°N, {lon0:.0f}°E)"
                         + ("\nwhite dots: tokens" if tokens is not None else ""), fontsize="small")
    cbar = subfig.colorbar(mesh, ax=axes, label=DENSITY_LABEL, shrink=0.9)
    for ax in axes.flat:
        ax.set_anchor("C")  # colorbar() re-anchors its parents; centre maps over discs
    if norm.vmin < 1 / (4 * np.pi) < norm.vmax:
        cbar.ax.axhline(1 / (4 * np.pi), color="w", lw=1.5)  # uniform level


def draw_circle_lines(subfig, ds, idx, t):
    """The density row of a circle run's figure into ``subfig``: f(θ) of each snapshot of ``idx``
    on one axis (the curve closed at 2π), beside the uniform density 1/2π."""
    ax = subfig.subplots()
    dens = ds["density"].transpose("time", "theta")
    # Repeat the first point at θ + 2π so the periodic curve closes.
    theta = np.append(np.asarray(ds["theta"], float), float(ds["theta"][0]) + 2 * np.pi)
    tsym = time_symbol(ds.attrs)
    for i in idx:
        ax.plot(theta, np.append(dens.values[i], dens.values[i][0]), label=f"{tsym} = {t[i]:.4g}")
    ax.axhline(1 / (2 * np.pi), color="gray", ls=":", lw=1, label="uniform 1/2π")
    ax.set(xlabel="θ (rad)", ylabel="density f (uniform = 1/2π)", xlim=(0, 2 * np.pi),
           xticks=np.linspace(0, 2 * np.pi, 5), xticklabels=["0", "π/2", "π", "3π/2", "2π"])
    ax.legend(fontsize="small")


def _draw_zonal_lines(subfig, ds, idx, t):
    """Zonal runs on S^{d−1}: f against the angle θ = arccos t to the axis (linear and log
    scale: in high d the mass sits near θ = 90° and a cluster is many decades above it)."""
    axes = subfig.subplots(1, 2)
    dens = ds["density"].transpose("time", ZONAL_GRID)
    theta = np.degrees(np.arccos(np.clip(np.asarray(ds[ZONAL_GRID], float), -1.0, 1.0)))
    for ax, log in zip(axes, (False, True)):
        for i in idx:
            y = dens.values[i]
            ax.plot(theta, positive_only(y) if log else y, label=f"t = {t[i]:.4g}")
        ax.axhline(1.0, color="gray", ls=":", lw=1, label="uniform 1")
        ax.set(xlabel="angle to the axis θ = arccos⟨x, e⟩ (°)", xlim=(0, 180),
               ylabel="density f (uniform = 1)" + (", log scale" if log else ""))
        if log and np.isfinite(positive_only(dens.values[idx])).any():
            ax.set_yscale("log")
    axes[0].legend(fontsize="small")


def _draw_diagnostics(axes, ds, t, xlabel):
    """The linear-axis time series (one per axis) against ``t`` (as drawn: :func:`time_axis`)
    labelled ``xlabel``; unused axes are hidden."""
    names = [(name, panel) for name, panel in panels() if name in ds]
    for ax, (name, panel) in zip(axes, names):
        y = panel_series(ds, name, panel.change)
        ax.plot(t, y, ".-", ms=3, lw=1)
        if not np.isfinite(y).any():
            ax.text(0.5, 0.5, "no finite data", ha="center",
                    va="center", transform=ax.transAxes, color="gray")
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        ax.set(xlabel=xlabel, ylabel=panel.label)
        _time_ticks(ax)
    spare = axes[len(names):]
    if spare and "energy_note" in ds.attrs and "energy" not in ds:  # said, not left blank
        spare[0].text(0.5, 0.5, "no energy recorded:\nthe attention heads are\nnot a gradient flow",
                      ha="center", va="center", transform=spare[0].transAxes, color="gray")
        spare[0].set_axis_off()
        spare = spare[1:]
    for ax in spare:
        ax.set_visible(False)


def _time_ticks(ax) -> None:
    """At most 4 time ticks on steps 1, 2, 5: the default's steps of 2.5 (0.00025 for a run to
    t = 1e-3) gave labels that ran into each other on these narrow panels."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 5, 10]))


def _draw_checks(ax, ds, t, xlabel):
    """Spectral tail and mass drift on one log axis against ``t`` (as drawn), over the run's
    times; a series that is exactly 0 throughout is named in a note instead of drawn (a log
    axis cannot show it and a flat 0 line says nothing)."""
    notes, drawn = [], False
    for name, panel in panels(checks=True):
        if name not in ds:
            continue
        y = panel_series(ds, name, panel.change)
        if np.isfinite(y).any() and np.nanmax(y) == 0:
            notes.append(f"{panel.label} = 0 at every snapshot")
            continue
        y = positive_only(y)
        if np.isfinite(y).any():
            ax.plot(t, y, ".-", ms=3, lw=1, label=panel.label)
            drawn = True
    if not drawn:  # nothing to plot: say what was checked instead of an empty frame
        ax.set_axis_off()
        ax.text(0.5, 0.5, "\n".join(["resolution and mass"] + (notes or ["no check values stored"])),
                ha="center", va="center", transform=ax.transAxes, fontsize="small")
        return
    ax.set_yscale("log")
    ax.legend(fontsize="x-small")
    ax.set(xlabel=xlabel, ylabel="numerical checks")
    # the run's times with matplotlib's 5 % margins, as the other panels: the check is often 0
    # (not drawn) at t = 0, and one point alone got an axis of its own around it
    lo, hi = np.nanmin(t, initial=np.inf), np.nanmax(t, initial=-np.inf)
    if hi > lo:
        ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    _time_ticks(ax)
    ax.set_title("\n".join(["resolution and mass"] + notes), fontsize="small")


def _draw_spectrum(ax, ds, idx, t, circle):
    deg, power = degree_power(ds)
    if power is None:
        ax.text(0.5, 0.5, "no coefficients", ha="center", va="center", transform=ax.transAxes)
        return
    tsym = time_symbol(ds.attrs)
    for i in idx:
        ax.plot(deg, positive_only(power[i]), ".-", ms=4, lw=1, label=f"{tsym} = {t[i]:.4g}")
    if np.isfinite(positive_only(power[idx])).any():
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # degrees are whole numbers
    if ds.attrs.get("manifold") == "sphere_zonal":
        ax.set(xlabel="Gegenbauer degree l", ylabel=r"$C_l = f_l^2$", title="power spectrum")
    elif circle:
        ax.set(xlabel="wavenumber k", ylabel=r"$C_k = |f_k|^2 + |f_{-k}|^2$", title="power spectrum")
    else:
        ax.set(xlabel="degree l", ylabel=r"$C_l = \Sigma_m\,|f_{lm}|^2$  (×2 for m > 0)",
               title="angular power spectrum")
    ax.legend(fontsize="small")


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------
def plot_run(ds, times=None, n_times=4, view=None) -> Figure:
    """Draw the overview figure of one PDE run.

    Parameters
    ----------
    ds : xarray.Dataset
        A run as written by the solver.  Sphere: ``density(time, lat, lon)``
        (lat, lon in degrees) and ``coef_real/coef_imag(time, l, m)``
        (orthonormal, NaN where m > l).  Circle: ``density(time, theta)``
        (theta in radians) and ``coef_real/coef_imag(time, k)``.  Optional
        time series ``(time,)``: order_parameter, min_density,
        spectral_tail, energy, mass, free_energy.
    times : float or sequence of float, optional
        Times to draw (same units as the ``time`` coordinate); each is
        replaced by the nearest stored snapshot.  Must lie within the run's
        range.  Default: ``n_times`` snapshots where the state changes
        (:func:`select_times`: start, mid-growth, saturation, late).
    n_times : int
        Number of snapshots when ``times`` is None.
    view : (float, float), optional
        (lat, lon) in degrees of the centre of the orthographic views.
        Default: the heaviest cluster of the last snapshot (:func:`view_centre`).

    Returns
    -------
    matplotlib.figure.Figure
        Rows: density maps (lon–lat) with one shared colour bar (white
        dots: the tokens of a particle run), orthographic views, then the
        diagnostics over time (linear axes; spectral tail and mass drift
        together on a log axis), the power spectrum at the chosen times and
        the amplitudes √C_l of the fastest degrees on a log axis with the
        linear-theory lines A_l(t₀) e^{σ_l (t − t₀)} (:mod:`meanfield_pde.plotting.growth`).
        Circle runs get density(θ) lines instead of the two map rows. The
        title names the equation, β, ν and the time variable (t or τ).

    Raises
    ------
    NotARunError
        If ``density`` is missing (a ConfigError, so a ValueError).
    ValueError
        If ``density`` has unknown dimensions, or a requested time is outside the run's range.
    """
    ds = drawable(ds)  # a huge finite value (a genuine overflowing energy) must not crash the axes
    if "density" not in ds:
        raise NotARunError("dataset has no 'density' variable (a PDE run is needed; "
                         f"variables present: {sorted(ds.data_vars)})")
    dims = set(ds["density"].dims)
    zonal = dims == {"time", ZONAL_GRID}
    if dims == {"time", "lat", "lon"}:
        circle = False
    elif dims == {"time", "theta"} or zonal:
        circle = True  # one line per snapshot instead of maps
    else:
        raise ValueError(f"'density' has dimensions {ds['density'].dims}; expected "
                         "(time, lat, lon) on the sphere, (time, theta) on the circle or "
                         f"(time, {ZONAL_GRID}) on sphere_zonal")
    idx = select_times(ds, times, n_times)
    t = time_values(ds)

    ncol = len(idx)
    fig = plt.figure(figsize=(max(13.0, 3.4 * ncol + 1.5), 8.0 if circle else 12.0),
                     layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[0.8, 1.0] if circle else [1.25, 1.0])
    if zonal:
        _draw_zonal_lines(top, ds, idx, t)
    elif circle:
        draw_circle_lines(top, ds, idx, t)
    else:
        draw_sphere_maps(top, ds, idx, t, view)

    # Bottom: order parameter, energy, free energy, spectrum; min density, numerical
    # checks and, two columns wide, the growth of the fastest modes beside linear theory.
    gs = bottom.add_gridspec(2, 4, width_ratios=[1, 1, 1, 1.3])
    diag_axes = [bottom.add_subplot(gs[0, c]) for c in range(3)] + [bottom.add_subplot(gs[1, 0])]
    scale, xlabel = time_axis(t, ds.attrs)  # t / 10^k where matplotlib cannot draw t itself
    _draw_diagnostics(diag_axes, ds, t / scale, xlabel)
    _draw_checks(bottom.add_subplot(gs[1, 1]), ds, t / scale, xlabel)
    _draw_spectrum(bottom.add_subplot(gs[0, 3]), ds, idx, t, circle and not zonal)
    growth_ax = bottom.add_subplot(gs[1, 2:])
    _, power = degree_power(ds)
    if power is None:
        growth_ax.set_visible(False)
    else:
        draw_growth(growth_ax, t, power, ds.attrs, circle and not zonal, time_symbol(ds.attrs),
                    xlabel, scale)

    # the attributes come from a file: equation_title escapes control characters
    where = "circle" if circle and not zonal else None
    if zonal:
        where = f"zonal S^{{d−1}}, d = {ds.attrs.get('dimension', '?')}"
    fig.suptitle(equation_title(ds.attrs, where))
    return fig
