"""The grid density of a run rebuilt from its coefficients (a file written with
``output.density = false``): the one helper behind :func:`meanfield_pde.density`, the
readers of :mod:`meanfield_pde.runs.runcheck` and the Dataset a run returns.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.errors import NotARunError
from .cf import ZONAL_GRID, density_attrs


GRID_DIMS = {"sphere": ("lat", "lon"), "circle": ("theta",), "sphere_zonal": (ZONAL_GRID,)}
"""The dimensions of a run's grid (of ``density`` after ``time``), by manifold."""


def grid_geometry(ds: xr.Dataset):
    """The geometry whose grid is that of the Dataset (its ``manifold`` attribute, the size of
    ``l`` or ``k`` for lmax, the sizes of lat/lon or theta for the grid).

    Raises
    ------
    ConfigError
        The Dataset has no degree dimension (not a run).
    """
    from ..core.geometry import Circle, Sphere, ZonalSphere
    manifold = str(ds.attrs.get("manifold", "circle" if "k" in ds.dims else "sphere"))
    degree = "k" if manifold == "circle" else "l"
    if degree not in ds.sizes:
        raise NotARunError(f"density: the Dataset has no {degree!r} dimension (not a run of meanfield-pde)")
    lmax = ds.sizes[degree] - 1
    if manifold == "circle":
        return Circle(lmax, ds.sizes.get("theta", 0))
    if manifold == "sphere_zonal":  # S^{d-1}, d the run's attribute dimension
        return ZonalSphere(lmax, int(ds.attrs.get("dimension", 0)), ds.sizes.get(ZONAL_GRID, 0))
    return Sphere(lmax, ds.sizes.get("lat", 0), ds.sizes.get("lon", 0))


def rebuilt_density(ds: xr.Dataset) -> xr.DataArray:
    """The ``density`` variable synthesised from the coefficients (the values a run stores: it
    computes its density by the same synthesis; a token run's after the heat kernel of time
    ``smoothing``), with the run's grid coordinates."""
    geometry = grid_geometry(ds)
    coef = geometry.from_table((ds.coef_real + 1j * ds.coef_imag).values)
    # a token run stores its empirical measure smoothed by the heat kernel (attribute smoothing)
    s = float(ds.attrs.get("smoothing", 0.0)) if "positions" in ds else 0.0
    grids = np.array([geometry.synthesis(geometry.heat(c, s) if s > 0 else c) for c in coef])
    grid = GRID_DIMS.get(geometry.manifold, GRID_DIMS["sphere"])
    # the grid's nodes: geometry.lat, .lon, .theta; on sphere_zonal geometry.t (= cos_polar_angle)
    coords = {d: ds[d] if d in ds else getattr(geometry, "t" if d == ZONAL_GRID else d) for d in grid}
    attrs = density_attrs(geometry.manifold, getattr(geometry, "dimension", None))
    attrs["long_name"] += ", synthesised from the coefficients"
    return xr.DataArray(grids, dims=("time", *grid), coords={"time": ds["time"], **coords}, name="density",
                        attrs=attrs)


def with_density(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its ``density`` variable (rebuilt if the file does not store it)."""
    if "density" in ds or "coef_real" not in ds:
        return ds
    return ds.assign(density=rebuilt_density(ds))
