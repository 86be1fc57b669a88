"""Analysing a run: functions of a run's Dataset (PDE on the sphere, the circle or S^{d−1}
zonal, tokens, hand-off), each returning a labelled xarray Dataset.

- :func:`cluster_centres`: the number of clusters and their centres and masses at every snapshot;
- :func:`fitted_growth_rates`: the growth rate of every degree fitted over the linear window,
  with its error bound and the rate of linear theory beside it;
- :func:`merge_times`: when two clusters became one;
- :func:`plateau_times`: the plateaus (metastable states) of the order parameter;
- :func:`distance`: two runs compared (:func:`meanfield_pde.analysis.compare.compare`).

Each takes the Dataset of a run (as the command line writes it, read back with
``xarray.open_dataset``, or as :func:`meanfield_pde.run` returns it) or the path of a run
file, and is also the method of the same name of the accessor ``ds.mf``
(:class:`meanfield_pde.analysis.accessor.MeanFieldAccessor`, registered when
``meanfield_pde`` is imported). A Dataset that is not a run, or lacks what the function reads,
raises :class:`~meanfield_pde.core.errors.NotARunError` (a ConfigError, a ValueError) naming
what is missing. Every variable of the result has ``long_name`` and ``units``; times are in
the run's own time (its ``time`` coordinate).

Clusters (:data:`CLUSTER_THRESHOLD`): of a density, the peaks of
:func:`~meanfield_pde.analysis.clusters.peak_indices`: grid points where f is the largest within
geodesic radius ``radius`` and exceeds ``threshold`` times the uniform density 1/|S| (a density
twice the uniform one by default: the ripples of a nearly uniform density are no clusters);
a cluster's mass is that of the grid points above the threshold nearest to its peak. Of tokens,
the single-linkage groups of :func:`~meanfield_pde.particles.clusters.weighted_clusters`
(points within ``angle`` radians linked; at least ``min_mass`` of the tokens). On a zonal
density (a function of ⟨x, e⟩ on S^{d−1}) a peak inside (−1, 1) is a ring of S^{d−1}
(a (d−2)-sphere at that ⟨x, e⟩), one at the grid's end next to ±1 the point ±e.
"""

from __future__ import annotations

import math
import os

import numpy as np
import xarray as xr

from ..core.errors import ConfigError, NotARunError
from ..runs.grid_density import GRID_DIMS
from .clusters import MIN_MASS, PEAK_RADIUS, peak_indices
from .growth import LINEAR_REGIME, degree_power, departure, fit_rates, linear_window, predicted_rates
from .phase import PLATEAU_MIN_SNAPSHOTS, PLATEAU_RATE, plateau_intervals

__all__ = ["cluster_centres", "fitted_growth_rates", "merge_times", "plateau_times", "distance",
           "CLUSTER_THRESHOLD", "ZONAL_COORDINATE", "RUN_VARIABLES"]

CLUSTER_THRESHOLD = 2.0
"""A cluster of a density exceeds this many times the uniform density 1/|S| at its peak."""

ZONAL_COORDINATE = GRID_DIMS["sphere_zonal"][0]
"""The coordinate of a zonal run's grid, ⟨x, e⟩ in [−1, 1] (read from the run files' contract,
:data:`meanfield_pde.runs.grid_density.GRID_DIMS`)."""

RUN_VARIABLES = ("density", "coef_real", "positions")
"""A Dataset with a ``time`` dimension and one of these is a run."""

_AREA = {"sphere": 4.0 * math.pi, "circle": 2.0 * math.pi, "sphere_zonal": 1.0}
_SOURCE = ("Geshkovski, Letrouit, Polyanskiy & Rigollet, 'A mathematical perspective on "
           "Transformers', arXiv:2312.10794")


# -- the run ------------------------------------------------------------------------------------

def _run(source, where: str) -> xr.Dataset:
    """The run's Dataset (opened and checked if a path), else NotARunError saying what it lacks."""
    if isinstance(source, (str, os.PathLike)):
        from ..runs.dataset import as_dataset
        source = as_dataset(source, where)
    if not isinstance(source, xr.Dataset):
        raise NotARunError(f"{where}: got {type(source).__name__}: pass the Dataset of a run "
                           "(xarray.open_dataset(FILE)) or the path of a run file")
    missing = [] if "time" in source.dims else ["the dimension 'time'"]
    if not any(name in source for name in RUN_VARIABLES):
        missing.append("a variable density, coef_real/coef_imag or positions")
    if missing:
        have = ", ".join(sorted(map(str, source.data_vars))) or "none"
        raise NotARunError(f"{where}: the Dataset is not a run of meanfield_pde: it has no "
                           f"{' and no '.join(missing)} (its variables: {have})")
    return source


def _need(ds: xr.Dataset, names, where: str, why: str) -> None:
    missing = [n for n in names if n not in ds.variables]
    if missing:
        raise NotARunError(f"{where}: the run has no variable {', '.join(map(repr, missing))}, "
                           f"which {why}")


def _manifold(ds: xr.Dataset) -> str:
    if "manifold" in ds.attrs:
        return str(ds.attrs["manifold"])
    if "k" in ds.dims or "theta" in ds.dims or ("positions" in ds and ds.sizes.get("xyz") == 2):
        return "circle"
    return "sphere_zonal" if ZONAL_COORDINATE in ds.dims and "lat" not in ds.dims else "sphere"


def _time(ds: xr.Dataset) -> xr.DataArray:
    """The run's time coordinate, labelled as the files label it (also a Dataset in memory)."""
    from ..runs.cf import COORDINATES
    t = ds["time"].copy()
    t.attrs = {**COORDINATES["time"], **t.attrs}
    return t


def _rate_units(ds: xr.Dataset) -> str:
    unit = str(ds["time"].attrs.get("units", "1")).strip()
    return "1" if unit in ("", "1") else f"{unit}-1"


def _labels(ds: xr.Dataset, where: str) -> dict:
    """The attributes every result carries: which run, on what."""
    out = {"manifold": _manifold(ds), "computed_by": f"meanfield_pde.analysis.dataset.{where}"}
    for key in ("case_name", "title", "model", "beta", "nu", "dimension"):
        if key in ds.attrs:
            out[f"run_{key}" if key in ("title",) else key] = ds.attrs[key]
    return out


# -- clusters -----------------------------------------------------------------------------------

def _grid(ds: xr.Dataset, manifold: str, where: str):
    """(density (time, N), points (N, d), weights (N,), density units) of a grid run."""
    dims = GRID_DIMS[manifold]
    if "density" in ds:
        f = ds["density"]
    else:
        _need(ds, ("coef_real", "coef_imag"), where, "a run without a stored density is rebuilt from")
        from ..runs.grid_density import rebuilt_density
        f = rebuilt_density(ds)
    _need(ds, ("weights",), where, "the cluster masses are integrated with")
    for d in dims:
        if d not in f.dims:
            raise NotARunError(f"{where}: the density has dims {f.dims}, not ('time', "
                               f"{', '.join(map(repr, dims))}) of a {manifold} run")
    if manifold == "sphere":
        lat, lon = np.meshgrid(np.deg2rad(ds["lat"].values), np.deg2rad(ds["lon"].values), indexing="ij")
        points = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)
    elif manifold == "circle":
        theta = ds["theta"].values
        points = np.stack([np.cos(theta), np.sin(theta)], -1)
    else:  # ⟨x, e⟩ = cos(polar angle): geodesic distance of two levels = difference of the angles
        t = np.clip(ds[ZONAL_COORDINATE].values, -1.0, 1.0)
        points = np.stack([t, np.sqrt(1.0 - t * t)], -1)
    values = np.asarray(f.transpose("time", *dims).values, dtype=float).reshape(f.sizes["time"], -1)
    weights = np.asarray(ds["weights"].transpose(*dims).values, dtype=float).ravel()
    return values, points.reshape(-1, points.shape[-1]), weights, str(f.attrs.get("units", "1"))


def _peak_clusters(values, points, weights, area, radius, threshold):
    """Per snapshot: (centres (k, d), masses (k,), peak values (k,)), heaviest first."""
    out = []
    for f in values:
        idx = peak_indices(points, f, area, radius, threshold)
        if idx.size == 0:
            out.append((np.zeros((0, points.shape[1])), np.zeros(0), np.zeros(0)))
            continue
        above = np.flatnonzero(f > threshold / area)
        nearest = np.argmax(points[above] @ points[idx].T, axis=1)
        mass = np.bincount(nearest, weights=f[above] * weights[above], minlength=idx.size)
        order = np.argsort(-mass, kind="stable")
        out.append((points[idx[order]], mass[order], f[idx[order]]))
    return out


def _token_clusters(ds: xr.Dataset, angle: float, min_mass: float):
    """Per snapshot: the :class:`~meanfield_pde.particles.clusters.Clusters` of the tokens."""
    from ..particles.clusters import weighted_clusters
    x = np.asarray(ds["positions"].transpose("time", "particle", ...).values, dtype=float)
    return [weighted_clusters(xi, None, angle, min_mass) for xi in x]


def _method(ds: xr.Dataset, method: str | None, where: str) -> str:
    if method is None:  # noisy tokens never gather into points: their smoothed density's peaks
        noise_free = float(ds.attrs.get("nu", 0.0)) == 0.0
        return "linkage" if "positions" in ds and (noise_free or "density" not in ds) else "peaks"
    if method not in ("peaks", "linkage"):
        raise ConfigError(f"{where}: method = {method!r}: must be 'peaks' (of the density) or "
                          "'linkage' (of the token positions)")
    if method == "linkage":
        _need(ds, ("positions",), where, "method 'linkage' groups (a token run's positions)")
    return method


def _check_options(where: str, threshold, radius, angle, min_mass) -> None:
    from ..core.checks import check_number
    check_number(f"{where}: threshold", threshold, 0.0, math.inf)
    check_number(f"{where}: radius", radius, 0.0, math.pi)
    if not 0.0 < float(angle) < math.pi:
        raise ConfigError(f"{where}: angle = {angle!r}: must be in (0, pi) radians")
    check_number(f"{where}: min_mass", min_mass, 0.0, math.inf)


def cluster_centres(run, threshold: float = CLUSTER_THRESHOLD, radius: float = PEAK_RADIUS,
                    angle: float | None = None, min_mass: float = MIN_MASS,
                    method: str | None = None) -> xr.Dataset:
    """The clusters of a run at every snapshot: their number, centres and masses.

    Parameters
    ----------
    run : Dataset or path
        A PDE run (sphere, circle or zonal; its ``density``, or the density rebuilt from its
        coefficients) or a token run (its ``positions``).
    threshold : float >= 0
        Peaks of a density: f > threshold/|S| (units of the uniform density of unit mass).
    radius : float in [0, π]
        Peaks of a density: f is the largest within this geodesic radius (radians); two
        clusters closer than it are one.
    angle : float in (0, π), optional
        Tokens: the single-linkage distance (radians); default
        :data:`meanfield_pde.theory.clusters.MERGE_ANGLE` (1e-2).
    min_mass : float >= 0
        Tokens: a group lighter than this (fraction of the tokens) is no cluster.
    method : {"peaks", "linkage"}, optional
        Default "linkage" for a token run without noise (ν = 0: its clusters gather into
        points), "peaks" otherwise; "peaks" of a token run: of its stored density, the
        empirical measure smoothed by the heat kernel of time ``smoothing`` (its attribute).

    Returns
    -------
    Dataset with dims (time, cluster[, xyz]), clusters heaviest first, padded with NaN:

    n_clusters(time)
        The number of clusters (int).
    cluster_mass(time, cluster)
        Its mass (the run's unit: total mass 1).
    centre(time, cluster, xyz)
        Its centre, a unit vector (sphere, circle, tokens; the peak's grid point, or the
        tokens' normalised barycentre), with centre_lat, centre_lon (degrees) on S² and
        centre_theta (radians) on S¹.
    centre_<zonal coordinate>, centre_polar_angle(time, cluster)
        Zonal runs: ⟨x, e⟩ of the peak (a ring of S^{d−1}, or ±e at the grid's ends) and
        its polar angle arccos⟨x, e⟩.
    peak_density(time, cluster)
        Peaks: f at the peak (the density's units).
    cluster_radius(time, cluster)
        Linkage: rms geodesic distance of the tokens to the centre (radians).

    A peak's centre is a grid point: within half a grid cell of the density's maximum.

    Raises
    ------
    NotARunError
        Not a run; no density nor coefficients (peaks), no ``weights``; no positions (linkage).
    ConfigError
        An option out of its range.

    Sources: the clusters of the mean-field dynamics, Geshkovski, Letrouit, Polyanskiy &
    Rigollet, arXiv:2312.10794; their number against l*(β): :ref:`linear-theory`.
    """
    from ..theory.clusters import MERGE_ANGLE
    where = "cluster_centres"
    ds = _run(run, where)
    angle = MERGE_ANGLE if angle is None else angle
    _check_options(where, threshold, radius, angle, min_mass)
    manifold = _manifold(ds)
    method = _method(ds, method, where)
    time = _time(ds)
    if method == "peaks":
        values, points, weights, units = _grid(ds, manifold, where)
        found = _peak_clusters(values, points, weights, _AREA.get(manifold, 4 * math.pi),
                               radius, threshold)
        centres = [c for c, _, _ in found]
        masses = [m for _, m, _ in found]
        extra = {"peak_density": ([p for _, _, p in found],
                                  dict(long_name="density at the cluster's peak", units=units))}
        definition = (f"peaks: grid points where f > {threshold:g}/|S| and f is the largest within "
                      f"{radius:g} rad; mass: grid points above the threshold nearest to the peak")
    else:
        found = _token_clusters(ds, angle, min_mass)
        centres = [c.centres for c in found]
        masses = [c.masses for c in found]
        extra = {"cluster_radius": ([c.radii for c in found], dict(
            long_name="rms geodesic distance of the cluster's tokens to its centre", units="radian"))}
        definition = (f"linkage: tokens within {angle:g} rad linked (single linkage), groups of at "
                      f"least {min_mass:g} of the mass")
    nt = time.size
    k = max([len(m) for m in masses], default=0)
    dim = centres[0].shape[1] if centres else (3 if manifold == "sphere" else 2)

    def padded(rows, shape_tail=()):
        out = np.full((nt, k) + shape_tail, np.nan)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return out

    centre = padded(centres, (dim,))
    coords = {"time": time, "cluster": ("cluster", np.arange(k), dict(long_name="cluster, heaviest first",
                                                                       units="1"))}
    out = xr.Dataset(coords=coords)
    out["n_clusters"] = ("time", np.array([len(m) for m in masses], dtype=np.int32),
                         dict(long_name="number of clusters", units="1"))
    out["cluster_mass"] = (("time", "cluster"), padded(masses),
                           dict(long_name="mass of the cluster", units="1"))
    for name, (rows, attrs) in extra.items():
        out[name] = (("time", "cluster"), padded(rows), attrs)
    if manifold == "sphere_zonal" and method == "peaks":
        level = centre[..., 0]
        out[f"centre_{ZONAL_COORDINATE}"] = (("time", "cluster"), level, dict(
            long_name="<x, e> of the cluster (a ring of S^(d-1); +-e at the grid's ends)", units="1"))
        out["centre_polar_angle"] = (("time", "cluster"), np.arccos(np.clip(level, -1, 1)), dict(
            long_name="polar angle arccos<x, e> of the cluster", units="radian"))
    else:
        axes = ["x", "y", "z"][:dim] if dim <= 3 else [f"x{i + 1}" for i in range(dim)]
        out = out.assign_coords(xyz=("xyz", axes, dict(long_name="Cartesian component of a unit vector")))
        out["centre"] = (("time", "cluster", "xyz"), centre,
                         dict(long_name="centre of the cluster (unit vector)", units="1"))
        if dim == 3:
            out["centre_lat"] = (("time", "cluster"), np.rad2deg(np.arcsin(np.clip(centre[..., 2], -1, 1))),
                                 dict(long_name="latitude of the cluster's centre", units="degrees_north"))
            out["centre_lon"] = (("time", "cluster"), np.rad2deg(np.arctan2(centre[..., 1], centre[..., 0])) % 360.0,
                                 dict(long_name="longitude of the cluster's centre", units="degrees_east"))
        elif dim == 2:
            out["centre_theta"] = (("time", "cluster"), np.arctan2(centre[..., 1], centre[..., 0]) % (2 * np.pi),
                                   dict(long_name="angle of the cluster's centre on the circle",
                                        units="radian"))
    out.attrs.update(_labels(ds, where), method=method, definition=definition,
                     threshold=float(threshold), radius=float(radius), angle=float(angle),
                     min_mass=float(min_mass))
    return out


# -- growth -------------------------------------------------------------------------------------

def fitted_growth_rates(run, window: tuple[float, float] | None = None,
                        level: float = LINEAR_REGIME) -> xr.Dataset:
    """The growth rate of every degree fitted over the linear window, beside linear theory.

    The amplitude A_l = C_l^{1/2} of degree l (C_l = Σ_m |f_lm|², Parseval) grows like
    e^{σ_l t} while the density is close to uniform; its slope on a log axis is fitted by least
    squares over the linear window (:mod:`meanfield_pde.analysis.growth`: the snapshots from
    the first on where ‖f − f̄‖ <= ``level`` ‖f̄‖) or over ``window``.

    Parameters
    ----------
    run : Dataset or path
        A run with coefficients (``coef_real``, ``coef_imag``): PDE on S², S¹ or zonal S^{d−1}
        (Gegenbauer degree l), or tokens (their empirical measure).
    window : (t0, t1), optional
        Fit the snapshots with t0 <= time <= t1 instead.
    level : float > 0
        The linear window's bound on ‖f − f̄‖/‖f̄‖ (L² norms).

    Returns
    -------
    Dataset with dim l (k on the circle), l = 0..L:

    growth_rate(l)
        The fitted rate (1/time; NaN for l = 0 and for degrees absent from the start: they
        grow from the nonlinear coupling, not at σ_l).
    growth_rate_error(l)
        A bound on |growth_rate − σ_l| when the first snapshots are linear: the spread of the
        rates between consecutive snapshots of the window (:func:`~meanfield_pde.analysis.growth.fit_rates`).
    growth_rate_theory(l)
        σ_l of :func:`meanfield_pde.theory.linear.growth_rates` for the run's model, β, ν
        (and d); NaN, with the reason in its attribute ``note``, where linear theory of the
        mean-field equation does not apply (limit equations, rescaled time).
    amplitude_start(l)
        The fitted A_l at the window's first time.

    Attributes window_start, window_end (times), window_snapshots, and departure_end
    (‖f − f̄‖/‖f̄‖ at the window's last snapshot).

    Raises
    ------
    NotARunError
        Not a run, or no coefficients.
    ConfigError
        Fewer than 3 snapshots in the window (e.g. a run that starts far from uniform: pass
        ``window``), level not > 0, window not two times t0 < t1.

    Sources: σ_l of the linearisation about the uniform measure, Geshkovski, Letrouit,
    Polyanskiy & Rigollet, arXiv:2312.10794; :ref:`linear-theory`, equations of σ_l.
    """
    from ..core.checks import check_number
    where = "fitted_growth_rates"
    ds = _run(run, where)
    _need(ds, ("coef_real", "coef_imag"), where, "the growth of the modes is measured from")
    level = check_number(f"{where}: level", level, 1e-300, math.inf)
    degrees, power = degree_power(ds)
    t = np.asarray(ds["time"].values, dtype=float)
    ratio = departure(power) / np.sqrt(power[:, 0])
    if window is None:
        idx = np.arange(linear_window(power, level))
        how = f"the first snapshots with ||f - f_bar|| <= {level:g} ||f_bar||"
        if idx.size < 3:
            out = (f"||f - f_bar||/||f_bar|| = {ratio[idx.size]:.3g} at t = {t[idx.size]:g}"
                   if idx.size < t.size else f"the run has {t.size} snapshot(s)")
            raise ConfigError(
                f"{where}: the linear window (||f - f_bar|| <= {level:g} ||f_bar||) holds "
                f"{idx.size} snapshot(s), fewer than 3 ({out}): pass window=(t0, t1), or store "
                "snapshots more often (output.every)")
    else:
        try:
            t0, t1 = (float(v) for v in window)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: window = {window!r}: must be two times (t0, t1)") from None
        if not t0 < t1:
            raise ConfigError(f"{where}: window = {window!r}: must be two times t0 < t1")
        idx = np.flatnonzero((t >= t0) & (t <= t1) & np.isfinite(t))
        how = f"the snapshots with {t0:g} <= t <= {t1:g}"
        if idx.size < 3:
            raise ConfigError(f"{where}: window = ({t0:g}, {t1:g}) holds {idx.size} snapshot(s) of "
                              f"the run (t = {t[0]:g} .. {t[-1]:g}), fewer than 3")
    rate, error, start = fit_rates(t[idx], power[idx])
    circle = _manifold(ds) == "circle"
    name = "k" if circle else "l"
    sigma, why = predicted_rates(ds.attrs, int(degrees[-1]), circle)
    units = _rate_units(ds)
    out = xr.Dataset(coords={name: (name, degrees, dict(
        long_name="Fourier wavenumber" if circle else "degree", units="1"))})
    symbol = "A_k = C_k^(1/2)" if circle else "A_l = C_l^(1/2)"
    out["growth_rate"] = (name, rate, dict(
        long_name=f"growth rate of {symbol}, least squares over the linear window", units=units))
    out["growth_rate_error"] = (name, error, dict(
        long_name="bound on |growth_rate - sigma|: spread of the rates between consecutive "
                  "snapshots of the window", units=units))
    theory = dict(long_name="growth rate sigma of linear theory about the uniform density",
                  units=units, source=f"{_SOURCE}; meanfield_pde.theory.linear.growth_rates")
    if sigma is None:
        theory["note"] = why
    out["growth_rate_theory"] = (name, np.full(degrees.size, np.nan) if sigma is None else sigma, theory)
    out["amplitude_start"] = (name, start, dict(
        long_name=f"fitted {symbol} at window_start", units="1"))
    out.attrs.update(_labels(ds, where), window=how, window_start=float(t[idx[0]]),
                     window_end=float(t[idx[-1]]), window_snapshots=int(idx.size),
                     linear_regime=float(level), departure_end=float(ratio[idx[-1]]))
    return out


# -- merges -------------------------------------------------------------------------------------

def _events_of_peaks(times, found):
    """Merge events of the peak clusters (centres, masses) tracked from snapshot to snapshot."""
    from ..particles.clusters import ClusterTracker
    # distinct peaks are more than ``radius`` apart (each is the largest within it): a tiny
    # linkage angle keeps each its own cluster
    tracker, events = ClusterTracker(angle=1e-9, min_mass=0.0), []
    for t, (centres, masses, _) in zip(times, found):
        events += tracker.update(t, centres, masses)[1]
    return events


def merge_times(run, threshold: float = CLUSTER_THRESHOLD, radius: float = PEAK_RADIUS,
                angle: float | None = None, min_mass: float = MIN_MASS,
                method: str | None = None) -> xr.Dataset:
    """When two clusters of a run became one.

    The clusters of each snapshot (:func:`cluster_centres`, same options) are matched to those
    of the next by nearest centre (:func:`~meanfield_pde.particles.clusters.track_clusters`):
    a cluster that receives two or more is the result of a merge between the two snapshots.
    A hand-off run reports the merge events it stored while it ran
    (:func:`meanfield_pde.analysis.merges.merge_events`). A run whose clusters never meet,
    or that never clusters (a density that stays below the threshold), has no merge.
    A cluster that fades below the threshold (noise) counts as merged into its nearest one.

    Parameters
    ----------
    run : Dataset or path
        A PDE run, a token run or a hand-off run.
    threshold, radius, angle, min_mass, method :
        As :func:`cluster_centres`.

    Returns
    -------
    Dataset with dim merge (in time order; size 0 without merges), the names of a hand-off
    run's file:

    merge_time(merge)
        The time of the first snapshot after the merge.
    merge_time_before(merge)
        The time of the snapshot before it: the merge happened in (merge_time_before, merge_time].
    merge_mass(merge)
        The mass of the merged cluster at merge_time.
    merge_parent_a, merge_parent_b, merge_child(merge)
        Cluster ids (persistent from snapshot to snapshot; a merge makes a new one).

    Attribute n_merges.

    Raises
    ------
    NotARunError, ConfigError
        As :func:`cluster_centres`.

    Sources: the merges of metastable clusters and their two-cluster times,
    :ref:`cluster-dynamics` (:func:`meanfield_pde.theory.clusters.merge_time`).
    """
    from ..theory.clusters import MERGE_ANGLE
    where = "merge_times"
    ds = _run(run, where)
    angle = MERGE_ANGLE if angle is None else angle
    _check_options(where, threshold, radius, angle, min_mass)
    times = np.asarray(ds["time"].values, dtype=float)
    if "merge_count" in ds.variables or "n_merges" in ds.attrs:
        from .merges import merge_events
        events, how = merge_events(ds), "the merge events stored by the hand-off run"
    elif _method(ds, method, where) == "linkage":
        from ..particles.clusters import track_clusters
        x = np.asarray(ds["positions"].transpose("time", "particle", ...).values, dtype=float)
        _, events = track_clusters(times, list(x), None, angle, min_mass)
        how = f"token clusters (single linkage at {angle:g} rad) tracked from snapshot to snapshot"
    else:
        manifold = _manifold(ds)
        values, points, weights, _ = _grid(ds, manifold, where)
        found = _peak_clusters(values, points, weights, _AREA.get(manifold, 4 * math.pi),
                               radius, threshold)
        events = _events_of_peaks(times, found)
        how = (f"density peaks (f > {threshold:g}/|S|, largest within {radius:g} rad) tracked "
               "from snapshot to snapshot")
    events = sorted(events, key=lambda e: (e.t, e.t_before))
    units = str(ds["time"].attrs.get("units", "1"))
    out = xr.Dataset(coords={"merge": ("merge", np.arange(len(events)), dict(
        long_name="merge event, in time order", units="1"))})
    out["merge_time"] = ("merge", np.array([e.t for e in events], float), dict(
        long_name="time of the first snapshot after the merge", units=units))
    out["merge_time_before"] = ("merge", np.array([e.t_before for e in events], float), dict(
        long_name="time of the last snapshot before the merge", units=units))
    out["merge_mass"] = ("merge", np.array([e.mass for e in events], float), dict(
        long_name="mass of the merged cluster", units="1"))
    for name, values in (("merge_parent_a", [e.parents[0] for e in events]),
                         ("merge_parent_b", [e.parents[1] for e in events]),
                         ("merge_child", [e.child for e in events])):
        out[name] = ("merge", np.array(values, dtype=np.int32), dict(
            long_name=name.replace("_", " ").replace("merge ", "cluster id of the ") , units="1"))
    out.attrs.update(_labels(ds, where), method=how, n_merges=len(events))
    return out


# -- plateaus -----------------------------------------------------------------------------------

def plateau_times(run, variable: str = "order_parameter", rate: float = PLATEAU_RATE,
                  min_snapshots: int = PLATEAU_MIN_SNAPSHOTS) -> xr.Dataset:
    """The plateaus of the order parameter (or of another time series of the run): the
    metastable states, where it changes by at most ``rate`` per unit time.

    A plateau is a maximal run of at least ``min_snapshots`` consecutive snapshots between
    which |Δv/Δt| <= rate (:func:`meanfield_pde.analysis.phase.plateau_intervals`); its
    first and last times lie within one snapshot interval of where |dv/dt| crosses ``rate``.

    Parameters
    ----------
    run : Dataset or path
    variable : str
        A variable of the run with dims (time,): ``order_parameter`` |∫ x f dσ| (default),
        ``energy``, ``free_energy``, ...
    rate : float >= 0
        In units of the variable per unit time (the order parameter of a probability
        measure lies in [0, 1]).
    min_snapshots : int >= 2

    Returns
    -------
    Dataset with dim plateau (in time order; size 0 if none):
    plateau_start(plateau), plateau_end(plateau) (times), plateau_value(plateau) (the
    variable's mean over the plateau's snapshots, in its units).

    Raises
    ------
    NotARunError
        Not a run, or no ``variable`` with dims (time,).
    ConfigError
        rate < 0, min_snapshots < 2.

    Sources: metastable states of the order parameter (plateaus between merges),
    Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794.
    """
    where = "plateau_times"
    ds = _run(run, where)
    _need(ds, (variable,), where, "the plateaus are found in")
    if ds[variable].dims != ("time",):
        raise NotARunError(f"{where}: variable {variable!r} has dims {ds[variable].dims}, not (time,)")
    t = np.asarray(ds["time"].values, dtype=float)
    v = np.asarray(ds[variable].values, dtype=float)
    found = plateau_intervals(t, v, rate, min_snapshots)
    units = str(ds["time"].attrs.get("units", "1"))
    vunits = str(ds[variable].attrs.get("units", "1"))
    label = str(ds[variable].attrs.get("long_name", variable))
    out = xr.Dataset(coords={"plateau": ("plateau", np.arange(len(found)), dict(
        long_name="plateau, in time order", units="1"))})
    out["plateau_start"] = ("plateau", np.array([t[i] for i, _ in found], float), dict(
        long_name=f"first time of the plateau of {variable}", units=units))
    out["plateau_end"] = ("plateau", np.array([t[j] for _, j in found], float), dict(
        long_name=f"last time of the plateau of {variable}", units=units))
    out["plateau_value"] = ("plateau", np.array([v[i:j + 1].mean() for i, j in found], float), dict(
        long_name=f"mean of {label} over the plateau", units=vunits))
    out.attrs.update(_labels(ds, where), variable=variable, rate=float(rate),
                     min_snapshots=int(min_snapshots),
                     definition=f"|d {variable}/dt| <= {rate:g} between consecutive snapshots")
    return out


# -- distances ----------------------------------------------------------------------------------

def distance(run, other, **options) -> xr.Dataset:
    """Two runs compared at their common snapshot times: :func:`meanfield_pde.analysis.compare.compare`
    (``meanfield-pde compare``), whose options it takes and whose Dataset it returns
    (``l2_distance(time)``, ``relative_l2_distance``, the differences of order parameter,
    energy and mass; with a token run also ``sliced_wasserstein`` and the sampling levels).

    Parameters
    ----------
    run, other : Dataset or path
        Two runs on the same manifold with coefficients.
    **options
        degrees, smoothing, n_projections, seed: as :func:`~meanfield_pde.analysis.compare.compare`.

    Raises
    ------
    NotARunError
        Either is not a run, or has no coefficients.
    ConfigError
        As :func:`~meanfield_pde.analysis.compare.compare` (other manifolds, no common time, ...).

    Sources: L² distances by Parseval; the spherical sliced Wasserstein distance,
    Bonet et al., "Spherical sliced-Wasserstein", ICLR 2023.
    """
    from .compare import compare
    where = "distance"
    runs = [_run(r, f"{where} ({label} run)") for r, label in ((run, "first"), (other, "second"))]
    for ds, label in zip(runs, ("first", "second")):
        _need(ds, ("coef_real", "coef_imag"), f"{where} ({label} run)", "the distances are computed from")
    out = compare(*runs, **options)
    labels = {"time": _time(runs[0]).attrs, "l": dict(long_name="degree (wavenumber on the circle)",
                                                      units="1")}
    for name, attrs in labels.items():  # the coordinates labelled as the run's
        if name in out.coords:
            out[name].attrs = {**attrs, **out[name].attrs}
    return out
