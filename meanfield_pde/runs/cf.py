"""The CF-1.8 metadata of every file the package writes (:ref:`dataset-contract`).

CF conventions (Eaton et al., *NetCDF Climate and Forecast Metadata
Conventions* 1.8, 2020): global ``Conventions``, ``title``, ``history``,
``source`` (§2.6.2); ``units`` on every quantity (§3.1), ``standard_name``
only where the CF table has one (§3.3: latitude, longitude); ``axis`` on the
coordinates (§4); ``cell_measures`` pointing at the quadrature weights (§7.2).
:func:`cf_encode` adds them to a Dataset just before it is written (run files
in :mod:`meanfield_pde.runs.runfile`, the others in
:func:`meanfield_pde.runs.io.write_netcdf`), so one table serves every kind of
file. tests/test_cf_files.py runs the ``cfchecker`` package on a file of every kind.

The model is non-dimensional (the sphere has radius 1, time is in the units of
the equation): times, energies and masses have ``units = "1"``; a density is
per unit area of the unit sphere (m-2 in CF's terms, radius 1 m; per radian
on the circle) and the weights are those areas (m2; radians), so that
``(density * weights).sum()`` is the mass.
"""

from __future__ import annotations

import datetime
import functools
import os
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import xarray as xr

CONVENTIONS = "CF-1.8"

ZONAL_GRID = "cos_polar_angle"
"""The dimension of a zonal (sphere_zonal) file's grid: t = ⟨x, e⟩ = cos θ, the cosine of the
polar angle θ of a point x of S^{d−1} to the axis e (the auxiliary coordinate ``polar_angle``
along it holds θ in radians)."""

# name -> attributes (added where the Dataset has no value of its own)
COORDINATES = {
    # no axis = "T" nor standard_name = "time": CF reserves them for times with a reference
    # date ("s since ..."); the model's time is a pure number
    "time": dict(units="1", long_name="time t (natural units of the equation)"),
    "tau": dict(units="1", long_name="rescaled time tau of the large-beta limit"),
    "lat": dict(units="degrees_north", standard_name="latitude", axis="Y", long_name="Gauss latitude"),
    "lon": dict(units="degrees_east", standard_name="longitude", axis="X", long_name="longitude"),
    "theta": dict(units="radian", long_name="angle theta on the circle", axis="X"),
    # a zonal file's grid: t = <x, e> = cos(theta) at the Gauss-Jacobi nodes (ZONAL_GRID)
    "cos_polar_angle": dict(units="1", long_name="cosine of the polar angle, <x, e> (Gauss-Jacobi nodes)",
                            comment="x a point of the unit sphere S^{d-1}, e its axis (the last "
                                    "Cartesian axis); the polar angle is polar_angle = arccos of it"),
    "polar_angle": dict(units="radian", long_name="polar angle theta = arccos <x, e> to the axis e"),
    "l": dict(units="1", long_name="spherical-harmonic degree"),
    "m": dict(units="1", long_name="spherical-harmonic order"),
    "k": dict(units="1", long_name="Fourier wavenumber"),
    "xyz": dict(long_name="Cartesian component of a unit vector"),
}
VARIABLES = {
    "coef_real": dict(units="1"), "coef_imag": dict(units="1"),
    "mass": dict(units="1"), "energy": dict(units="1"), "free_energy": dict(units="1"),
    "limit_energy": dict(units="1"), "order_parameter": dict(units="1"),
    "spectral_tail": dict(units="1"), "positions": dict(units="1"),
}


def grid_units(manifold: str) -> tuple[str, str]:
    """(units of a density, units of a quadrature weight) on the manifold: m-2, m2 on S² (CF
    §7.2 wants area measures in m2: the unit sphere is read as radius 1 m, area 4π m2);
    radian-1, radian on S¹ (length 2π; CF has no length measure, so no cell_measures there);
    1, 1 on sphere_zonal (a density of the uniform probability measure of S^{d−1}: no area)."""
    return {"circle": ("radian-1", "radian"), "sphere_zonal": ("1", "1")}.get(manifold, ("m-2", "m2"))


@functools.lru_cache(maxsize=1)
def package_source() -> str:
    """``"meanfield_pde <version> (git <commit>[, modified])"``: the version from the installed
    metadata (:func:`importlib.metadata.version`), the commit where the package is a git checkout."""
    try:
        version = metadata.version("meanfield_pde")
    except metadata.PackageNotFoundError:
        version = "unknown"
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"meanfield_pde {version}"
    return f"meanfield_pde {version} (git {commit}{', modified' if dirty else ''})"


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second (``2026-11-30T21:14:29Z``)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def history_line(argv: list[str] | None = None) -> str:
    """One line of ``history``: ISO date, program and its arguments (``sys.argv`` by default;
    a Python session that is not the command line is named ``python`` with its script)."""
    argv = list(sys.argv if argv is None else argv) or ["python"]
    program = os.path.basename(argv[0]) or "python"
    if program == "__main__.py":  # python -m PACKAGE
        package = os.path.basename(os.path.dirname(argv[0]))
        program = "meanfield-pde" if package == "meanfield_pde" else f"python -m {package}"
    elif program not in ("meanfield-pde", "python"):
        program = f"python {program}"  # a script, or -c (an interactive session: "python")
    line = " ".join([program, *(shlex.quote(a) for a in argv[1:])])
    return f"{now_iso()} {''.join(c if c.isprintable() else ' ' for c in line)}"


def append_history(previous: str | None, line: str | None = None) -> str:
    """``previous`` (the file's history) with one more line (:func:`history_line` by default)."""
    line = history_line() if line is None else line
    return f"{previous}\n{line}" if previous else line


def cf_encode(ds: xr.Dataset, title: str | None = None) -> xr.Dataset:
    """A copy of ``ds`` with the CF-1.8 attributes and encodings (module docstring).

    Global: ``Conventions``, ``title`` (the Dataset's own, else ``title``, else one naming the
    package), ``history`` (the Dataset's, plus one line for this command), ``source``
    (:func:`package_source`), ``date_created``. Variables: the tables above (an attribute
    already set is kept); coordinates get no ``_FillValue``; a variable without a long_name is named by its name, a
    numeric coordinate or variable without units (a swept parameter, a count, a distance of
    coefficients) gets "1" (checksums excepted); strings are stored as
    fixed-width char arrays (UTF-8). 64-bit integers are stored as int32 where they fit (all but a
    swept seed beyond 2**31, kept in the netCDF-4 files that hold one) and booleans as int8.
    """
    out = ds.copy()
    # CF §5: a coordinate variable is numeric; text labels along a dimension (run, scheme,
    # direction) are stored as the auxiliary coordinate <dim>_label
    # (reading: ``ds.set_xindex("scheme_label")`` gives ``ds.sel(scheme_label=...)`` back)
    labels = [d for d in out.dims if d in out.coords and out[d].dtype.kind in "OUS"]
    if labels:
        out = out.rename_vars({d: f"{d}_label" for d in labels})
    for name, attrs in {**COORDINATES, **VARIABLES}.items():
        if name in out.variables:
            out[name].attrs = {**attrs, **out[name].attrs}
    for name, var in out.variables.items():  # attributes first: assigning a variable copies them all
        if "long_name" not in var.attrs and "standard_name" not in var.attrs:
            var.attrs["long_name"] = name.replace("_", " ")
        # the package's coordinates without a table entry are parameters of the model (beta,
        # nu, order, seed, ...): pure numbers
        if name in out.dims and var.dtype.kind in "iuf" and "units" not in var.attrs:
            var.attrs["units"] = "1"
        # the documentation promises units on every variable (docs/user-guide/outputs.md): a number without its own (a count, an id, a
        # distance of coefficients, a fitted rate) is a pure number of the non-dimensional model,
        # as its times, masses and coefficients are; a dimensional one (a density, wall time in
        # s, an angle in radian) is given its units where it is made. Checksums are bit patterns.
        elif var.dtype.kind in "iuf" and "units" not in var.attrs and not name.endswith("_checksum"):
            var.attrs["units"] = "1"
    for name, var in list(out.variables.items()):
        if var.dtype.kind == "b":
            out[name] = var.astype(np.int8)
        elif var.dtype.kind in "iu" and var.dtype.itemsize > 4 \
                and not (var.size and np.abs(var.values).max() >= 2**31):
            # int64 only where a value needs it (a swept seed of 3e9): netCDF-4 files hold it
            out[name] = var.astype(np.int32)
    for name, var in out.variables.items():  # encodings last: assigning a variable drops them
        if var.dtype.kind in "OUS":
            # CF-1.8 (and netCDF-3) know no variable-length strings: fixed-width char arrays
            var.encoding.update(dtype="S1", char_dim_name=f"strlen_{name}")
        if name in out.coords or name == "weights":
            var.encoding["_FillValue"] = None
    attrs = dict(out.attrs)
    attrs["Conventions"] = CONVENTIONS
    attrs.setdefault("title", title or "meanfield-pde output")
    attrs["history"] = append_history(attrs.get("history"))
    attrs["source"] = package_source()
    attrs.setdefault("date_created", now_iso())
    out.attrs = attrs
    return out
