"""Compare two runs (PDE, limit, later particles) stored with the same Dataset names.

Distances are computed from the orthonormal coefficients, so by Parseval
they are L² distances of densities (w.r.t. the area measure):
    ‖f − g‖² = Σ_l Σ_m w_m |f_lm − g_lm|²,  w_0 = 1, w_m = 2 for m > 0
(only m >= 0 is stored for a real field; on the circle l is the wavenumber k).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .errors import ConfigError

TIME_TOLERANCE = 1e-9  # relative: snapshots of two runs at "the same" output time


def _coefficients(ds: xr.Dataset) -> xr.DataArray:
    """Complex coefficients with dims (time, degree[, m]); NaN (m > l) set to 0."""
    c = (ds.coef_real + 1j * ds.coef_imag).fillna(0.0)
    return c.rename({"k": "l"}) if "k" in c.dims else c


def degree_power(coef: xr.DataArray) -> xr.DataArray:
    """Σ_m w_m |c_lm|² per degree (dims time, l); w_0 = 1, w_m = 2 (m > 0)."""
    p = np.abs(coef) ** 2
    if "m" in p.dims:
        return (p * xr.where(p.m == 0, 1.0, 2.0)).sum("m")
    return p * xr.where(p.l == 0, 1.0, 2.0)


def on_common_time_axis(ds_a: xr.Dataset, ds_b: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """Put both runs on the same time unit.

    A limit run's time is τ (attribute time_unit = "backward_heat" or
    "porous_medium"); a PDE run with time.unit set to that unit carries a
    ``tau`` coordinate (attribute tau_unit). That run is then compared on τ.

    Raises
    ------
    ConfigError
        If the time units differ and cannot be matched.
    """
    ua, ub = ds_a.attrs.get("time_unit", "natural"), ds_b.attrs.get("time_unit", "natural")
    if ua == ub:
        return ds_a, ds_b
    def on_tau(ds):
        return ds.swap_dims(time="tau").drop_vars("time").rename(tau="time")
    if "tau" in ds_a.coords and ds_a.attrs.get("tau_unit") == ub:
        return on_tau(ds_a), ds_b
    if "tau" in ds_b.coords and ds_b.attrs.get("tau_unit") == ua:
        return ds_a, on_tau(ds_b)
    raise ConfigError(f"compare: run A has time in unit {ua!r}, run B in {ub!r}; run the PDE with "
                      "time.unit set to the limit's unit to compare with a limit run")


def common_times(ds_a: xr.Dataset, ds_b: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Indices (ia, ib) of snapshots present in both runs (times equal to TIME_TOLERANCE).

    Raises
    ------
    ConfigError
        If the runs share no snapshot time.
    """
    ta, tb = ds_a.time.values, ds_b.time.values
    scale = max(np.max(np.abs(ta)), np.max(np.abs(tb)), 1e-300)
    ib = np.searchsorted(tb, ta).clip(0, len(tb) - 1)
    ib = np.where(np.abs(tb[np.maximum(ib - 1, 0)] - ta) < np.abs(tb[ib] - ta), np.maximum(ib - 1, 0), ib)
    ok = np.abs(tb[ib] - ta) <= TIME_TOLERANCE * scale
    if not ok.any():
        raise ConfigError(f"compare: the runs share no snapshot time (A: {ta.min():g}..{ta.max():g}, "
                          f"B: {tb.min():g}..{tb.max():g})")
    return np.flatnonzero(ok), ib[ok]


def coefficient_distance(ds_a: xr.Dataset, ds_b: xr.Dataset, degrees: int | None = None) -> xr.DataArray:
    """L² distance of the densities restricted to degrees l <= degrees, per common time.

    Parameters
    ----------
    ds_a, ds_b : Dataset
        Runs on the same manifold (coef_real/coef_imag with dims (time, l, m) or (time, k)).
    degrees : int, optional
        Highest degree compared (default: the smaller lmax of the two).
    """
    return compare(ds_a, ds_b, degrees).l2_distance


def compare(ds_a: xr.Dataset, ds_b: xr.Dataset, degrees: int | None = None) -> xr.Dataset:
    """Differences of two runs at their common snapshot times.

    Returns
    -------
    Dataset with dims (time, l):
        degree_power_difference(time, l): Σ_m w_m |a_lm − b_lm|²;
        l2_distance(time): sqrt of its sum over l <= degrees (L² distance of densities);
        relative_l2_distance(time): l2_distance / ‖a − uniform‖ on the same degrees;
        order_parameter_difference, energy_difference, mass_difference (time): a − b.
    Degrees above the smaller lmax are not compared (stated in the attributes).

    Raises
    ------
    ConfigError
        If the runs are on different manifolds or share no snapshot time.
    """
    if ds_a.attrs.get("manifold") != ds_b.attrs.get("manifold"):
        raise ConfigError(f"compare: runs on different manifolds ({ds_a.attrs.get('manifold')} "
                          f"and {ds_b.attrs.get('manifold')})")
    ds_a, ds_b = on_common_time_axis(ds_a, ds_b)
    ia, ib = common_times(ds_a, ds_b)
    ca, cb = _coefficients(ds_a).isel(time=ia), _coefficients(ds_b).isel(time=ib)
    top = min(int(ca.l.max()), int(cb.l.max()))
    top = top if degrees is None else min(top, int(degrees))
    sel = dict(l=slice(0, top))
    if "m" in ca.dims:
        sel["m"] = slice(0, top)
    ca, cb = ca.sel(**sel), cb.sel(**sel).assign_coords(time=ca.time)
    diff_power = degree_power(ca - cb)
    dist = np.sqrt(diff_power.sum("l"))
    fluct = np.sqrt(degree_power(ca).sel(l=slice(1, top)).sum("l"))
    out = xr.Dataset({
        "degree_power_difference": diff_power.assign_attrs(
            long_name="Σ_m w_m |a_lm − b_lm|² per degree"),
        "l2_distance": dist.assign_attrs(long_name=f"‖a − b‖_L² on degrees l <= {top}"),
        "relative_l2_distance": (dist / fluct).assign_attrs(
            long_name="l2_distance / ‖a − mean(a)‖ on the same degrees"),
    })
    for name in ("order_parameter", "energy", "mass"):
        if name in ds_a and name in ds_b:
            out[f"{name}_difference"] = ("time", ds_a[name].values[ia] - ds_b[name].values[ib],
                                         dict(long_name=f"{name} of A minus B"))
    out.attrs.update(manifold=ds_a.attrs.get("manifold", ""), degrees_compared=top,
                     run_a=ds_a.attrs.get("title", ""), run_b=ds_b.attrs.get("title", ""),
                     case_a=ds_a.attrs.get("case", ""), case_b=ds_b.attrs.get("case", ""),
                     note="L² distances from orthonormal coefficients (Parseval); "
                          "degrees above the smaller lmax are not compared")
    return out
