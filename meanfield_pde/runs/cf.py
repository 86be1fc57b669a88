"""The CF-1.8 metadata of every file the package writes (:ref:`dataset-contract`).

CF conventions (Eaton et al., *NetCDF Climate and Forecast Metadata
Conventions* 1.8, 2020): global ``Conventions``, ``title``, ``history``,
``source`` (§2.6.2); ``units`` on every quantity (§3.1), ``standard_name``
only where the CF table has one (§3.3: latitude, longitude); ``axis`` on the
coordinates (§4). :func:`cf_encode` adds them to a Dataset just before it is
written (run files in :mod:`meanfield_pde.runs.runfile`, the others in
:func:`meanfield_pde.runs.io.write_netcdf`), so one table serves every kind of
file. tests/runs/test_cf_files.py runs the ``cfchecker`` package on a file of every kind.

Units: this module owns them (``COORDINATES``, ``VARIABLES``,
:func:`density_attrs`, :func:`weight_attrs`, :func:`grid_units`), and reads those of the
recorded quantities from their registry (:mod:`meanfield_pde.numerics.quantities`). The model is
non-dimensional: the sphere has radius 1 (no metre anywhere) and time is in the
units of the equation. Times, energies, masses and coefficients are pure numbers,
``units = "1"`` (CF's dimensionless unit; the ``long_name`` of time says
"dimensionless time t", so xarray's label "dimensionless time t [1]" reads as meant).
Areas of the unit sphere S² are solid angles, so a density on S² is per steradian
(``sr-1``, w.r.t. the unnormalised area measure σ, |S²| = 4π sr, uniform = 1/4π) and its
quadrature weights are the nodes' solid angles (``sr``, sum 4π); on the circle
``radian-1`` and ``radian`` (arc length, sum 2π); a zonal density on S^{d−1} is w.r.t. the
uniform *probability* measure (``1``, uniform = 1; weights ``1``, sum 1). In every case
``(density * weights).sum()`` over the grid is the mass. No ``cell_measures``: CF §7.2
wants an area measure in m2, which would make the unit sphere a sphere of 1 m.
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

from ..numerics.quantities import DENSITY_UNITS, QUANTITIES

CONVENTIONS = "CF-1.8"

ZONAL_GRID = "cos_polar_angle"
"""The dimension of a zonal (sphere_zonal) file's grid: t = ⟨x, e⟩ = cos θ, the cosine of the
polar angle θ of a point x of S^{d−1} to the axis e (the auxiliary coordinate ``polar_angle``
along it holds θ in radians)."""

# name -> attributes (added where the Dataset has no value of its own)
COORDINATES = {
    # no axis = "T" nor standard_name = "time": CF reserves them for times with a reference
    # date ("s since ..."); the model's time is a pure number
    "time": dict(units="1", long_name="dimensionless time t"),
    "tau": dict(units="1", long_name="dimensionless rescaled time tau of the large-beta limit"),
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
VARIABLES = {"coef_real": dict(units="1"), "coef_imag": dict(units="1"), "positions": dict(units="1")}
"""The variables' units beside those of the recorded quantities (:func:`quantity_units`)."""


def quantity_units() -> dict[str, dict[str, str]]:
    """name -> {"units": ...} of each recorded quantity whose units do not depend on the
    manifold (``meanfield_pde.numerics.quantities.QUANTITIES``; ``min_density`` gets those
    of the density where its record is made, :func:`meanfield_pde.runs.io.snapshots_to_dataset`)."""
    return {name: dict(units=q.units) for name, q in QUANTITIES.items() if q.units != DENSITY_UNITS}


def grid_units(manifold: str) -> tuple[str, str]:
    """(units of a density, units of a quadrature weight) on the manifold (module docstring):
    ``sr-1``, ``sr`` on S² (solid angle: the area of the unit sphere, 4π sr); ``radian-1``,
    ``radian`` on S¹ (arc length, 2π); ``1``, ``1`` on sphere_zonal (the uniform probability
    measure of S^{d−1}, total 1). Any other manifold name is read as the sphere."""
    return {"circle": ("radian-1", "radian"), "sphere_zonal": ("1", "1")}.get(manifold, ("sr-1", "sr"))


_DENSITY_NAMES = {
    "sphere": "density f w.r.t. the area (solid angle) of the unit sphere (uniform = 1/4π)",
    "circle": "density f w.r.t. arc length on the unit circle (uniform = 1/2π)",
    "sphere_zonal": "density f of <x, e> on S^{d_minus_1} w.r.t. the uniform probability measure (uniform = 1)",
}
_WEIGHT_NAMES = {
    "sphere": "quadrature weight: solid angle of the node (sum 4π)",
    "circle": "quadrature weight: arc length of the node (sum 2π)",
    "sphere_zonal": "quadrature weight of the uniform probability measure (sum 1)",
}
MASS_COMMENT = "sum(density * weights) over the grid is the mass"


def density_attrs(manifold: str, dimension: int | None = None) -> dict[str, str]:
    """``long_name``, ``units`` and ``comment`` of a run's ``density`` on the manifold
    ("sphere", "circle" or "sphere_zonal", which needs ``dimension`` d for its S^{d−1}):
    the measure it is a density of and its units (:func:`grid_units`, module docstring)."""
    key = manifold if manifold in _DENSITY_NAMES else "sphere"
    name = _DENSITY_NAMES[key].replace("d_minus_1", str(int(dimension or 0) - 1))
    return dict(long_name=name, units=grid_units(key)[0], comment=MASS_COMMENT)


def weight_attrs(manifold: str) -> dict[str, str]:
    """``long_name`` and ``units`` of a run's quadrature ``weights`` on the manifold."""
    key = manifold if manifold in _WEIGHT_NAMES else "sphere"
    return dict(long_name=_WEIGHT_NAMES[key], units=grid_units(key)[1])


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


def _coordinates_text(ds: xr.Dataset, name: str, labels: list) -> str:
    """The ``coordinates`` attribute of variable ``name`` of a Dataset with text labels along
    the dimensions ``labels`` (:func:`cf_encode`): what xarray would list (the non-dimension
    coordinates along its dimensions) and the labels along its dimensions.

    A text label along a dimension (``direction`` of a sweep, ``scheme`` of a transformer study,
    ``run`` of a limit study) is stored under the dimension's own name as a char array
    (dims: the dimension and ``strlen_<name>``), so that ``xr.open_dataset(f).sel(direction="up")``
    works on the file as on the Dataset written; CF §5 wants coordinate variables numeric, and
    a 2-d char array is not one but a label (CF §6.1), an auxiliary coordinate which every
    variable along the dimension names in its ``coordinates`` attribute."""
    dims = set(ds.variables[name].dims)
    aux = [c for c in ds.coords if c not in ds.dims and c != name and set(ds[c].dims) <= dims]
    return " ".join(sorted(aux) + [d for d in labels if d in dims])


def cf_encode(ds: xr.Dataset, title: str | None = None) -> xr.Dataset:
    """A copy of ``ds`` with the CF-1.8 attributes and encodings (module docstring).

    Global: ``Conventions``, ``title`` (the Dataset's own, else ``title``, else one naming the
    package), ``history`` (the Dataset's, plus one line for this command), ``source``
    (:func:`package_source`), ``date_created``. Variables: the tables above (an attribute
    already set is kept); a text coordinate along a dimension (``direction``, ``scheme``, ``run``)
    is a label (``_coordinates_text``) that reads back as the dimension's index;
    coordinates get no ``_FillValue``; a variable without a long_name is named by its name, a
    numeric coordinate or variable without units (a swept parameter, a count, a distance of
    coefficients) gets "1" (checksums excepted); strings are stored as
    fixed-width char arrays (UTF-8). 64-bit integers are stored as int32 where they fit (all but a
    swept seed beyond 2**31, kept in the netCDF-4 files that hold one) and booleans as int8.
    """
    out = ds.copy()
    labels = [d for d in out.dims if d in out.coords and out[d].dtype.kind in "OUS"]
    for name, attrs in {**COORDINATES, **VARIABLES, **quantity_units()}.items():
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
        if name not in labels and any(d in var.dims for d in labels):
            var.attrs.pop("coordinates", None)
            var.encoding["coordinates"] = _coordinates_text(out, name, labels)
    attrs = dict(out.attrs)
    attrs["Conventions"] = CONVENTIONS
    attrs.setdefault("title", title or "meanfield-pde output")
    attrs["history"] = append_history(attrs.get("history"))
    attrs["source"] = package_source()
    attrs.setdefault("date_created", now_iso())
    out.attrs = attrs
    return out
