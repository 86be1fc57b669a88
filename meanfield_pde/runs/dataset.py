"""Reading a run's Dataset (:ref:`outputs`): its complex coefficients, its token
positions, its grid density (stored, or rebuilt from the coefficients) and one snapshot.

Every function takes an open Dataset or the path of a run file (opened with
:func:`meanfield_pde.runs.runcheck.open_checked`, so a damaged file is refused with one line)
and checks the coefficients' conventions (:func:`meanfield_pde.runs.runcheck.check_conventions`).
"""

from __future__ import annotations

import os

import numpy as np
import xarray as xr

from ..core.checks import check_path
from ..core.errors import ConfigError, NotARunError
from .grid_density import rebuilt_density, with_density  # noqa: F401  (with_density: readers)
from .runcheck import check_conventions, open_checked


def as_dataset(source: xr.Dataset | str | os.PathLike, where: str = "run") -> xr.Dataset:
    """``source`` itself if a Dataset, else the checked run file it names, loaded into memory.

    Raises
    ------
    ConfigError
        A missing or damaged file (:func:`~meanfield_pde.runs.runcheck.open_checked`); ``source`` neither a Dataset nor a
        path (a str or os.PathLike).
    """
    if isinstance(source, xr.Dataset):
        return source
    check_path(f"{where.rstrip(':')}: source", source, "an xarray.Dataset or the path of a run file")
    ds = open_checked(source, f"{where} {str(source)!r}")
    try:
        return ds.load()
    finally:
        ds.close()


def coefficients(source: xr.Dataset | str | os.PathLike) -> xr.DataArray:
    """The complex coefficients of a run: ``coef_real + 1j coef_imag``.

    Returns
    -------
    xarray.DataArray, complex128
        Dims (time, l, m) on the sphere, NaN where m > l (shtns orthonormal spherical
        harmonics with the Condon–Shortley phase, m >= 0 of a real field:
        f = Σ_l [f_l0 Y_l0 + 2 Re Σ_{m>0} f_lm Y_lm]); (time, k) on the circle
        (e_k = e^{ikθ}/√(2π), f = f_0 e_0 + 2 Re Σ_{k>0} f_k e_k). :ref:`dataset-contract`.

    Raises
    ------
    ConfigError
        No coefficients in the Dataset, or coefficients stored with other conventions.
    """
    ds = as_dataset(source, "coefficients:")
    if "coef_real" not in ds or "coef_imag" not in ds:
        raise NotARunError("coefficients: the Dataset has no coef_real/coef_imag (not a run of meanfield-pde)")
    check_conventions(ds, "coefficients")
    c = ds.coef_real + 1j * ds.coef_imag
    return c.assign_attrs(long_name="complex coefficients", **{
        k: v for k, v in ds.coef_real.attrs.items() if k.startswith("coefficient") or k in ("convention", "real_field_symmetry")})


def positions(source: xr.Dataset | str | os.PathLike) -> xr.DataArray:
    """The token positions of a particle run, unit vectors.

    Returns
    -------
    xarray.DataArray
        Dims (time, particle, xyz) with ``xyz`` labelled "x", "y", "z" ("x", "y" on the circle).

    Raises
    ------
    ConfigError
        Not a particle run (no ``positions`` variable).
    """
    ds = as_dataset(source, "positions:")
    if "positions" not in ds:
        raise NotARunError("positions: the Dataset has no positions (not a particle run; "
                          "a PDE run stores coefficients: use coefficients)")
    pos = ds["positions"]
    return pos.assign_coords(xyz=("xyz", ["x", "y", "z"][:pos.sizes["xyz"]]))


def density(source: xr.Dataset | str | os.PathLike) -> xr.DataArray:
    """The density on the grid: the stored ``density``, or (a file written with
    ``output.density = false``) the synthesis of the coefficients on the run's grid.

    Returns
    -------
    xarray.DataArray
        Dims (time, lat, lon) on the sphere, per steradian (uniform = 1/4π); (time, theta) on
        the circle, per radian (1/2π); (time, cos_polar_angle) on sphere_zonal, w.r.t. the
        uniform probability measure (1). Units in ``attrs`` (:mod:`meanfield_pde.runs.cf`).
    """
    ds = as_dataset(source, "density:")
    if "density" in ds:
        return ds["density"]
    return rebuilt_density(ds)


def snapshot_index(ds: xr.Dataset, time: float | None, where: str, exact: bool = False) -> int:
    """The index of the snapshot at ``time`` (the last one for None): the nearest one, or with
    ``exact`` the one equal to it to 1e-9 relative.

    Raises
    ------
    ConfigError
        ``time`` outside the stored times, or (``exact``) no snapshot at it; the message lists
        the stored range.
    """
    t = np.asarray(ds["time"].values, dtype=float)
    if time is None:
        return t.size - 1
    time = float(time)
    span = f"the file holds {t.size} snapshots from t = {t[0]:.6g} to {t[-1]:.6g}"
    if not np.isfinite(time) or time < t[0] - 1e-9 * max(1.0, abs(t[0])) \
            or time > t[-1] + 1e-9 * max(1.0, abs(t[-1])):
        raise ConfigError(f"{where}: time = {time:g} is outside the stored snapshots; {span}")
    i = int(np.argmin(np.abs(t - time)))
    if exact and abs(t[i] - time) > 1e-9 * max(1.0, abs(time)):
        raise ConfigError(f"{where}: no snapshot at time = {time:g} (nearest t = {t[i]:.6g}); {span}")
    return i


def initial_coefficients(config, source: xr.Dataset | str | os.PathLike, time: float | None = None,
                         exact: bool = False) -> np.ndarray:
    """The coefficients (ncoef,) of a stored snapshot of a PDE or limit run, to start ``config``
    from (``meanfield_pde.run(config, initial=source, time=...)``).

    Parameters
    ----------
    config : Config
        The case to run: its manifold and domain.lmax must be the stored run's.
    source : Dataset or path of a run file
    time : float, optional
        Stored time of the snapshot (in the file's ``time``; nearest, or with ``exact`` equal to
        1e-9 relative); default the last snapshot.

    Raises
    ------
    ConfigError
        A damaged file, coefficients of other conventions, a token run (its coefficients are
        an empirical measure, not a density), another manifold or lmax than the case's, or
        ``time`` outside the stored times (or not stored, with ``exact``).
    """
    from ..core.geometry import make_geometry
    where = f"initial {str(source)!r}" if not isinstance(source, xr.Dataset) else "initial (Dataset)"
    ds = as_dataset(source, "initial")
    if "positions" in ds:
        raise ConfigError(f"{where}: a token run; its coefficients are those of an empirical measure, "
                          "not a density a PDE run can start from")
    table = coefficients(ds)
    manifold = str(ds.attrs.get("manifold", "circle" if "k" in table.dims else "sphere"))
    lmax = table.sizes["k" if "k" in table.dims else "l"] - 1
    if manifold != config.domain.manifold or lmax != config.domain.lmax:
        raise ConfigError(f"{where}: stored on the {manifold} with lmax = {lmax}, the case has "
                          f"domain.manifold = {config.domain.manifold!r}, domain.lmax = "
                          f"{config.domain.lmax}; set them to the stored run's")
    i = snapshot_index(ds, time, where, exact)
    geometry = make_geometry(manifold, lmax, 1)
    return geometry.from_table(table.values[i])
