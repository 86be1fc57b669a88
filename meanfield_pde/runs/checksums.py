"""Checksums that make a damaged byte of a written file an error instead of a wrong number.

Two schemes for the data, one per file format, and one for the global attributes
(:ref:`checksums`):

* **netCDF-4 (HDF5)** files written whole (a sweep's ``sweep.nc``, comparisons, a sweep's
  token points, run files compressed with ``output.format = "netcdf4-zlib"``): HDF5's
  Fletcher-32 filter on every chunked variable (:func:`with_fletcher32`). HDF5 verifies it
  on every read of a chunk; :func:`verify_netcdf4` reads each variable once so that a
  damaged chunk is found before anything uses the file (and, as HDF5's chunk index has no
  checksum, an element reading as netCDF's default fill value: ``_read_all``; numbers
  are written without ``_FillValue``, :func:`without_fill_values`, so that a lost float
  chunk reads as that fill, not as NaN). A compressed run file keeps the netCDF-3 file's
  ``record_checksum`` and ``fixed_checksum``, checked in the same pass.
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
* **Global attributes** of both (the case from which ``--resume`` rebuilds a run, its status,
  counters, history, ...): the int32 attribute ``attribute_checksum`` is the CRC-32 of every
  other global attribute but those in ``UNSEALED`` (a run's ``running_note``), in sorted
  order of their names, each as :func:`attribute_bytes`
  (:func:`attribute_crc`, the one rule of writer and readers). HDF5's attribute storage has no
  checksum either. The package recomputes it from the attributes as stored after each of its
  attribute edits (:func:`seal_attributes`: a run file's creation, status and counters at each
  session end, history on ``--resume``, the compressed copy, every netCDF-4 output).
* **Text variables** of netCDF-4 outputs written whole (:func:`seal_text`): the int32 array
  attribute ``text_checksum``, the :func:`crc32` of each character variable's stored bytes
  (NUL padding included), in sorted order of their names. Fletcher-32 finds a damaged chunk,
  but a chunk lost through HDF5's chunk index reads as NUL characters, i.e. as empty text, and
  empty is a legitimate value of some (a sweep point's ``error``); the CRC tells them apart.

Every file given ``attribute_checksum`` when it is created also carries the global attribute
``checksums`` (``CHECKSUMS``: the names of its checksums), covered by it: a file with
``checksums`` but without ``attribute_checksum`` is damaged (e.g. a flipped byte in that
attribute's name) and refused. A file with neither is read without them: one written by another
program (a Dataset the package returned, changed and written again without its checksums, as
:ref:`checksums` says), or one whose attributes were edited by hand, deleting both as the
message of a failed ``attribute_checksum`` says (a run file so is continued without it).

CRC-32: ITU-T V.42 / ISO 3309 (the zlib and PNG checksum); Fletcher-32: J. G. Fletcher,
"An arithmetic checksum for serial transmissions", IEEE Trans. Commun. 30 (1982) 247-252,
as implemented by the HDF5 library's ``H5Pset_fletcher32`` filter.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.errors import ConfigError

RECORD_CHECKSUM = "record_checksum"
FIXED_CHECKSUM = "fixed_checksum"
ATTRIBUTE_CHECKSUM = "attribute_checksum"
# The mark of a file whose writer sealed its global attributes: written when the file is created,
# covered by attribute_checksum. Without it, a file lacking attribute_checksum could be one never
# sealed (another program's, or a hand edit that deleted the seal) or one whose
# attribute_checksum lost its name (a flipped byte), and nothing else tells them apart.
CHECKSUMS = "checksums"
RUN_FILE_CHECKSUMS = "record_checksum fixed_checksum attribute_checksum"  # its value in run files
NETCDF4_CHECKSUMS = "fletcher32 attribute_checksum"  # in netCDF-4 outputs written whole ...
TEXT_CHECKSUM = "text_checksum"  # ... and, in those with text variables, with this one too
RECORD_CHECKSUM_ATTRS = {
    "long_name": "CRC-32 of this snapshot's bytes of the other time-dependent variables",
    "comment": ("zlib.crc32 over the big-endian bytes of every other variable with a time "
                "dimension (time included) at this snapshot, in sorted order of their names; "
                "stored as int32 (CRC = value & 0xFFFFFFFF)"),
}
CHUNK_BYTES = 64 * 2**20  # read a netCDF-4 variable in slices of about this size
# A run writing its file edits the global attributes in place when it starts and when it ends,
# then reseals them: separate header writes (netCDF-3 has no atomic edit), between which a
# reader in another process (e.g. plot of a running run) found attribute_checksum stale and
# called the file damaged (measured: 214 of 5863 reads beside a writer editing every 10 ms).
# A reader waits these seconds and reads the header again before it does: an edit takes well
# under a millisecond, and real damage stays.
HEADER_EDIT_WAITS = (0.02, 0.1)


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


def attribute_bytes(value) -> bytes:
    """The byte form of one global attribute's value for :func:`attribute_crc`: text (``str`` as
    UTF-8, or the ``bytes`` scipy's netCDF-3 reader gives; an array of strings joined by NUL) as
    ``b"t"`` + its bytes without trailing NULs; a number or numeric array as ``b"n"`` + its
    dtype's kind and size (``b"i4"``, ``b"f8"``) + its values as big-endian bytes. The stored
    bits, not the values, are taken: a NaN attribute has one CRC."""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    if isinstance(value, bytes):
        return b"t" + value.rstrip(b"\0")
    a = np.atleast_1d(np.asarray(value))
    if a.dtype.kind in "OUS":  # netCDF-4 NC_STRING arrays (lists of str)
        return b"t" + b"\0".join(str(x).encode("utf-8", "surrogateescape") for x in a.ravel())
    return (b"n" + f"{a.dtype.kind}{a.dtype.itemsize}".encode()
            + np.ascontiguousarray(a, dtype=a.dtype.newbyteorder(">")).tobytes())


# Left out of attribute_checksum: a run file's running_note, the text that says how to resume an
# unfinished run. A finished run deletes it, and netCDF4 deletes an attribute in a header write of
# its own: covered, the note made every end of a run two writes, a kill between them a file whose
# attributes fail their checksum (which --drop-damaged cannot cut around).
UNSEALED = ("running_note",)


def trim_running_note(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` (changed in place) with its ``running_note`` shown without the trailing spaces that
    pad it in the file (~1500: the header room that later edits of the file take in place,
    :func:`meanfield_pde.runs.runfile.running_note`): what the package returns and prints is
    the note itself. The file keeps its padding; the note is outside the checksums."""
    note = ds.attrs.get("running_note")
    if isinstance(note, str):
        ds.attrs["running_note"] = note.rstrip(" ")
    return ds


def attribute_crc(attrs: Mapping) -> int:
    """CRC-32 (:func:`zlib.crc32`) of the global attributes ``attrs`` (name -> value as a netCDF
    reader returns it) but ``attribute_checksum`` and the names in ``UNSEALED``: for each name
    in sorted order, its length (4 bytes, big-endian), its UTF-8 bytes, the length of
    :func:`attribute_bytes` of its value and those bytes. Returns an int in [0, 2**32)."""
    crc = 0
    for name in sorted(attrs):
        if name == ATTRIBUTE_CHECKSUM or name in UNSEALED:
            continue
        key, value = name.encode("utf-8", "surrogateescape"), attribute_bytes(attrs[name])
        crc = zlib.crc32(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value, crc)
    return crc


def seal_attributes(nc) -> None:
    """Set ``attribute_checksum`` of an open ``netCDF4.Dataset`` (mode "a" or "w") from its
    global attributes as stored; call after every edit of them. The attribute is an int32 of
    fixed size, so rewriting it never grows a netCDF-3 header."""
    nc.setncattr(ATTRIBUTE_CHECKSUM, as_stored(attribute_crc(nc.__dict__)))


def set_sealed(nc, values: Mapping) -> None:
    """Set the global attributes ``values`` of an open netCDF-3 ``netCDF4.Dataset`` (mode "a")
    together with the ``attribute_checksum`` they give, in one edit: one header write, so that
    a process killed during it leaves the old attributes or the new ones, each matching its
    checksum (an edit, then :func:`seal_attributes`, writes the header twice: killed between
    them, the file's attributes fail their checksum). A file without the checksum (its seal
    deleted with a hand edit) gets the values only. The checksum is computed from the values as
    the file will return them; a value stored differently is sealed again as stored."""
    if ATTRIBUTE_CHECKSUM not in nc.ncattrs():
        nc.setncatts(dict(values))
        return
    nc.setncatts({**values, ATTRIBUTE_CHECKSUM: as_stored(attribute_crc({**nc.__dict__, **values}))})
    if as_crc(nc.getncattr(ATTRIBUTE_CHECKSUM)) != attribute_crc(nc.__dict__):
        seal_attributes(nc)


def seal_file_attributes(path) -> None:
    """:func:`seal_attributes` of the netCDF file at ``path`` (opened to append, then closed):
    a file its caller is making (a temporary file, not yet published), so not claimed
    (:func:`meanfield_pde.runs.outputs.hold_file`): HDF5 takes its own flock of a netCDF-4
    file it opens, which a claim held by this very process refuses ("NetCDF: HDF error")."""
    import netCDF4
    with netCDF4.Dataset(path, "a") as nc:
        seal_attributes(nc)


def _attribute_fault(attrs: Mapping) -> str | None:
    """The message if ``attrs`` (a file's global attributes) fail ``attribute_checksum`` or lack
    it where ``CHECKSUMS`` says the file was written with it, else None (also when neither is
    there: a file never sealed, or whose seal was deleted by hand)."""
    # how to keep a deliberate hand edit: the seal goes, and with it the mark that asks for one
    undo = (f"ncatted -a {ATTRIBUTE_CHECKSUM},global,d,," + (f" -a {CHECKSUMS},global,d,,"
                                                             if CHECKSUMS in attrs else "") + " FILE")
    if ATTRIBUTE_CHECKSUM not in attrs:
        if CHECKSUMS not in attrs:
            return None
        return (f"its global attributes have no {ATTRIBUTE_CHECKSUM}, which the file was written "
                f"with (attribute {CHECKSUMS}): its name or the attribute itself is damaged, so none "
                f"of them can be trusted (if you deleted it yourself, delete {CHECKSUMS} too: "
                f"ncatted -a {CHECKSUMS},global,d,, FILE)")
    stored = np.ravel(np.asarray(attrs[ATTRIBUTE_CHECKSUM]))
    try:
        good = stored.size == 1 and stored.dtype.kind in "iu" and attribute_crc(attrs) == as_crc(stored[0])
    except (TypeError, ValueError, UnicodeError):
        good = False
    if good:
        return None
    shown = [n for n in ("case", "status", "stop_reason", "steps", "history") if n in attrs]
    return (f"its global attributes ({', '.join(shown)}, ...: {len(attrs) - 1} in all) fail their "
            f"checksum (attribute {ATTRIBUTE_CHECKSUM}; if you edited them yourself, delete it: "
            f"{undo})")


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
    """Fill in ``record_checksum[0]``, ``fixed_checksum`` and ``attribute_checksum`` of a new run
    file open for writing (a ``netCDF4.Dataset`` of one record, with their placeholders in
    place), from the values as stored."""
    nc.set_auto_maskandscale(False)
    nc.set_auto_chartostring(False)  # text variables (a hand-off run's component) as their stored chars
    variables = nc.variables
    nc.variables[RECORD_CHECKSUM][0] = as_stored(record_crc({n: variables[n][0] for n in record_names(variables)}))
    nc.setncattr(FIXED_CHECKSUM, as_stored(crc32(variables[n][...] for n in fixed_names(variables))))
    seal_attributes(nc)  # last: it covers fixed_checksum


def text_names(variables: Mapping) -> list[str]:
    """The variables ``text_checksum`` covers: the character arrays (netCDF ``char``, as the
    package stores text: :func:`meanfield_pde.runs.cf.cf_encode`), sorted by name."""
    return sorted(n for n, v in variables.items() if getattr(v.dtype, "kind", None) == "S")


def _text_crcs(nc) -> list[int]:
    """:func:`crc32` of each of :func:`text_names` of an open ``netCDF4.Dataset``, as stored."""
    nc.set_auto_maskandscale(False)
    nc.set_auto_chartostring(False)  # the stored characters, NUL padding included
    return [crc32([nc.variables[n][...]]) for n in text_names(nc.variables)]


def seal_text(nc) -> bool:
    """Set ``text_checksum`` of an open netCDF-4 ``netCDF4.Dataset`` (mode "a") from its text
    variables as stored; False (nothing set) if it has none. Call before :func:`seal_attributes`,
    which covers it."""
    crcs = _text_crcs(nc)
    if crcs:
        nc.setncattr(TEXT_CHECKSUM, np.array([as_stored(c) for c in crcs], dtype=np.int32))
    return bool(crcs)


def _text_fault(nc, attrs: Mapping) -> str | None:
    """The message if the text variables of an open netCDF-4 file fail ``text_checksum``, else
    None (also for a file without it: without text, or written by another program)."""
    if TEXT_CHECKSUM not in attrs:
        return None
    stored, names = np.ravel(attrs[TEXT_CHECKSUM]), text_names(nc.variables)
    if stored.size != len(names) or stored.dtype.kind not in "iu":
        return (f"its text variables ({', '.join(names)}) do not match their checksums (attribute "
                f"{TEXT_CHECKSUM}, {stored.size} values)")
    for name, crc, kept in zip(names, _text_crcs(nc), stored):
        if crc != as_crc(kept):
            return (f"text variable {name!r} fails its checksum (attribute {TEXT_CHECKSUM}): a "
                    "chunk of it is lost through HDF5's chunk index (it reads as empty text) or damaged")
    return None


def verify_netcdf3(path: Path, where: str) -> None:
    """Check a netCDF-3 file's ``attribute_checksum``, ``record_checksum`` and ``fixed_checksum``
    (module docstring), one pass over its bytes through a memory map; global attributes that
    fail are read again after each of ``HEADER_EDIT_WAITS`` (a writer's edit under way)
    before they are called damaged. A file without them (written by another program) passes.

    Raises
    ------
    ConfigError
        Naming the fixed variables or the global attributes whose bytes do not match, or a
        header that cannot be read.
    DamagedSnapshot
        (a ConfigError) Naming the first snapshot (index and time) whose bytes do not match,
        and which snapshots before it are intact; all else is intact.
    """
    from scipy.io import netcdf_file
    for wait in (*HEADER_EDIT_WAITS, None):
        try:
            with netcdf_file(path, "r", mmap=True, maskandscale=False) as f:
                # no view of the map may outlive it (scipy warns on close)
                attributes = _attribute_fault(f._attributes)
                fault = attributes or _netcdf3_fault(f)
        # what scipy's reader raises for a header it cannot parse or a file cut short
        except (ValueError, TypeError, OSError, IndexError, KeyError, MemoryError) as exc:
            if isinstance(exc, ConfigError):
                raise
            attributes, fault = None, "its header is corrupt or it is cut short"
        if not attributes or wait is None:
            break
        time.sleep(wait)  # a run's own header edit under way? (see HEADER_EDIT_WAITS)
    if isinstance(fault, DamagedSnapshot):
        raise DamagedSnapshot(f"{where}: the file is damaged: {fault}", fault.index, fault.count, fault.times)
    if fault:
        raise ConfigError(f"{where}: the file is damaged: {fault}")


class DamagedSnapshot(ConfigError):
    """A netCDF-3 run file whose snapshot ``index`` (0-based, of ``count``) is the first to fail
    its ``record_checksum``, while its header, global attributes, fixed variables and the
    snapshots before it are intact (raised by :func:`verify_netcdf3`). ``times``: the stored
    times of all ``count`` snapshots (float list; the damaged ones as stored), or None if the
    file has no ``time`` variable. ``run --resume FILE --drop-damaged`` cuts such a file back
    to its first ``index`` snapshots (:mod:`meanfield_pde.runs.salvage`)."""

    def __init__(self, message: str, index: int, count: int, times: list[float] | None):
        super().__init__(message)
        self.index, self.count, self.times = index, count, times

    def __reduce__(self):  # picklable with its fields (a sweep's dask worker sends it back)
        return type(self), (str(self), self.index, self.count, self.times)


def _netcdf3_fault(f) -> str | DamagedSnapshot | None:
    """What fails its checksum in an open scipy ``netcdf_file`` but its global attributes (the
    caller checks them first), or None; a failing snapshot as a :class:`DamagedSnapshot` (its
    text the message without the file's name), so that its index reaches the caller."""
    variables = f.variables
    fault = _fixed_fault(f._attributes.get(FIXED_CHECKSUM), variables, lambda v: v.data)
    if fault or RECORD_CHECKSUM not in variables:
        return fault
    names = record_names(variables)
    stored = variables[RECORD_CHECKSUM].data
    data = {n: variables[n].data for n in names}
    for i in range(len(stored)):
        if record_crc({n: d[i:i + 1] for n, d in data.items()}) != as_crc(stored[i]):
            # copied out of the memory map, which closes with the file
            times = [float(t) for t in variables["time"].data] if "time" in variables else None
            return DamagedSnapshot(_record_message(i, len(stored), times, names), i, len(stored), times)
    return None


def _fixed_fault(stored, variables: Mapping, values) -> str | None:
    """The message if the variables without time fail ``fixed_checksum`` (``stored``, None for a
    file without it), else None; ``values(variable)``: its stored values."""
    if stored is None:
        return None
    names = fixed_names(variables)
    stored = np.ravel(stored)
    if stored.size != 1 or crc32(values(variables[n]) for n in names) != as_crc(stored[0]):
        return (f"its variables without time ({', '.join(names)}) fail their checksum "
                f"(attribute {FIXED_CHECKSUM})")
    return None


def _record_message(i: int, count: int, time, names: list) -> str:
    """Snapshot ``i`` of ``count`` (times ``time``, None if unknown) fails ``record_checksum``
    over ``names``."""
    t = f" (t = {float(time[i]):.6g})" if time is not None else ""
    intact = f"snapshots 0 to {i - 1} before it are intact" if i else "it is the first snapshot"
    return (f"snapshot {i}{t} of {count} fails its checksum (variable "
            f"{RECORD_CHECKSUM} over {', '.join(names)}); {intact}")


def verify_netcdf4(path: Path, where: str) -> None:
    """Read every variable of a netCDF-4 (HDF5) file once, in slices, so that HDF5 checks the
    Fletcher-32 checksum of every chunk that has one (a damaged chunk fails to read); check
    ``attribute_checksum`` and, in a run file's netCDF-4 copy (``output.format =
    "netcdf4-zlib"``, or converted by ``nccopy``), ``record_checksum`` and ``fixed_checksum``
    as in a netCDF-3 run file (same bytes: the values as stored, big-endian), in the same pass;
    then the text variables against ``text_checksum`` (:func:`seal_text`).

    Raises
    ------
    ConfigError
        Naming the first variable that fails its checksum (or cannot be read, or reads as
        never written), the failing snapshot, or the damaged global attributes.
    """
    import netCDF4
    try:
        nc = netCDF4.Dataset(path, "r")
    except (OSError, RuntimeError, ValueError, KeyError, IndexError, AttributeError):
        raise ConfigError(f"{where}: not a readable netCDF file") from None
    with nc:
        nc.set_auto_maskandscale(False)
        nc.set_auto_chartostring(False)  # the stored bytes only: decoding text is the readers' check
        try:
            attrs = nc.__dict__
        except (AttributeError, RuntimeError, UnicodeError, OSError):  # a damaged attribute heap
            raise ConfigError(f"{where}: the file is damaged: its global attributes cannot be read") from None
        fault = _attribute_fault(attrs)
        if fault:
            raise ConfigError(f"{where}: the file is damaged: {fault}")
        records = (record_names(nc.variables) if RECORD_CHECKSUM in nc.variables
                   and "time" in nc.dimensions else [])
        crcs = [0] * (len(nc.dimensions["time"]) if records else 0)  # running CRC of each snapshot
        for group in _groups(nc):
            # the record variables in sorted order (their CRC is taken in it), then the others
            names = [*records, *(n for n in group.variables if n not in records)] if group is nc \
                else list(group.variables)
            for name in names:
                var = group.variables[name]
                add = _row_crcs(crcs) if group is nc and name in records else None
                try:
                    # a CRC-32 takes every int32 value, the default fill too (1 in 4e9): the
                    # checksums themselves are checked against the data, not against the fill
                    unwritten = _read_all(var, add) and name != RECORD_CHECKSUM
                except (OSError, RuntimeError, ValueError, IndexError, MemoryError) as exc:
                    checked = var.filters().get("fletcher32") if hasattr(var, "filters") else False
                    what = "fails its checksum" if checked else "cannot be read"
                    raise ConfigError(f"{where}: the file is damaged: variable {name!r} {what} "
                                      f"({str(exc)[:80]})") from None
                if unwritten:
                    raise ConfigError(f"{where}: the file is damaged: variable {name!r} reads as "
                                      "never written (netCDF's default fill value; its chunk index "
                                      "is damaged)")
        fault = (_run_checksums_fault(nc, records, crcs) or _sweep_fault(nc, attrs)
                 or _text_fault(nc, attrs))
        if fault:
            raise ConfigError(f"{where}: the file is damaged: {fault}")


def _row_crcs(crcs: list):
    """A callback for ``_read_all`` that adds each row (snapshot) of a slice to ``crcs``."""
    def add(start: int, values: np.ndarray) -> None:
        for j, row in enumerate(values):
            crcs[start + j] = zlib.crc32(
                np.ascontiguousarray(row, dtype=row.dtype.newbyteorder(">")).tobytes(), crcs[start + j])
    return add


def _run_checksums_fault(nc, records: list, crcs: list) -> str | None:
    """What fails ``record_checksum`` / ``fixed_checksum`` in a netCDF-4 run file (``crcs``: the
    CRC of each snapshot's bytes of ``records``), or None; a lost chunk of the checksums
    themselves (read as the fill value) fails like damaged data."""
    variables = nc.variables
    fault = _fixed_fault(nc.__dict__.get(FIXED_CHECKSUM), variables, lambda v: v[...])
    if fault or not records:
        return fault
    stored = np.asarray(variables[RECORD_CHECKSUM][:])
    for i, crc in enumerate(crcs):
        if crc != as_crc(stored[i]):
            return _record_message(i, len(crcs), np.asarray(variables["time"][:]), records)
    return None


SWEEP_RECORDS = ("status", "stop_reason")  # never empty for any point of a sweep's file


def _sweep_fault(nc, attrs: Mapping) -> str | None:
    """In a sweep's combined file (``kind = "sweep"``), a point whose ``status`` or
    ``stop_reason`` is empty: the package records both for every point, failed ones too, so an
    empty one is a text chunk lost through HDF5's chunk index (it reads as NUL characters)."""
    if str(attrs.get("kind", "")) != "sweep":
        return None
    for name in SWEEP_RECORDS:
        if name not in nc.variables:
            continue
        values = np.asarray(nc.variables[name][...])
        if values.dtype.kind == "S" and values.ndim:  # characters along the last dimension
            empty = np.all(values == b"", axis=-1)
        else:
            empty = np.vectorize(lambda v: not v, otypes=[bool])(values)
        if np.any(empty):
            at = tuple(int(i) for i in np.argwhere(np.atleast_1d(empty))[0])
            return (f"variable {name!r} is empty at point {at} (every point of a sweep records "
                    "it, a failed one too): its chunk index is damaged")
    return None


def _groups(group):
    yield group
    for child in group.groups.values():
        yield from _groups(child)


def _read_all(var, rows=None) -> bool:
    """Read ``var`` in slices; True if it holds netCDF's default fill value of its type where it
    has no ``_FillValue`` of its own. ``rows(start, values)``, if given, receives each slice
    along the first axis (and where it starts).

    Why: HDF5's (v1 B-tree) chunk index has no checksum; a damaged index entry makes a chunk
    read as unwritten, i.e. as fill values, without an error (measured: 1 of 60 random byte
    flips of a sweep file). The package writes every element of its netCDF-4 files, and its
    numeric variables without a ``_FillValue`` (:func:`without_fill_values`), so an element
    equal to the default fill (-2147483647, 9.97e36) is such a chunk. (A float variable with
    ``_FillValue = NaN``, as another program may write it, reads a lost chunk as NaN: this cannot
    tell it from a failed point's NaN; in a run file the record checksums do.)"""
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
        if rows is not None and part is not Ellipsis:
            rows(part.start, values)
    return found


def with_fletcher32(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with HDF5's Fletcher-32 filter set in the encoding of every variable that HDF5 can
    chunk (not the scalars, nor the empty ones); changes ``ds``'s variables' encodings in place
    and returns it."""
    for var in ds.variables.values():
        if var.ndim and var.size:
            var.encoding["fletcher32"] = True
    return ds


def without_fill_values(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with no ``_FillValue`` on its numeric variables (encodings changed in place): the
    package writes every element, so a netCDF-4 chunk lost through HDF5's chunk index reads as
    netCDF's default fill (9.97e36, -2147483647), which :func:`verify_netcdf4` refuses, not as
    NaN, which a failed sweep point also holds. NaN values are stored as they are."""
    for var in ds.variables.values():
        if var.dtype.kind in "iuf":
            var.encoding["_FillValue"] = None
    return ds


def without_checksums(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` without a file's checksums (``record_checksum``, ``fixed_checksum``,
    ``text_checksum``, ``attribute_checksum`` and their mark ``checksums``): a reader has
    verified them, and a Dataset written again with changed data or attributes must not carry
    stale ones (nor the mark, which would make the readers refuse a file written without them)."""
    ds = ds.drop_vars(RECORD_CHECKSUM, errors="ignore")
    ds.attrs = {k: v for k, v in ds.attrs.items()
                if k not in (FIXED_CHECKSUM, ATTRIBUTE_CHECKSUM, CHECKSUMS, TEXT_CHECKSUM)}
    return ds
