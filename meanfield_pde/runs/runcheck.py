"""Checks on a file read back (``run --resume``, ``compare``, ``plot``) before anything uses it.

A damaged run file must be refused with one line, never read as if it were
good: a cut file can read its missing last record as zeros (t = 0), a file
edited by hand can claim another case than its data. :func:`open_checked`
checks, in this order, and raises a ConfigError naming the first fault:

* the file is a regular, readable netCDF file (netCDF-3, or netCDF-4 where
  the purpose allows it: ``--resume`` appends only to the netCDF-3 files
  the package writes, :mod:`meanfield_pde.runs.runfile`);
* a netCDF-3 file is as long as its header says (records counted × record
  size; scipy's reader maps the file and fails on a short one);
* its global attributes and data match their checksums (:mod:`meanfield_pde.runs.checksums`):
  ``attribute_checksum``, a run file's ``record_checksum`` per snapshot and ``fixed_checksum``,
  a netCDF-4 file's Fletcher-32 chunks (every variable is read once; an element at netCDF's
  default fill value is a chunk lost through HDF5's index); files without checksums pass;
* ``time`` exists, is finite and strictly increasing;
* the coefficients' conventions (attributes ``coefficient_normalization``,
  ``coefficient_phase``, ... of coef_real/coef_imag, :ref:`dataset-contract`)
  are those the code reads (:func:`check_conventions`);
* the data are finite (``density``, ``positions``, the coefficients where they are
  defined: the S² table is NaN exactly where m > l by convention) and each recorded
  quantity within its ``valid`` range (:mod:`meanfield_pde.numerics.quantities`: e.g. the
  order parameter, a norm, >= 0; the energies, which may overflow, are not checked);
* a run file (one with a ``case`` attribute) has the variables of a run and
  its case agrees with the data: manifold, lmax (size of l/k), the model
  (kind, β, ν attributes), no time beyond t_end, numeric session counters,
  and for a particle run n (size of ``particle``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.checks import file_problem
from ..core.errors import ConfigError, NotARunError
from ..numerics.quantities import FINITE, QUANTITIES, Range
from .outputs import HDF5_MAGIC  # defined with the claims, which need it too

NETCDF3_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
RUN_VARIABLES = ("coef_real", "coef_imag")  # and density, unless written with output.density = false
RUN_ATTRIBUTES = {"case", "status", "model"}  # a run file has all three; a Dataset made in code
# and written (e.g. for plot) at least its model


def _check_length(path: Path, where: str) -> None:
    """A netCDF-3 file cut short (fewer bytes than header + records) is refused."""
    from scipy.io import netcdf_file
    try:
        with netcdf_file(path, "r", mmap=True, maskandscale=False) as f:
            if f.variables:
                pass  # reading the header maps every variable: a short file fails here
    # KeyError: scipy's reader meets an unknown type code in a corrupt header
    except (ValueError, TypeError, OSError, IndexError, KeyError, MemoryError):
        raise ConfigError(f"{where}: the file is damaged: its {path.stat().st_size} bytes are fewer "
                          "than its header describes (cut short, e.g. by a full disk or an "
                          "interrupted copy) or its header is corrupt") from None


BLOCK_BYTES = 2**20  # what :func:`time_blocks` reads at a time


def time_blocks(var: xr.DataArray, nbytes: int = BLOCK_BYTES):
    """``var``'s values in blocks of whole snapshots along ``time`` (at most ``nbytes`` a block,
    at least one snapshot), each with the index of its first snapshot; without ``time``, one
    block. A variable of a file opened lazily is read a block at a time and not kept:
    ``var.values`` would load it whole and keep it as long as the Dataset is open, so that
    memory would grow with the number of snapshots."""
    if "time" not in var.dims:
        yield 0, np.asarray(var.values)
        return
    count = var.sizes["time"]
    step = max(1, nbytes // max(1, var.size // max(1, count) * var.dtype.itemsize))
    for start in range(0, count, step):
        yield start, np.asarray(var.isel(time=slice(start, start + step)).values)


def _check_values(name: str, var: xr.DataArray, where: str, valid: Range = FINITE) -> None:
    """Refuse a variable with a value a sound file cannot hold: not finite, or outside ``valid``
    (a recorded quantity's range, :class:`meanfield_pde.numerics.quantities.Range`)."""
    if not np.issubdtype(var.dtype, np.number):
        return
    lower = None
    if {"l", "m"} <= set(var.dims):  # the S² coefficient table: NaN where m > l by convention
        var = var.transpose(..., "l", "m")
        lower = np.arange(var.sizes["m"])[None, :] <= np.arange(var.sizes["l"])[:, None]
    axis = var.dims.index("time") if "time" in var.dims else None
    for start, values in time_blocks(var):
        values = values if lower is None else values[..., lower]
        bad = valid.bad(values)
        if bad.any():
            where_t = np.argwhere(bad)[0]
            what = ("non-finite values" if not np.isfinite(values[tuple(where_t)])
                    else f"values outside {valid}")
            if axis is not None:
                where_t[axis] += start
            raise ConfigError(f"{where}: variable {name!r} holds {what} (first at index "
                              f"{tuple(int(i) for i in where_t)}); the file is damaged")


def check_dataset(ds: xr.Dataset, where: str, strict: bool = True) -> None:
    """The content checks of :func:`open_checked` on an open Dataset (module docstring);
    ``strict``: an unparsable stored case is a fault (else the attributes stand for it).

    Raises
    ------
    ConfigError
        Naming the first fault found.
    """
    if "time" not in ds.variables:
        if ds.attrs.get("kind") == "sweep" or {"grid", "task", "points"} <= set(ds.attrs):
            raise NotARunError(f"{where}: not a run of meanfield-pde but a sweep's combined file "
                               "(one final value per point; `plot` draws it); each point's run is "
                               "its file in the sweep's points/ folder (variable 'path')")
        if {"distance", "expected_slope"} <= set(ds.variables):
            raise NotARunError(f"{where}: not a run of meanfield-pde but a limit study (`limits` "
                               "writes its figure)")
        missing = "no 'time' variable" + ("" if "case" in ds.attrs else " and no 'case' attribute")
        raise NotARunError(f"{where}: not a run of meanfield-pde (not a run file: {missing})")
    t = np.asarray(ds["time"].values, dtype=float)
    if t.size == 0:
        raise ConfigError(f"{where}: no snapshot (empty time axis)")
    if not np.all(np.isfinite(t)):
        raise ConfigError(f"{where}: 'time' holds non-finite values ({t[~np.isfinite(t)][0]}); "
                          "the file is damaged")
    if t.size > 1 and not np.all(np.diff(t) > 0):
        i = int(np.argmin(np.diff(t) > 0))
        raise ConfigError(f"{where}: 'time' is not strictly increasing (t[{i}] = {t[i]:.6g}, "
                          f"t[{i + 1}] = {t[i + 1]:.6g}); the file is damaged")
    if "study" in ds.attrs:  # run.kind = "transformer": a study's tables, not a run (not damaged)
        raise NotARunError(f"{where}: not a run of meanfield-pde but a transformer study (study = "
                           f"{str(ds.attrs['study'])[:40]!r}); `run` writes its figure")
    if not RUN_ATTRIBUTES & set(ds.attrs):  # a comparison, or another program's file with a time
        raise NotARunError(f"{where}: " + ("not a run of meanfield-pde but a comparison of two runs "
                                           "(`compare` writes its figure)" if "case_a" in ds.attrs
                                           else NOT_A_RUN_FILE))
    check_conventions(ds, where)
    if "case" in ds.attrs:
        _check_case(ds, where, strict)
    for name in (*RUN_VARIABLES, "density", "positions"):
        if name in ds.variables:
            _check_values(name, ds[name], where)
    # the recorded quantities within their ranges (a NaN mass resumed and plotted silently);
    # not the energies (valid None), which may overflow legitimately at β near 700
    for name, quantity in QUANTITIES.items():
        if name in ds.variables and quantity.valid is not None:
            _check_values(name, ds[name], where, quantity.valid)


def check_conventions(ds: xr.Dataset, where: str) -> None:
    """Refuse coefficients stored with other conventions than the code's (:ref:`dataset-contract`).

    The expected values are the geometry's (:attr:`Sphere.conventions` for a table with
    dims (l, m), :attr:`ZonalSphere.conventions` for a sphere_zonal file's (l,),
    :attr:`Circle.conventions` for (k,)), compared as text.

    A file without an attribute (written before the conventions were stored) is read as
    the code reads coefficients: the package has written them with these conventions since
    its first version (shtns ``sht_orthonormal`` with the Condon–Shortley phase; e^{ikθ}/√(2π);
    the m >= 0 table; the prose attribute ``convention`` says the same), so an absent
    attribute stands for the same convention.

    Raises
    ------
    ConfigError
        Naming the variable, the attribute, the value found and the one expected.
    """
    from ..core.geometry import Circle, Sphere, ZonalSphere
    for name in ("coef_real", "coef_imag"):
        if name not in ds.variables:
            continue
        var = ds[name]
        expected = (Sphere.conventions if "m" in var.dims else
                    ZonalSphere.conventions if ds.attrs.get("manifold") == "sphere_zonal" else
                    Circle.conventions)
        for key, value in expected.items():
            if key in var.attrs and str(var.attrs[key]) != value:
                raise ConfigError(f"{where}: {name} has {key} = {str(var.attrs[key])[:80]!r}, but "
                                  f"meanfield-pde reads coefficients with {key} = {value!r}; the file was "
                                  "written with other conventions (convert its coefficients first)")


def _check_case(ds: xr.Dataset, where: str, strict: bool) -> None:
    from .config import from_dict, parse_toml
    missing = [v for v in RUN_VARIABLES if v not in ds.variables]
    density = _stores_density(ds)
    if density and "density" not in ds.variables:
        missing.append("density")
    particles = ds.attrs.get("equation") == "particles"
    if particles and "positions" not in ds.variables:
        missing.append("positions")
    if missing:
        raise ConfigError(f"{where}: variable(s) {', '.join(missing)} missing; the file is damaged")
    try:
        config = from_dict(parse_toml(str(ds.attrs["case"]), f"{where} (attribute 'case')"),
                           name=str(ds.attrs.get("case_name", "run")))
    except ConfigError as exc:
        if strict:
            raise ConfigError(f"{where}: its stored case is invalid: {exc}") from None
        config = None  # a reader only needs the data to agree with the attributes
    if config is not None:
        manifold, lmax, n = config.domain.manifold, config.domain.lmax, config.particles.n
        m = config.model
        # the model too: a case edited to another ν resumed into a file without free_energy
        # (a traceback after appending), another β or kind silently mixed two models
        for key, value in (("manifold", manifold), ("lmax", lmax), ("model", m.kind),
                           ("beta", m.beta), ("nu", m.nu), ("dimension", config.domain.dimension)):
            if key in ds.attrs and not _same(ds.attrs[key], value):
                raise ConfigError(f"{where}: attribute {key} = {ds.attrs[key]!r} but the stored case "
                                  f"says {value!r}; the file is damaged")
        _check_times(ds, config, where)
    else:
        manifold = str(ds.attrs.get("manifold", "sphere"))
        lmax = int(ds.attrs["lmax"]) if "lmax" in ds.attrs else None
        n = int(ds.attrs["n"]) if "n" in ds.attrs else None
    from .grid_density import GRID_DIMS
    grid, degree = GRID_DIMS.get(manifold, GRID_DIMS["sphere"]), "k" if manifold == "circle" else "l"
    # the grid of the density, or of the weights of a file written without it (output.density)
    dims = ds["density"].dims[1:] if "density" in ds else ds["weights"].dims if "weights" in ds else grid
    if dims != grid:
        raise ConfigError(f"{where}: density has dims {dims}, a run on the {manifold} has {grid}; "
                          "the stored case does not match the data")
    if lmax is not None and ds.sizes.get(degree) != lmax + 1:
        raise ConfigError(f"{where}: the coefficients go to degree {ds.sizes.get(degree, 0) - 1}, "
                          f"the stored case says domain.lmax = {lmax}; the file is damaged")
    if particles:
        stored = ds["positions"].sizes.get("particle")
        if stored != n or ("n" in ds.attrs and int(ds.attrs["n"]) != n):
            raise ConfigError(f"{where}: the stored case has particles.n = {n} (attribute n = "
                              f"{ds.attrs.get('n')}) but the file holds {stored} positions per "
                              "snapshot; the file is damaged")


def _stores_density(ds: xr.Dataset) -> bool:
    """The stored case asks for the grid density (output.density, default true; a case that
    cannot be parsed is read as asking for it)."""
    import tomllib
    try:
        output = tomllib.loads(str(ds.attrs["case"])).get("output", {})
    except (tomllib.TOMLDecodeError, KeyError, AttributeError):
        return True
    return output.get("density", True) is not False


def _same(stored, value) -> bool:
    """An attribute equals the case's value (numbers as numbers: 5 and 5.0 agree)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(stored) == float(value)
        except (TypeError, ValueError):
            return False
    return str(stored) == str(value)


def _check_times(ds: xr.Dataset, config, where: str) -> None:
    """No snapshot lies beyond the stored t_end (a record holding the netCDF fill value
    9.97e36 as its time resumed as "completed"), and the session counters are numbers
    (a resume adds to them only after running: a text there crashed after appending)."""
    from .config import time_unit
    t_last = float(ds["time"].values[-1])
    t_end = config.time.t_end * max(1.0, float(time_unit(config)))
    if config.handoff.enabled:  # continued as particles to handoff.t_end
        t_end = config.handoff.t_end
    if t_last > t_end * (1 + 1e-9) + 1e-300:
        raise ConfigError(f"{where}: its last time {t_last:.6g} lies beyond the stored time.t_end = "
                          f"{t_end:.6g}; the file is damaged")
    for key, kind in (("steps", int), ("rejected_steps", int), ("wall_time_s", float)):
        if key in ds.attrs:
            try:
                ok = np.isfinite(kind(ds.attrs[key])) and kind(ds.attrs[key]) >= 0
            except (TypeError, ValueError, OverflowError):
                ok = False
            if not ok:
                raise ConfigError(f"{where}: attribute {key} = {ds.attrs[key]!r} is not a count "
                                  "(a number >= 0); the file is damaged")


NOT_A_RUN_FILE = "not a run file of meanfield-pde (no 'case' or 'status' attribute)"


def is_run_file(attrs) -> bool:
    """A run file (of run, or a sweep's point) carries its case and status (:ref:`dataset-contract`)."""
    return "case" in attrs and "status" in attrs


def require_file(path: str | os.PathLike, where: str) -> Path:
    """``path`` as a Path if it is an existing regular file, else a ConfigError saying what it is
    (:func:`meanfield_pde.core.checks.file_problem`)."""
    problem = file_problem(path)
    if problem:
        raise ConfigError(f"{where}: {problem}")
    return Path(path)


def _open_netcdf(path, where: str, verify: bool = True) -> tuple[xr.Dataset, bytes]:
    """The file opened lazily after the checks of its format, length and (``verify``) checksums
    (first three items of the module docstring), and its first 8 bytes."""
    path = require_file(path, where)
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the file ({exc.strerror})") from None
    if magic[:4] in NETCDF3_MAGIC:
        _check_length(path, where)
    elif magic != HDF5_MAGIC:
        raise ConfigError(f"{where}: not a readable netCDF file")
    if verify:
        verify_checksums(path, where, magic)
    try:
        ds = xr.open_dataset(path)
    # netCDF4 raises AttributeError for a damaged attribute (e.g. "Can't open HDF5 attribute":
    # a file with many attributes keeps them in a heap read after the header)
    except (ValueError, OSError, RuntimeError, KeyError, IndexError, AttributeError):
        raise ConfigError(f"{where}: not a readable netCDF file") from None
    from .checksums import trim_running_note
    return trim_running_note(ds), magic  # a killed run's note without its header padding


def verify_checksums(path: str | os.PathLike, where: str, magic: bytes | None = None) -> None:
    """Check the data of a netCDF file (format and length checked) against its checksums:
    :func:`meanfield_pde.runs.checksums.verify_netcdf3` or ``verify_netcdf4`` by its
    first bytes ``magic`` (read from the file if not given).

    Raises
    ------
    ConfigError
        Naming what fails its checksum.
    """
    from .checksums import verify_netcdf3, verify_netcdf4
    if magic is None:
        with open(path, "rb") as f:
            magic = f.read(8)
    if magic[:4] in NETCDF3_MAGIC:
        verify_netcdf3(Path(path), where)
    elif magic == HDF5_MAGIC:
        verify_netcdf4(Path(path), where)


def read_attributes(path: str | os.PathLike, where: str) -> dict:
    """The global attributes of a netCDF file (e.g. its ``kind``, to choose how to read it),
    after the format and length checks of :func:`open_checked`; its content (and checksums)
    are not checked.

    Raises
    ------
    ConfigError
        Missing, not a regular file, unreadable, not netCDF, or cut short.
    """
    ds, _ = _open_netcdf(path, where, verify=False)
    with ds:
        return dict(ds.attrs)


def open_checked(path: str | os.PathLike, where: str, *, netcdf4: bool = True) -> xr.Dataset:
    """Open a file written by meanfield-pde after checking it (module docstring).

    Parameters
    ----------
    path : the file
    where : str
        How error messages name it, e.g. "--resume 'x.nc'".
    netcdf4 : bool
        Accept netCDF-4 (HDF5) files; ``--resume`` does not (it appends to
        netCDF-3 files only).

    Returns
    -------
    xarray.Dataset
        Opened lazily (the caller closes it); the checks read the data a block of
        snapshots at a time (:func:`time_blocks`) and keep none of it.

    Raises
    ------
    ConfigError
        Missing, not a regular file, unreadable, not netCDF, or any fault of
        the module docstring. Nothing is written to the file.
    """
    from .checksums import without_checksums
    ds, magic = _open_netcdf(path, where)
    ds = without_checksums(ds)  # verified; a Dataset written again must not carry stale ones
    try:
        check_dataset(ds, where, strict=not netcdf4)
        if "density" not in ds and "coef_real" in ds and "case" in ds.attrs:
            from .grid_density import with_density  # a file written with output.density = false
            ds = with_density(ds)
        if magic == HDF5_MAGIC and not netcdf4:
            if not is_run_file(ds.attrs):  # converting it would not help: say what it is first
                raise ConfigError(f"{where}: {NOT_A_RUN_FILE}")
            raise ConfigError(f"{where}: a netCDF-4 (HDF5) file (a copy, a sweep's point, or "
                              "output.format = 'netcdf4-zlib'); only the netCDF-3 files that `run` "
                              "writes can be continued (convert it with: "
                              "nccopy -k '64-bit offset' IN OUT)")
    except BaseException:
        ds.close()
        raise
    return ds
