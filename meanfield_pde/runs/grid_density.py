"""The grid density of a run rebuilt from its coefficients (a file written with
``output.density = false``): the one helper behind :func:`meanfield_pde.density`, the
readers of :mod:`meanfield_pde.runs.runcheck` and the Dataset a run returns.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.errors import NotARunError


def grid_geometry(ds: xr.Dataset):
    """The geometry whose grid is that of the Dataset (its ``manifold`` attribute, the size of
    ``l`` or ``k`` for lmax, the sizes of lat/lon or theta for the grid).

    Raises
    ------
    ConfigError
        The Dataset has no degree dimension (not a run).
    """
    from ..core.geometry import Circle, Sphere
    manifold = str(ds.attrs.get("manifold", "circle" if "k" in ds.dims else "sphere"))
    degree = "k" if manifold == "circle" else "l"
    if degree not in ds.sizes:
        raise NotARunError(f"density: the Dataset has no {degree!r} dimension (not a run of meanfield-pde)")
    lmax = ds.sizes[degree] - 1
    if manifold == "circle":
        return Circle(lmax, ds.sizes.get("theta", 0))
    return Sphere(lmax, ds.sizes.get("lat", 0), ds.sizes.get("lon", 0))


def rebuilt_density(ds: xr.Dataset) -> xr.DataArray:
    """The ``density`` variable synthesised from the coefficients (the values a run stores: it
    computes its density by the same synthesis; a token run's after the heat kernel of time
    ``smoothing``), with the run's grid coordinates."""
    from .cf import grid_units
    geometry = grid_geometry(ds)
    coef = geometry.from_table((ds.coef_real + 1j * ds.coef_imag).values)
    # a token run stores its empirical measure smoothed by the heat kernel (attribute smoothing)
    s = float(ds.attrs.get("smoothing", 0.0)) if "positions" in ds else 0.0
    grids = np.array([geometry.synthesis(geometry.heat(c, s) if s > 0 else c) for c in coef])
    if geometry.manifold == "circle":
        dims, coords = ("time", "theta"), {"theta": ds["theta"] if "theta" in ds else geometry.theta}
    else:
        dims = ("time", "lat", "lon")
        coords = {"lat": ds["lat"] if "lat" in ds else geometry.lat,
                  "lon": ds["lon"] if "lon" in ds else geometry.lon}
    return xr.DataArray(grids, dims=dims, coords={"time": ds["time"], **coords}, name="density",
                        attrs=dict(long_name="density f w.r.t. area, synthesised from the coefficients",
                                   units=grid_units(geometry.manifold)[0]))


def with_density(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its ``density`` variable (rebuilt if the file does not store it)."""
    if "density" in ds or "coef_real" not in ds:
        return ds
    return ds.assign(density=rebuilt_density(ds))
