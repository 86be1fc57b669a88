"""Snapshots → xarray Dataset (:ref:`dataset-contract`) → netCDF, written atomically."""

from __future__ import annotations

import functools
import os
import platform
from importlib import metadata
from pathlib import Path

import numpy as np
import xarray as xr

from ..numerics.quantities import QUANTITIES
from ..core.errors import ConfigError
from ..core.geometry import Geometry
from .cf import COORDINATES, ZONAL_GRID, cf_encode, density_attrs, weight_attrs
from .checksums import (CHECKSUMS, NETCDF4_CHECKSUMS, TEXT_CHECKSUM, seal_attributes, seal_text,
                        with_fletcher32, without_fill_values)
from .outputs import check_output, write_file

COEF_CONVENTION = ("shtns orthonormal spherical harmonics with Condon-Shortley phase, "
                   "m >= 0 of a real field: f = sum_l [f_l0 Y_l0 + 2 Re sum_{m>0} f_lm Y_lm]; "
                   "NaN where m > l")
CIRCLE_CONVENTION = ("orthonormal Fourier modes e_k = exp(i k theta)/sqrt(2 pi), k >= 0 of a real "
                     "field: f = f_0 e_0 + 2 Re sum_{k>0} f_k e_k")

ZONAL_CONVENTION = ("Gegenbauer polynomials C_l^({a:g})(t) of t = <x, e> on S^{{d-1}}, d = {d}, "
                    "orthonormal in the uniform probability measure, p_l(1) > 0: f = sum_l f_l p_l(t)")


def software_versions() -> dict[str, str]:
    """Versions of this package, of the libraries that shape its numbers and of the platform.

    With the case (its seeds included) these determine a run's numbers
    bit for bit on one machine (tests/runs/test_reliability.py checks reruns). Looked up once
    per process (the installed metadata is parsed: ~15 ms, 50 right-hand sides at L = 63,
    paid by every run otherwise); a new dict each call.
    """
    return dict(_software_versions())


@functools.lru_cache(maxsize=1)
def _software_versions() -> dict[str, str]:
    out = {}
    for name in ("meanfield_pde", "shtns", "numpy", "scipy", "xarray", "netCDF4", "pot"):
        try:
            out[f"version_{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[f"version_{name}"] = "unknown"
    import netCDF4
    out["version_netcdf_c"] = netCDF4.__netcdf4libversion__
    out["version_python"] = platform.python_version()
    out["platform"] = platform.platform()
    return out


def _layout(geometry: Geometry, coefs: np.ndarray) -> tuple:
    """Variables density/coef_* and coordinates of one manifold (:ref:`dataset-contract`)."""
    L = geometry.lmax
    coef_dims, table = ("time", *geometry.table_dims), geometry.to_table(np.asarray(coefs))
    if geometry.manifold == "sphere_zonal":
        d = geometry.dimension
        # the grid coordinate is t = <x, e> = cos(theta), named for what it is (not a time)
        coords = {ZONAL_GRID: (ZONAL_GRID, geometry.t, dict(COORDINATES[ZONAL_GRID])),
                  "polar_angle": (ZONAL_GRID, np.arccos(geometry.t), dict(COORDINATES["polar_angle"])),
                  "l": ("l", np.arange(L + 1), dict(long_name="Gegenbauer degree"))}
        grid_dims = ("time", ZONAL_GRID)
        weights = geometry.weights  # the Gauss–Jacobi rule of the probability measure (sum 1)
        convention = ZONAL_CONVENTION.format(d=d, a=(d - 2) / 2)
    elif geometry.manifold == "circle":
        coords = {"theta": ("theta", geometry.theta, dict(units="radian", long_name="angle θ")),
                  "k": ("k", np.arange(L + 1), dict(long_name="Fourier wavenumber"))}
        grid_dims = ("time", "theta")
        weights = np.full(geometry.npoints, 2.0 * np.pi / geometry.npoints)
        convention = CIRCLE_CONVENTION
    else:
        coords = {"lat": ("lat", geometry.lat, dict(units="degrees_north", long_name="Gauss latitude")),
                  "lon": ("lon", geometry.lon, dict(units="degrees_east", long_name="longitude")),
                  "l": ("l", np.arange(L + 1), dict(long_name="spherical-harmonic degree")),
                  "m": ("m", np.arange(L + 1), dict(long_name="spherical-harmonic order"))}
        grid_dims = ("time", "lat", "lon")
        weights = geometry.weights
        convention = COEF_CONVENTION
    variables = {
        # the quadrature of the grid: sum(density * weights) is the mass (exact for degree <= 2L)
        # (attributes kept short: a run file's header over 8 KiB makes netCDF-C pad the file)
        "weights": (grid_dims[1:], weights, weight_attrs(geometry.manifold)),
        "coef_real": (coef_dims, table.real, dict(long_name="real part of the coefficients",
                                                  convention=convention, **geometry.conventions)),
        "coef_imag": (coef_dims, table.imag, dict(long_name="imaginary part of the coefficients",
                                                  convention=convention, **geometry.conventions)),
    }
    return variables, coords, grid_dims


def snapshots_to_dataset(geometry: Geometry, times, coefs, densities, diagnostics,
                         attrs: dict, *, energy_definition: str | None = None) -> xr.Dataset:
    """Build the Dataset of a run (:ref:`dataset-contract`).

    Parameters
    ----------
    geometry : Sphere or Circle
    times : sequence of float, length nt
    coefs : sequence of ndarray (ncoef,) complex
    densities : sequence of grid arrays ((nlat, nphi) on S², (N,) on S¹)
    diagnostics : sequence of dict name -> float
        The recorded quantities (:func:`meanfield_pde.numerics.quantities.evaluate`); each
        becomes a variable (time,) with its registered attributes
        (:meth:`~meanfield_pde.numerics.quantities.Quantity.attributes`).
    attrs : dict
        Global attributes (model, beta, nu, status, case, ...).
    energy_definition : str, optional
        What the run's energy is (``model.energy_definition``), for the attributes of the
        quantities defined through it.
    """
    variables, coords, grid_dims = _layout(geometry, coefs)
    density = density_attrs(geometry.manifold, getattr(geometry, "dimension", None))
    variables["density"] = (grid_dims, np.asarray(densities, dtype=np.float64), density)
    coords["time"] = ("time", np.asarray(times, dtype=np.float64), dict(COORDINATES["time"]))
    ds = xr.Dataset(variables, coords=coords)
    for name, quantity in QUANTITIES.items():
        if diagnostics and name in diagnostics[0]:
            ds[name] = ("time", np.array([d[name] for d in diagnostics], dtype=np.float64),
                        quantity.attributes(density["units"], energy_definition))
    ds.attrs.update({k: (int(v) if isinstance(v, bool) else v) for k, v in attrs.items()})
    return ds


def snapshot_values(geometry: Geometry, coef: np.ndarray, density: np.ndarray,
                    diagnostics: dict) -> dict[str, np.ndarray]:
    """The values one snapshot adds to each time-dependent variable of
    :func:`snapshots_to_dataset` (coef_real, coef_imag, density, the diagnostics), without
    building a Dataset: what a run file appends after its first record
    (:meth:`meanfield_pde.runs.runfile.RunFile.append_values`). Building a one-time Dataset
    costs ~10 ms, 40 right-hand sides at L = 63 (tests/runs/test_whole_run.py checks that both
    give the same values).
    """
    table = geometry.to_table(np.asarray(coef))
    values = {"coef_real": table.real, "coef_imag": table.imag,
              "density": np.asarray(density, dtype=np.float64)}
    values.update({name: np.float64(diagnostics[name]) for name in QUANTITIES
                   if name in diagnostics})
    return values


def check_output_path(path: str | os.PathLike, *, overwrite: bool = True, inputs=()) -> Path:
    """Refuse an output path that cannot or must not receive a netCDF file, before any work.

    Raises
    ------
    ConfigError
        If the name does not end in .nc or is over 200 bytes long, or as
        :func:`meanfield_pde.runs.outputs.check_output` (exists without
        ``overwrite``, is an input, a folder or special file, unwritable folder).
    """
    path = Path(path)
    if path.suffix != ".nc":
        raise ConfigError(f"output {str(path)!r}: the file name must end in .nc")
    if len(path.name.encode()) > 200:  # leaves room for the temporary, partial and lock names
        raise ConfigError(f"output {str(path)[:60]!r}...: the file name is {len(path.name.encode())} "
                          "bytes long; must be at most 200")
    return check_output(path, overwrite=overwrite, inputs=inputs)


def write_netcdf(ds: xr.Dataset, path: str | os.PathLike, *, overwrite: bool = False, inputs=(),
                 title: str | None = None) -> Path:
    """Write with the CF-1.8 metadata (:func:`meanfield_pde.runs.cf.cf_encode`, ``title`` where the
    Dataset has none) and the default netCDF4 engine through :func:`meanfield_pde.runs.outputs.write_file`
    (claimed, written to a temporary file, renamed: an existing file is replaced only by a
    complete new one, and only with ``overwrite``). Every chunked variable carries HDF5's
    Fletcher-32 checksum, numbers no ``_FillValue``, the text variables their ``text_checksum``
    and the global attributes their ``attribute_checksum`` and its mark ``checksums``
    (:mod:`meanfield_pde.runs.checksums`).

    Raises
    ------
    ConfigError
        From :func:`check_output_path`, before anything is written.
    meanfield_pde.runs.outputs.OutputFull
        The disk, quota or file-size limit cannot take the file.
    """
    path = check_output_path(path, overwrite=overwrite, inputs=inputs)
    encoded = with_fletcher32(cf_encode(ds, title))  # netCDF-4: HDF5 checks every chunk on read
    encoded = without_fill_values(encoded)  # a lost chunk reads as the default fill, not NaN

    def write(tmp):
        encoded.to_netcdf(tmp)
        import netCDF4
        with netCDF4.Dataset(tmp, "a") as nc:  # from the text and the attributes as stored
            texts = seal_text(nc)
            # the mark: a missing attribute_checksum (or text_checksum) is then damage
            nc.setncattr(CHECKSUMS, NETCDF4_CHECKSUMS + (f" {TEXT_CHECKSUM}" if texts else ""))
            seal_attributes(nc)

    return write_file(path, write, overwrite=overwrite, inputs=inputs)
