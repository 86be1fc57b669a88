"""Checksums that make a damaged byte of a written file an error instead of a wrong number.

Two schemes, one per file format (README §Output files: checksums):

* **netCDF-4 (HDF5)** files written whole (a sweep's ``sweep.nc``, comparisons, a sweep's
  token points, run files compressed with ``output.format = "netcdf4-zlib"``): HDF5's
  Fletcher-32 filter on every chunked variable (:func:`with_fletcher32`). HDF5 verifies it
  on every read of a chunk; :func:`verify_netcdf4` reads each variable once so that a
  damaged chunk is found before anything uses the file (and, as HDF5's chunk index has no
  checksum, an element reading as netCDF's default fill value: :func:`_read_all`).
* **netCDF-3** run files, appended one snapshot at a time
  (:mod:`meanfield_pde.runs.runfile`): netCDF-3 has no checksums, so the run file stores
  its own. The integer variable ``record_checksum(time)`` holds, for snapshot i, the CRC-32
  (ISO-HDLC / zlib polynomial, :func:`zlib.crc32`) of the bytes of that snapshot of every
  other variable with a ``time`` dimension, ``time`` included, taken in the order of their
  names (sorted) and written as the file stores them (big-endian, row-major): exactly the
  record's bytes in the file, without padding. It is written in the same append (and sync)
  as the record. The global attribute ``fixed_checksum`` is the same CRC over the
  variables without a ``time`` dimension (grid, weights, degree coordinates), written when
  the file is created. Both are stored as int32: the CRC is ``value & 0xFFFFFFFF``.
  Global attributes are not covered: the package itself rewrites several of them at the end
  of every session (status, stop_reason, case, counters); the readers check them against
  the stored case instead (:mod:`meanfield_pde.runs.runcheck`).

Files written before the checksums existed have neither and are read as before.

CRC-32: ITU-T V.42 / ISO 3309 (the zlib and PNG checksum); Fletcher-32: J. G. Fletcher,
"An arithmetic checksum for serial transmissions", IEEE Trans. Commun. 30 (1982) 247-252,
as implemented by the HDF5 library's ``H5Pset_fletcher32`` filter.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.errors import ConfigError

RECORD_CHECKSUM = "record_checksum"
FIXED_CHECKSUM = "fixed_checksum"
RECORD_CHECKSUM_ATTRS = {
    "long_name": "CRC-32 of this snapshot's bytes of the other time-dependent variables",
    "comment": ("zlib.crc32 over the big-endian bytes of every other variable with a time "
                "dimension (time included) at this snapshot, in sorted order of their names; "
                "stored as int32 (CRC = value & 0xFFFFFFFF)"),
}
CHUNK_BYTES = 64 * 2**20  # read a netCDF-4 variable in slices of about this size


def crc32(arrays: Iterable[np.ndarray]) -> int:
    """CRC-32 (:func:`zlib.crc32`) of the arrays' values as big-endian bytes, one after another.

    Parameters
    ----------
    arrays : iterable of array-likes
        Any shapes; each is taken row-major in its own dtype with big-endian byte order
        (the netCDF-3 on-disk order), so the same values in either byte order give the same CRC.

    Returns
    -------
    int in [0, 2**32)
    """
    crc = 0
    for a in arrays:
        a = np.asarray(a)
        crc = zlib.crc32(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder(">")).tobytes(), crc)
    return crc


def record_crc(arrays: Mapping) -> int:
    """CRC-32 of one snapshot: :func:`crc32` of ``arrays`` (name -> that snapshot's values of a
    variable of :func:`record_names`, ``time`` included) in sorted order of their names, the one
    rule of the writer (:func:`seal_first_record`, the run file's appends) and the reader."""
    return crc32(arrays[n] for n in sorted(arrays))


def as_stored(crc: int) -> np.int32:
    """The CRC as the int32 that netCDF-3 can store (same 32 bits)."""
    return np.array(crc, dtype=np.uint32).view(np.int32)[()]


def as_crc(stored) -> int:
    """The CRC of a stored int32 (inverse of :func:`as_stored`)."""
    return int(stored) & 0xFFFFFFFF


def record_names(variables: Mapping) -> list[str]:
    """The variables a snapshot's checksum covers: every one whose first dimension is ``time``,
    but the checksum itself, sorted by name. ``variables``: name -> object with ``dimensions``."""
    return sorted(n for n, v in variables.items()
                  if tuple(v.dimensions[:1]) == ("time",) and n != RECORD_CHECKSUM)


def fixed_names(variables: Mapping) -> list[str]:
    """The variables ``fixed_checksum`` covers: those without a ``time`` dimension, sorted."""
    return sorted(n for n, v in variables.items() if "time" not in v.dimensions)


def seal_first_record(nc) -> None:
    """Fill in ``record_checksum[0]`` and ``fixed_checksum`` of a new run file open for writing
    (a ``netCDF4.Dataset`` of one record, with both placeholders in place), from the
    values as stored."""
    nc.set_auto_maskandscale(False)
    nc.set_auto_chartostring(False)  # text variables (component_label) as their stored chars
    variables = nc.variables
    nc.variables[RECORD_CHECKSUM][0] = as_stored(record_crc({n: variables[n][0] for n in record_names(variables)}))
    nc.setncattr(FIXED_CHECKSUM, as_stored(crc32(variables[n][...] for n in fixed_names(variables))))


def verify_netcdf3(path: Path, where: str) -> None:
    """Check a netCDF-3 file's ``record_checksum`` and ``fixed_checksum`` (module docstring), one
    pass over its bytes through a memory map. A file without them (written before they
    existed, or by another program) passes.

    Raises
    ------
    ConfigError
        Naming the first snapshot (index and time) or the fixed variables whose bytes do not
        match, and which snapshots before it are intact.
    """
    from scipy.io import netcdf_file
    try:
        with netcdf_file(path, "r", mmap=True, maskandscale=False) as f:
            fault = _netcdf3_fault(f)  # no view of the map may outlive it (scipy warns on close)
    # what scipy's reader raises for a header it cannot parse or a file cut short
    except (ValueError, TypeError, OSError, IndexError, KeyError, MemoryError) as exc:
        if isinstance(exc, ConfigError):
            raise
        fault = "its header is corrupt or it is cut short"
    if fault:
        raise ConfigError(f"{where}: the file is damaged: {fault}")


def _netcdf3_fault(f) -> str | None:
    """What fails its checksum in an open scipy ``netcdf_file``, or None."""
    variables = f.variables
    stored_fixed = f._attributes.get(FIXED_CHECKSUM)
    if stored_fixed is not None:
        names = fixed_names(variables)
        stored_fixed = np.ravel(stored_fixed)
        if stored_fixed.size != 1 or crc32(variables[n].data for n in names) != as_crc(stored_fixed[0]):
            return (f"its variables without time ({', '.join(names)}) fail their checksum "
                    f"(attribute {FIXED_CHECKSUM})")
    if RECORD_CHECKSUM not in variables:
        return None
    names = record_names(variables)
    stored = variables[RECORD_CHECKSUM].data
    data = {n: variables[n].data for n in names}
    for i in range(len(stored)):
        if record_crc({n: d[i:i + 1] for n, d in data.items()}) != as_crc(stored[i]):
            t = f" (t = {float(variables['time'].data[i]):.6g})" if "time" in variables else ""
            intact = f"snapshots 0 to {i - 1} before it are intact" if i else "it is the first snapshot"
            return (f"snapshot {i}{t} of {len(stored)} fails its checksum (variable "
                    f"{RECORD_CHECKSUM} over {', '.join(names)}); {intact}")
    return None


def verify_netcdf4(path: Path, where: str) -> None:
    """Read every variable of a netCDF-4 (HDF5) file once, in slices, so that HDF5 checks the
    Fletcher-32 checksum of every chunk that has one (a damaged chunk fails to read).

    Raises
    ------
    ConfigError
        Naming the first variable that fails its checksum (or cannot be read).
    """
    import netCDF4
    try:
        nc = netCDF4.Dataset(path, "r")
    except (OSError, RuntimeError, ValueError, KeyError, IndexError, AttributeError):
        raise ConfigError(f"{where}: not a readable netCDF file") from None
    with nc:
        nc.set_auto_maskandscale(False)
        nc.set_auto_chartostring(False)  # the stored bytes only: decoding text is the readers' check
        for group in _groups(nc):
            for name, var in group.variables.items():
                try:
                    # a CRC-32 takes every int32 value, the default fill too (1 in 4e9): the
                    # checksums themselves are checked against the data, not against the fill
                    unwritten = _read_all(var) and name != RECORD_CHECKSUM
                except (OSError, RuntimeError, ValueError, IndexError, MemoryError) as exc:
                    checked = var.filters().get("fletcher32") if hasattr(var, "filters") else False
                    what = "fails its checksum" if checked else "cannot be read"
                    raise ConfigError(f"{where}: the file is damaged: variable {name!r} {what} "
                                      f"({str(exc)[:80]})") from None
                if unwritten:
                    raise ConfigError(f"{where}: the file is damaged: variable {name!r} reads as "
                                      "never written (netCDF's default fill value; its chunk index "
                                      "is damaged)")


def _groups(group):
    yield group
    for child in group.groups.values():
        yield from _groups(child)


def _read_all(var) -> bool:
    """Read ``var`` in slices; True if it holds netCDF's default fill value of its type where it
    has no ``_FillValue`` of its own.

    Why: HDF5's (v1 B-tree) chunk index has no checksum; a damaged index entry makes a chunk
    read as unwritten, i.e. as fill values, without an error (measured: 1 of 60 random byte
    flips of a sweep file). The package writes every element of its netCDF-4 files, so an
    integer or number-coordinate element equal to the default fill (-2147483647, 9.97e36) is
    such a chunk. (Float data variables have ``_FillValue = NaN``: an unwritten chunk of
    them reads as NaN, which this cannot tell from a failed point's NaN.)"""
    import netCDF4
    fill = None
    kind = getattr(var.dtype, "kind", None)  # None: a variable-length string (dtype str)
    if "_FillValue" not in var.ncattrs() and kind is not None and kind in "iuf":
        fill = netCDF4.default_fillvals.get(var.dtype.str[1:])
    if var.ndim == 0 or var.shape[0] == 0:
        parts = [Ellipsis]
    else:  # slices of about CHUNK_BYTES along the first axis (a vlen string: ~8 bytes each)
        row_bytes = int(np.prod(var.shape[1:], dtype=np.int64)) * getattr(var.dtype, "itemsize", 8)
        step = max(1, CHUNK_BYTES // max(1, row_bytes))
        parts = [slice(start, start + step) for start in range(0, var.shape[0], step)]
    found = False
    for part in parts:  # every slice is read (HDF5 checks its chunks), found or not
        values = np.asarray(var[part])
        found = found or (fill is not None and bool(np.any(values == fill)))
    return found


def with_fletcher32(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with HDF5's Fletcher-32 filter set in the encoding of every variable that HDF5 can
    chunk (not the scalars, nor the empty ones); changes ``ds``'s variables' encodings in place
    and returns it."""
    for var in ds.variables.values():
        if var.ndim and var.size:
            var.encoding["fletcher32"] = True
    return ds


def without_checksums(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` without a run file's checksums (``record_checksum``, ``fixed_checksum``): a reader
    has verified them, and a Dataset written again with changed data must not carry stale ones."""
    ds = ds.drop_vars(RECORD_CHECKSUM, errors="ignore")
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != FIXED_CHECKSUM}
    return ds
