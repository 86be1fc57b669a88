"""Measured transitions of sweeps, set against theory: crossing times, the token
transition, agreement within one grid cell, the critical-noise fit, and the hysteresis window
of a sweep continued up and down in ν; and the plateaus of a run's time series
(:func:`plateau_intervals`: the metastable states of its order parameter)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.checks import check_int, check_number
from ..core.errors import ConfigError


def crossing_time(times, values, level: float = 0.5) -> float:
    """First time an increasing-ish series reaches ``level`` (linear interpolation; inf if never)."""
    times, values = np.asarray(times, float), np.asarray(values, float)
    above = np.flatnonzero(values >= level)
    if above.size == 0:
        return np.inf
    i = above[0]
    if i == 0:
        return float(times[0])
    t0, t1, v0, v1 = times[i - 1], times[i], values[i - 1], values[i]
    return float(t0 + (level - v0) * (t1 - t0) / (v1 - v0))


def token_transition(ds: xr.Dataset, level: float = 0.5) -> xr.DataArray:
    """Measured transition time per (beta, dimension): the seed-mean clustered_pairs reaches ``level``."""
    frac = ds.clustered_pairs.mean("seed") if "seed" in ds.clustered_pairs.dims else ds.clustered_pairs
    return xr.apply_ufunc(lambda v: crossing_time(ds.time.values, v, level), frac,
                          input_core_dims=[["time"]], vectorize=True)


def within_one_cell(betas, measured, predicted_at, dt: float, t_end: float = np.inf) -> np.ndarray:
    """True where the measured transition (t_m at β) lies within one (Δt, Δβ) cell of the prediction.

    The predicted t*(β) increases with β, so the prediction passes within one
    cell of (t_m, β) iff t_m ∈ [t*(β − Δβ) − Δt, t*(β + Δβ) + Δt] (Δβ the grid
    spacing at β). ``predicted_at``: callable β -> t*. No measured transition
    (inf) agrees if the prediction lies beyond the grid, t*(β − Δβ) − Δt > t_end.
    """
    betas = np.asarray(betas, float)
    ok = np.zeros(len(betas), bool)
    for i, (b, tm) in enumerate(zip(betas, measured)):
        db = np.diff(betas).max() if len(betas) > 1 else 0.0
        lo, hi = predicted_at(max(b - db, 0.0)) - dt, predicted_at(b + db) + dt
        ok[i] = lo <= tm <= hi if np.isfinite(tm) else lo > t_end
    return ok


def critical_noise_fit(nu, m, window: float = 0.02) -> tuple[float, float]:
    """ν_c and slope a from |m|² = a (ν_c − ν), fitted on ordered points within ``window`` below
    the first point where |m| vanishes (|m| < 1e-3). Returns (ν_c, a).

    Raises
    ------
    ValueError
        nu and m not 1-d of one length; fewer than two points to fit (e.g. no stationary point:
        a short run).
    """
    nu, m = np.asarray(nu, float), np.asarray(m, float)
    if nu.ndim != 1 or m.shape != nu.shape:  # was an IndexError from the sorting below
        raise ValueError(f"critical_noise_fit: nu (shape {nu.shape}) and m (shape {m.shape}) must "
                         "be two 1-d arrays of the same length (one |m| per nu)")
    order = np.argsort(nu)
    nu, m2 = nu[order], m[order] ** 2
    zero = np.flatnonzero(m2 < 1e-6)
    top = nu[zero[0]] if zero.size else (nu[-1] if nu.size else np.nan)
    sel = (nu < top) & (nu >= top - window) & (m2 >= 1e-6)
    if np.count_nonzero(sel) < 2:
        raise ValueError(f"critical_noise_fit: {np.count_nonzero(sel)} point(s) within {window} "
                         "below the vanishing point; at least 2 are needed")
    slope, icept = np.polyfit(nu[sel], m2[sel], 1)
    return float(-icept / slope), float(-slope)


def branch_gap(ds: xr.Dataset) -> xr.DataArray:
    """|m_up − m_down| per ν of a continuation sweep (dims nu, direction with "up" and "down"),
    NaN where either branch is not stationary. Shape (n_nu,)."""
    m = ds.order_parameter.where(ds.stationary == 1)
    return abs(m.sel(direction="up") - m.sel(direction="down"))


def hysteresis_window(ds: xr.Dataset, rel: float = 0.1, tol: float = 1e-3) -> tuple[float, float]:
    """(ν_lo, ν_hi): the smallest and largest grid ν where the stationary up and down branches of
    a continuation sweep differ, |m_up − m_down| > max(tol, rel·max(m_up, m_down)) (the
    hysteresis loop; the fold of the clustered branch lies in [ν_hi, next grid ν)). (NaN, NaN)
    where they agree everywhere: a continuous transition. The relative part allows for the
    stationary stop near ν_1: a run stops once |ṁ|/m < time.stationary_tol while m relaxes at
    λ ∝ ν_1 − ν, so the two branches of a continuous transition differ by ~ tol·m/λ there
    (2e-3, 1 % of m, at 0.99 ν_1 in the named cases).

    Raises
    ------
    ValueError
        ds has no "up" and "down" direction along nu, or no ν where both branches are
        stationary (every point failed or stopped early, e.g. a short time.t_end): nothing
        tells a continuous transition from a hysteresis loop there.
    """
    if "direction" not in ds.dims or not {"up", "down"} <= set(map(str, ds.direction.values)):
        raise ValueError("hysteresis_window: needs a sweep continued in nu with directions "
                         "['up', 'down']")
    if "order_parameter" not in ds:
        raise ValueError("hysteresis_window: no order_parameter in the sweep: every point failed "
                         "(see its error variable)")
    gap = branch_gap(ds)
    if not np.any(np.isfinite(gap.values)):
        raise ValueError("hysteresis_window: no nu where both the up and the down point are "
                         "stationary (see stop_reason); raise time.t_end")
    m = ds.order_parameter.where(ds.stationary == 1).max("direction")
    nu = gap.nu.values[np.asarray(gap.values > np.maximum(tol, rel * m.values))]
    return (float(nu.min()), float(nu.max())) if nu.size else (np.nan, np.nan)


PLATEAU_RATE = 1e-3
"""|dv/dt| at most this (units of the series per unit time) between consecutive snapshots: a plateau."""
PLATEAU_MIN_SNAPSHOTS = 3
"""A plateau holds at least this many snapshots (two intervals)."""


def plateau_intervals(times, values, rate: float = PLATEAU_RATE,
                      min_snapshots: int = PLATEAU_MIN_SNAPSHOTS) -> list[tuple[int, int]]:
    """The plateaus of a time series: (first, last) snapshot indices of every maximal run of
    consecutive snapshots between which |v_{i+1} − v_i| / (t_{i+1} − t_i) <= ``rate``, holding
    at least ``min_snapshots`` snapshots; in time order.

    The difference quotient is v' at a point between the two snapshots (mean value theorem),
    so a plateau's first and last times lie within one snapshot interval of the times where
    |v'| crosses ``rate``, when v' is monotone across each crossing. A NaN value ends a plateau.

    Parameters
    ----------
    times : array_like (n,), increasing;  values : array_like (n,);
    rate : float >= 0, in units of ``values`` per unit time;  min_snapshots : int >= 2.

    Raises
    ------
    ConfigError (a ValueError)
        times and values not 1-d of one length, times not increasing, rate < 0 or
        min_snapshots < 2.
    """
    t, v = np.asarray(times, float), np.asarray(values, float)
    if t.ndim != 1 or v.shape != t.shape:
        raise ConfigError(f"plateau_intervals: times (shape {t.shape}) and values (shape {v.shape}) "
                          "must be two 1-d arrays of the same length")
    if not np.all(np.diff(t) > 0):
        raise ConfigError("plateau_intervals: times must be increasing")
    rate = check_number("rate", rate, 0.0, np.inf)
    min_snapshots = check_int("min_snapshots", min_snapshots, 2)
    flat = np.abs(np.diff(v)) <= rate * np.diff(t)  # False where either value is NaN
    out, i = [], 0
    while i < flat.size:
        if not flat[i]:
            i += 1
            continue
        j = i
        while j < flat.size and flat[j]:
            j += 1
        if j - i + 1 >= min_snapshots:  # intervals i..j-1: snapshots i..j
            out.append((i, j))
        i = j
    return out
