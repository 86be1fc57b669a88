"""Figures of a mean-field PDE run read from its xarray Dataset.

One call, :func:`plot_run`, draws everything a user looks at after a run:
density maps, orthographic views of the sphere, diagnostics over time and the
angular power spectrum.  :func:`save_figure` writes it to a PNG.  Only plain
matplotlib is used (no cartopy), with the non-interactive Agg backend so that
it works on machines without a display.
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

from ..core.errors import printable  # noqa: E402
from ..runs.outputs import save_png  # noqa: E402

__all__ = ["plot_run", "save_figure", "cell_edges", "orthographic"]

DENSITY_LABEL = "density f (uniform = 1/4π)"

# (variable, y label, log scale) for the diagnostic panels; energy and mass
# are shown relative to their first value, which is what a user checks.
_DIAGNOSTICS = [
    ("order_parameter", "order parameter", False),
    ("min_density", "min density", False),
    ("spectral_tail", "spectral tail", True),
    ("energy", "(E − E₀)/|E₀|", False),
    ("mass", "|mass − mass₀|", False),
    ("free_energy", "free energy F", False),
]


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
def _time_values(ds):
    n = ds.sizes["time"]
    return np.asarray(ds["time"].values, dtype=float) if "time" in ds.coords else np.arange(n, dtype=float)


def select_times(ds, times, n_times):
    """Indices of the snapshots to draw (sorted, unique)."""
    t = _time_values(ds)
    valid = np.flatnonzero(np.isfinite(t))
    if valid.size == 0:
        raise ValueError("the run has no snapshot with a finite time value")
    if times is None:
        # Evenly spread over the stored snapshots, first and last included.
        picks = np.linspace(0, valid.size - 1, max(1, min(n_times, valid.size)))
        return np.unique(valid[np.round(picks).astype(int)])
    tv = t[valid]
    lo, hi = tv.min(), tv.max()
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    out = []
    for req in np.atleast_1d(np.asarray(times, dtype=float)):
        if not np.isfinite(req) or req < lo - tol or req > hi + tol:
            raise ValueError(f"requested time {req:g} is outside the run's range: "
                             f"allowed times are {lo:g} <= t <= {hi:g}")
        out.append(valid[np.argmin(np.abs(tv - req))])  # nearest stored snapshot
    return np.unique(out)


def _power(ds):
    """(degrees, power C_l per snapshot (time, L+1)) of the stored coefficients
    (:meth:`Geometry.power_spectrum`); (None, None) if absent. A NaN snapshot has NaN power."""
    if "coef_real" not in ds or "coef_imag" not in ds:
        return None, None
    from ..analysis.compare import comparison_geometry
    table = ds["coef_real"] + 1j * ds["coef_imag"]  # NaN where m > l is never read
    if ds.attrs.get("manifold") == "sphere_zonal":  # one real coefficient per degree: C_l = f_l²
        power = np.abs(table.transpose("time", "l").values) ** 2
        return np.arange(power.shape[1]), power
    dims = ("time", "l", "m") if "m" in table.dims else ("time", [d for d in table.dims if d != "time"][0])
    lmax = table.sizes[dims[1]] - 1
    geo = comparison_geometry("sphere" if "m" in table.dims else "circle", lmax)
    return np.arange(lmax + 1), geo.power_spectrum(geo.from_table(table.transpose(*dims).values))[:, :lmax + 1]


def positive_only(y):
    """y with non-positive values hidden, so a log axis never sees them."""
    y = np.asarray(y, dtype=float).copy()
    y[~(y > 0)] = np.nan
    return y


def _first_finite(y):
    finite = y[np.isfinite(y)]
    return finite[0] if finite.size else np.nan


def _fmt(ds, key):
    val = ds.attrs.get(key, "?")
    try:
        return format(float(val), "g")
    except (TypeError, ValueError):
        return str(val)


# --------------------------------------------------------------------------
# panels
# --------------------------------------------------------------------------
def _view_centre(ds):
    """(lat, lon) of the density maximum of the last snapshot that has data."""
    dens = ds["density"].transpose("time", "lat", "lon").values
    for i in range(dens.shape[0] - 1, -1, -1):
        if np.isfinite(dens[i]).any():
            j, k = np.unravel_index(np.nanargmax(dens[i]), dens[i].shape)
            return float(ds["lat"][j]), float(ds["lon"][k])
    return 0.0, 0.0


def _draw_sphere_maps(subfig, ds, idx, t, view):
    dens = ds["density"].transpose("time", "lat", "lon")
    lat, lon = np.asarray(ds["lat"], float), np.asarray(ds["lon"], float)
    lat_e, lon_e = cell_edges(lat, lon)
    snaps = np.asarray(dens.values[idx], float)
    finite = snaps[np.isfinite(snaps)]
    norm = Normalize(*(finite.min(), finite.max()) if finite.size else (0.0, 1.0))

    # Orthographic geometry is the same for every snapshot: compute it once.
    lat0, lon0 = view if view is not None else _view_centre(ds)
    cx, cy, cdepth = orthographic(*np.meshgrid(lat_e, lon_e, indexing="ij"), lat0, lon0)
    # Corners on the far side would fold back into the disc; push them out to
    # the limb so cells at the edge of the visible hemisphere end at the disc.
    behind = cdepth < 0
    r = np.hypot(cx, cy)
    r[r == 0] = 1.0
    cx = np.where(behind, cx / r, cx)
    cy = np.where(behind, cy / r, cy)
    _, _, depth = orthographic(*np.meshgrid(lat, lon, indexing="ij"), lat0, lon0)
    hidden = depth <= 0

    axes = subfig.subplots(2, len(idx), squeeze=False)
    mesh = None
    for col, (i, snap) in enumerate(zip(idx, snaps)):
        ax = axes[0, col]
        mesh = ax.pcolormesh(lon_e, lat_e, np.ma.masked_invalid(snap), norm=norm,
                             cmap="viridis", shading="flat")
        # Ticks first: set_xticks would widen the limits to include 360.
        ax.set(xticks=[0, 90, 180, 270], yticks=[-90, -45, 0, 45, 90],
               title=f"t = {t[i]:.4g}", xlabel="longitude (°E)")
        ax.set(xlim=(lon_e[0], lon_e[-1]), ylim=(-90, 90))
        ax.set_aspect("equal")
        if col == 0:
            ax.set_ylabel("latitude (°N)")
        ax = axes[1, col]
        ax.pcolormesh(cx, cy, np.ma.masked_array(snap, hidden | ~np.isfinite(snap)),
                      norm=norm, cmap="viridis", shading="flat")
        ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="k", lw=0.8))
        ax.set(xlim=(-1.05, 1.05), ylim=(-1.05, 1.05), aspect="equal")
        ax.set_axis_off()
        if col == 0:
            ax.set_title(f"view centre ({lat0:.0f}°N, {lon0:.0f}°E)", fontsize="small")
    cbar = subfig.colorbar(mesh, ax=axes, label=DENSITY_LABEL, shrink=0.9)
    for ax in axes.flat:
        ax.set_anchor("C")  # colorbar() re-anchors its parents; centre maps over discs
    if norm.vmin < 1 / (4 * np.pi) < norm.vmax:
        cbar.ax.axhline(1 / (4 * np.pi), color="w", lw=1.5)  # uniform level


def _draw_circle_lines(subfig, ds, idx, t):
    ax = subfig.subplots()
    dens = ds["density"].transpose("time", "theta")
    # Repeat the first point at θ + 2π so the periodic curve closes.
    theta = np.append(np.asarray(ds["theta"], float), float(ds["theta"][0]) + 2 * np.pi)
    for i in idx:
        ax.plot(theta, np.append(dens.values[i], dens.values[i][0]), label=f"t = {t[i]:.4g}")
    ax.axhline(1 / (2 * np.pi), color="gray", ls=":", lw=1, label="uniform 1/2π")
    ax.set(xlabel="θ (rad)", ylabel="density f (uniform = 1/2π)", xlim=(0, 2 * np.pi),
           xticks=np.linspace(0, 2 * np.pi, 5), xticklabels=["0", "π/2", "π", "3π/2", "2π"])
    ax.legend(fontsize="small")


def _draw_zonal_lines(subfig, ds, idx, t):
    """Zonal runs on S^{d−1}: f against the angle θ = arccos t to the axis (linear and log
    scale: in high d the mass sits near θ = 90° and a cluster is many decades above it)."""
    axes = subfig.subplots(1, 2)
    dens = ds["density"].transpose("time", "t")
    theta = np.degrees(np.arccos(np.clip(np.asarray(ds["t"], float), -1.0, 1.0)))
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


def _draw_diagnostics(axes, ds, t):
    names = [d for d in _DIAGNOSTICS if d[0] in ds]
    for ax, (name, label, log) in zip(axes, names):
        y = np.asarray(ds[name].values, float)
        if name == "energy":
            e0 = _first_finite(y)
            y = (y - e0) / abs(e0) if e0 else y - e0
        elif name == "mass":
            y = np.abs(y - _first_finite(y))
        if log:
            y = positive_only(y)
        ax.plot(t, y, ".-", ms=3, lw=1)
        if not np.isfinite(y).any():
            ax.text(0.5, 0.5, "no finite data" + (" > 0" if log else ""), ha="center",
                    va="center", transform=ax.transAxes, color="gray")
        if log and np.isfinite(y).any():
            ax.set_yscale("log")
        else:
            # Conservation errors are ~1e-12: keep the offset text readable.
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        ax.set(xlabel="time", ylabel=label)
    for ax in axes[len(names):]:
        ax.set_visible(False)


def _draw_spectrum(ax, ds, idx, t, circle):
    deg, power = _power(ds)
    if power is None:
        ax.text(0.5, 0.5, "no coefficients", ha="center", va="center", transform=ax.transAxes)
        return
    for i in idx:
        ax.plot(deg, positive_only(power[i]), ".-", ms=4, lw=1, label=f"t = {t[i]:.4g}")
    if np.isfinite(positive_only(power[idx])).any():
        ax.set_yscale("log")
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
        range.  Default: ``n_times`` snapshots evenly spread over the run,
        first and last included.
    n_times : int
        Number of snapshots when ``times`` is None.
    view : (float, float), optional
        (lat, lon) in degrees of the centre of the orthographic views.
        Default: the point of maximum density of the last snapshot.

    Returns
    -------
    matplotlib.figure.Figure
        Rows: density maps (lon–lat) with one shared colour bar,
        orthographic views, then diagnostics over time and the power
        spectrum at the chosen times.  Circle runs get density(θ) lines
        instead of the two map rows.

    Raises
    ------
    ValueError
        If ``density`` is missing or has unknown dimensions, or a requested
        time is outside the run's range.
    """
    if "density" not in ds:
        raise ValueError("dataset has no 'density' variable (a PDE run is needed; "
                         f"variables present: {sorted(ds.data_vars)})")
    dims = set(ds["density"].dims)
    zonal = dims == {"time", "t"}
    if dims == {"time", "lat", "lon"}:
        circle = False
    elif dims == {"time", "theta"} or zonal:
        circle = True  # one line per snapshot instead of maps
    else:
        raise ValueError(f"'density' has dimensions {ds['density'].dims}; expected "
                         "(time, lat, lon) on the sphere, (time, theta) on the circle or "
                         "(time, t) on sphere_zonal")
    idx = select_times(ds, times, n_times)
    t = _time_values(ds)

    ncol = len(idx)
    fig = plt.figure(figsize=(max(13.0, 3.4 * ncol + 1.5), 8.0 if circle else 12.0),
                     layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[0.8, 1.0] if circle else [1.25, 1.0])
    if zonal:
        _draw_zonal_lines(top, ds, idx, t)
    elif circle:
        _draw_circle_lines(top, ds, idx, t)
    else:
        _draw_sphere_maps(top, ds, idx, t, view)

    # Bottom: 2 x 3 diagnostic panels, spectrum spanning the right column.
    gs = bottom.add_gridspec(2, 4, width_ratios=[1, 1, 1, 1.3])
    diag_axes = [bottom.add_subplot(gs[r, c]) for r in range(2) for c in range(3)]
    _draw_diagnostics(diag_axes, ds, t)
    _draw_spectrum(bottom.add_subplot(gs[:, 3]), ds, idx, t, circle and not zonal)

    # the attributes come from a file: control characters would not render (or would fake text)
    where = ds.attrs.get('manifold', 'circle' if circle else 'sphere')
    if zonal:
        where = f"zonal S^{{d−1}}, d = {_fmt(ds, 'dimension')}"
    fig.suptitle(printable(f"{ds.attrs.get('model', '?')} on {where}:"
                 f"  β = {_fmt(ds, 'beta')},  ν = {_fmt(ds, 'nu')},  lmax = {_fmt(ds, 'lmax')}"
                 f"  —  {ds.attrs.get('status', 'status unknown')}"))
    return fig


def save_figure(ds_or_path, output=None, times=None, *, overwrite: bool = False) -> pathlib.Path:
    """Draw :func:`plot_run` (a hand-off run without ``times``:
    :func:`meanfield_pde.plotting.handoff_plot.plot_handoff`) and write it to a PNG file.

    Parameters
    ----------
    ds_or_path : xarray.Dataset or str or os.PathLike
        The run, or the path of its netCDF file (opened with xarray).
    output : str or os.PathLike, optional
        PNG to write.  Default: the netCDF path with suffix ``.png``;
        required when a Dataset without a source file is given.
    times : float or sequence of float, optional
        Passed to :func:`plot_run`.
    overwrite : bool, keyword-only
        Replace an existing PNG (written through
        :func:`meanfield_pde.runs.outputs.save_png`: never into a link's target).

    Returns
    -------
    pathlib.Path
        The PNG written.

    Raises
    ------
    ConfigError
        The PNG exists without ``overwrite``, is the input, or is claimed by
        another process; a damaged input file
        (:func:`meanfield_pde.runs.runcheck.open_checked`).
    """
    if isinstance(ds_or_path, xr.Dataset):
        ds, source = ds_or_path, ds_or_path.encoding.get("source")
        opened = False
    else:
        from ..runs.runcheck import open_checked
        source = pathlib.Path(ds_or_path)
        ds, opened = open_checked(source, f"plot: {str(source)!r}"), True
    try:
        if output is None:
            if source is None:
                raise ValueError("output path is required when the Dataset has no source file")
            output = pathlib.Path(source).with_suffix(".png")
        output = pathlib.Path(output)
        # save_png closes the figure: figures are big; a sweep must not accumulate them
        if ds.attrs.get("kind") == "handoff" and times is None:  # the staircase figure
            from .handoff_plot import plot_handoff
            figure = plot_handoff(ds)
        else:
            figure = plot_run(ds, times=times)
        save_png(figure, output, overwrite=overwrite, inputs=[source] if source else [])
    finally:
        if opened:
            ds.close()
    return output
