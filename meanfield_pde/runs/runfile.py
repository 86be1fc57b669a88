"""Where a run's snapshots go as they are computed: a crash-safe netCDF file, or memory.

A run file is appended one snapshot (a one-time Dataset from
:func:`meanfield_pde.runs.io.snapshots_to_dataset`) at a time along an unlimited
``time`` dimension and synced after each, so a run killed at any moment
(even by SIGKILL) leaves a file that ``xarray.open_dataset`` reads with every
snapshot completed so far. The format is netCDF-3 64-bit offset (written by
the netCDF4 library, the default xarray engine): a record is counted in the
header only after its data are on disk, while HDF5-based netCDF-4 files were
measured to expose a half-written last record after about 1 kill in 100.

While the run is going, ``status`` and ``stop_reason`` are "running" and the
attribute ``running_note`` explains what to do if no process writes the file
any more; :meth:`RunFile.finish` replaces them by the final status and reason. The note is padded
to a fixed size so that header edits (finish, resume) never outgrow the
header: netCDF-3 would otherwise move all the data on disk. A resume adds one
line to the CF ``history`` attribute and shortens the padding by as much (some
eight resumes fit in the reserve; a header over 8 KiB was measured to make the
netCDF library pad a small new file with zeros up to 16 KiB). Every such edit
recomputes ``attribute_checksum`` (:mod:`meanfield_pde.runs.checksums`), an int32
rewritten in place.

Times only grow: a snapshot not later than the file's last one is not
written (a resumed run restarts before an interrupted run's last good
state). A snapshot that does not fit (free disk space, ``ulimit -f``,
checked before writing) or whose write fails (quota) is not written: the file
is cut back to its complete records (the record count is rewritten in the
header), the status says "stopped: could not write the file (...)", and the
run stops like an interrupted one (:class:`meanfield_pde.core.signals.WriteFailed`)
and can be resumed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

from ..core.errors import ConfigError, DiskSpaceWarning
from .cf import append_history, cf_encode
from .checksums import (ATTRIBUTE_CHECKSUM, CHECKSUMS, FIXED_CHECKSUM, RECORD_CHECKSUM,
                        RECORD_CHECKSUM_ATTRS, RUN_FILE_CHECKSUMS, as_stored, record_crc,
                        seal_file_attributes, seal_first_record, set_sealed, without_checksums,
                        trim_running_note, without_fill_values)
from .io import check_output_path
from .outputs import (OutputFull, acquire, acquire_file, check_room, disk_estimate, final_name,
                      hold_file, not_ours, publish, release, release_file, shell_word, temporary)
from ..core.signals import WriteFailed
from ..core.stops import StopReason

FORMAT = "NETCDF3_64BIT_OFFSET"
RUNNING = "running"
NOTE_SIZE = 1792  # bytes reserved in the header for the final status and other end-of-run attributes
_NOTE = ("This file is being written by a running meanfield-pde process, or that process was killed "
         "(SIGKILL, power loss, out of memory) before it could record why it stopped. Every snapshot "
         "in the file is complete. Continue the run with: meanfield-pde run --resume {path}")


def _unfinished(partial: Path) -> str:
    """The end of the refusal of an output whose X.partial.nc exists: what it holds and what to
    do, --resume it, or delete it where its stop would recur (a resume refuses it)."""
    from .resume import recurring_stop
    from .runcheck import read_attributes
    try:
        recurring = recurring_stop(read_attributes(partial, repr(str(partial))))
    except (ConfigError, ValueError):  # unreadable, damaged: --resume says what it is
        recurring = None
    if recurring:
        return (f"a replacement of it that {recurring}, which a resume would meet again; delete "
                f"{shell_word(partial)} before running the case again")
    return (f"an unfinished replacement of it; continue it with --resume {shell_word(partial)} "
            "or delete it")


def partial_path(path: Path) -> Path:
    """Where a run that replaces an existing file writes until it ends (renamed over ``path`` then)."""
    return path.with_name(f"{path.stem}.partial.nc")


def netcdf_attr(value):
    """A global attribute value netCDF-3 can hold (no int64, no bool).

    An integer outside int32 (a seed of 3000000000 or 2**64 + 5) is stored as its
    exact decimal text: as a float it would come back rounded (and as 3000000000.0).
    """
    if isinstance(value, (bool, np.bool_)):
        return np.int32(value)
    if isinstance(value, (int, np.integer)):
        return np.int32(value) if abs(int(value)) < 2**31 else str(int(value))
    return value


def _store(ds: xr.Dataset, path: Path, file_format: str, *, encoding: dict | None = None,
           unlimited_dims: set | None = None) -> None:
    """Write the in-memory Dataset ``ds`` (numpy data, attributes already made netCDF-safe) to a new
    netCDF file: what ``Dataset.to_netcdf(path, format=file_format, engine="netcdf4")`` does,
    the same bytes, without its question to dask which scheduler runs (it decides whether to
    close the file between writes of dask arrays, and imports dask.distributed for it: 0.2-0.4 s
    of every process that writes a run file). Raises what netCDF4 raises (OSError, RuntimeError)."""
    # xarray's store made from an open file takes its default lock (its own constructor
    # would also ask dask for the scheduler, to pick one)
    nc = netCDF4.Dataset(path, mode="w", format=file_format)
    try:
        ds.dump_to_store(xr.backends.NetCDF4DataStore(nc, mode="w"), encoding=encoding or {},
                         unlimited_dims=unlimited_dims)
    finally:
        try:
            nc.close()  # the data reach the disk here: a full disk fails here
        except BaseException:
            _abandon(nc)  # else a segfault when it is collected, instead of the error
            raise


def _require_whole(path: Path, names) -> None:
    """Raise OSError unless the new netCDF-3 file ``path`` holds every variable in ``names`` and
    all the bytes its header describes.

    netCDF-C does not always report a write that the disk or the file-size limit cut short:
    a file whose header outgrew its first layout is rewritten when its last variable is
    defined, and a cut rewrite was measured to leave the old header (the last variable
    missing) and no error (then a KeyError when sealed; with a short record, a checksum
    sealed over the fill values read past the end)."""
    from scipy.io import netcdf_file
    from .outputs import file_size_limit
    try:
        with netcdf_file(path, "r", mmap=True, maskandscale=False) as f:
            whole = set(names) <= set(f.variables)  # mapping each variable: a short file fails
    except (ValueError, TypeError, OSError, IndexError, KeyError, MemoryError):
        whole = False
    if not whole:
        limit, size = file_size_limit(), os.path.getsize(path)
        code = errno.EFBIG if limit is not None and size >= limit else errno.ENOSPC
        raise OSError(code, f"{os.strerror(code)} (the file came out incomplete, {size} bytes)")


def running_note(target: Path, used: int = 0) -> str:
    """The ``running_note`` of the run file ``target``, padded: the reserve that keeps later
    header edits in place (module docstring), less the ``used`` bytes that the history of a
    resumed run has taken from it."""
    return _NOTE.format(path=shell_word(target)).ljust(NOTE_SIZE - used)


def mark_running(nc: netCDF4.Dataset, target: Path, line: str | None = None) -> None:
    """Set the open run file ``target`` (``nc``, mode "a") back to status running with one more
    ``history`` line (``line``; by default this command's, :func:`meanfield_pde.runs.cf.history_line`),
    whose bytes come from the note's reserve (module docstring), sealed in the same header
    write (:func:`meanfield_pde.runs.checksums.set_sealed`: a kill leaves either version); sync."""
    previous = nc.__dict__.get("history")
    history = append_history(previous, line)
    grown = len(history.encode()) - len(str(previous or "").encode())
    set_sealed(nc, {"status": RUNNING, "stop_reason": StopReason.RUNNING.value,
                    "running_note": running_note(target, grown), "history": history})
    nc.sync()


class RunFile:
    """A run's netCDF file, appended and synced snapshot by snapshot.

    The output name is claimed (:func:`meanfield_pde.runs.outputs.acquire`) from
    construction until :meth:`close`, so no second process can create,
    replace or resume it meanwhile; a replacement ``X.partial.nc`` is
    claimed as ``X.nc``. The file itself is claimed too
    (:func:`meanfield_pde.runs.outputs.acquire_file`) from before its name
    shows it (or from :meth:`reopen`) until :meth:`close`: no second writer
    through another name of it (a hard link). Snapshot times are kept strictly increasing: a
    record not later than the last one stored is not written.

    Parameters
    ----------
    path : path to a .nc file
    overwrite : bool
        Replace an existing file. The new run is written to
        :func:`partial_path` and renamed over ``path`` only when it completes,
        so the old file is never lost to a run that is killed or stopped
        (that run stays in the partial file, which ``--resume`` continues).
    attrs : dict
        Global attributes known at the start (model, beta, case, ...).
    snapshots : int, optional
        Snapshots the run will store: with the first record's size, the
        file's size is estimated before it is created and refused if the
        disk (or the file-size limit) cannot hold it.
    density : bool
        Store the grid density (``output.density``); without it the readers rebuild it
        from the coefficients (:mod:`meanfield_pde.runs.grid_density`).
    file_format : "netcdf3" or "netcdf4-zlib"
        ``output.format``: with "netcdf4-zlib" a completed run is rewritten compressed
        (:func:`compress`); while running, and when stopped early, the file is netCDF-3.

    Raises
    ------
    ConfigError
        From :func:`meanfield_pde.runs.io.check_output_path`, the name claimed by
        another process, or a partial file of an earlier replacement that was
        never finished; before anything is written.
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False, attrs: dict | None = None,
                 snapshots: int | None = None, density: bool = True, file_format: str = "netcdf3"):
        check_output_path(path, overwrite=True, inputs=())  # a usable name, before claiming it
        acquire(path)  # then the existence checks below are race-free
        self.lock, self.file_claim = Path(path), None
        try:
            self.path = check_output_path(path, overwrite=overwrite)
            self.target = partial_path(self.path) if self.path.exists() else self.path
            # a link there is someone else's: replaced, it would be lost; and the advice below
            # (--resume it) would write into its target
            if self.target != self.path and self.target.is_symlink():
                raise not_ours(self.path, "partial file", self.target, "is a symbolic link")
            if self.target != self.path and self.target.exists():
                raise ConfigError(f"output {str(self.path)!r}: {str(self.target)!r} holds "
                                  f"{_unfinished(self.target)}")
        except BaseException:
            self.close()
            raise
        self.attrs = dict(attrs or {})
        self.density, self.file_format = density, file_format
        self.nc: netCDF4.Dataset | None = None
        self.count = 0
        self.snapshots = snapshots
        self.last_time = -np.inf
        self.failed: str | None = None
        self.good_size = 0
        self._records: tuple = ()  # (the handle, its variables, the record names): _record_variables

    @classmethod
    def reopen(cls, path: str | os.PathLike, snapshots: int | None = None) -> RunFile:
        """Open an existing run file to append to it (``--resume``); status goes back to running.

        A partial file (``X.partial.nc``) replaces ``X.nc`` when the resumed run completes.
        The caller has checked the file (:func:`meanfield_pde.runs.runcheck.open_checked`).

        Raises
        ------
        ConfigError
            If another process is writing the file.
        """
        self = cls.__new__(cls)
        self.target = Path(path)
        self.path = final_name(self.target)
        acquire(self.target)
        self.lock, self.file_claim, self.nc = self.target, None, None
        self.failed, self.snapshots, self._records = None, snapshots, ()
        try:
            self.file_claim = acquire_file(self.target)  # under any other name of it too
            self.nc = netCDF4.Dataset(self.target, "a")
            self.attrs = self.nc.__dict__.copy()
            self.count = len(self.nc.dimensions["time"])
            # as the file was begun; a resumed run stays netCDF-3 (it may be resumed again)
            self.density, self.file_format = "density" in self.nc.variables, "netcdf3"
            self.last_time = float(self.nc.variables["time"][self.count - 1]) if self.count else -np.inf
            mark_running(self.nc, self.target)
            self.good_size = os.path.getsize(self.target)
        except BaseException:
            self.close()
            raise
        return self

    def _note(self, used: int = 0) -> str:
        return running_note(self.target, used)

    def record_attributes(self, attrs: dict) -> bool:
        """Write global attributes during the run, synced, so that a run killed afterwards (even
        by SIGKILL) keeps them: what a run knows part-way, e.g. a hand-off run's counters and
        trigger at its hand-off. The end-of-run attributes of :meth:`finish` replace them;
        ``attrs`` (what earlier sessions recorded) is left as it was.

        The header may not grow (netCDF-3 would move all the data): the bytes the attributes add
        are taken from the padding of ``running_note``. Returns False, writing nothing, when that
        padding is too short (many resumes used it up), the file is not started or a write
        failed; the attributes then come with :meth:`finish` only."""
        if self.nc is None or self.failed:
            return False
        values = {k: netcdf_attr(v) for k, v in attrs.items()}
        stored = self.nc.__dict__
        grown = sum(_header_bytes(k, v) - (_header_bytes(k, stored[k]) if k in stored else 0)
                    for k, v in values.items())
        note = str(stored.get("running_note", ""))
        take = max(0, -(-grown // 4) * 4)  # whole 4-byte units: the note's own padding stays put
        if take > len(note) - len(note.rstrip(" ")):
            return False
        try:
            # one header write with their checksum (set_sealed): a kill leaves either version
            set_sealed(self.nc, {**values, "running_note": note[:len(note) - take]})
            self.nc.sync()
        except (OSError, RuntimeError):  # a full disk: they come with finish, when possible
            return False
        return True

    def append(self, record: xr.Dataset) -> None:
        """Add one snapshot (a Dataset with time of length 1) and sync it to disk.

        Raises
        ------
        ConfigError
            First snapshot: the planned file does not fit the disk (nothing written).
        meanfield_pde.runs.outputs.OutputFull
            First snapshot: it could not be written (nothing is left behind).
        meanfield_pde.core.signals.WriteFailed
            A later snapshot could not be written (full disk, quota, file-size
            limit): the loops stop cleanly; the file keeps every earlier snapshot.
        """
        t = float(record["time"].values[0])
        if not self.density and "density" in record:
            record = record.drop_vars("density")  # output.density = false: the coefficients determine it
        record = without_checksums(record)  # a record read from a run file: its own are rewritten
        if self.failed or not t > self.last_time:
            return  # after a failed write, or not later than the file's last time (module doc)
        if self.nc is None:
            size = sum(int(v.nbytes) + 8 for n, v in record.variables.items() if "time" in v.dims)
            self._create(record, size)
            self.count += 1
            self.last_time = t
        else:
            self._write(t, {name: var.values[0] for name, var in record.variables.items()
                            if "time" in var.dims and name != "time"})

    @property
    def started(self) -> bool:
        """Whether the first record is written (later ones may come by :meth:`append_values`)."""
        return self.nc is not None

    def append_values(self, t: float, values: dict) -> None:
        """Add one snapshot after the first, given as {variable: its values at time t} for
        every time-dependent variable of the file (:func:`meanfield_pde.runs.io.snapshot_values`):
        the same record as :meth:`append` without building a Dataset. Raises as :meth:`append`;
        ValueError (nothing written) if ``values`` does not name exactly those variables.
        """
        if self.nc is None:
            raise RuntimeError("RunFile.append_values before the first record (use append)")
        if self.failed or not t > self.last_time:
            return
        if not self.density:  # output.density = false: the coefficients determine it
            values = {name: v for name, v in values.items() if name != "density"}
        self._write(float(t), values)

    def _write(self, t: float, values: dict) -> None:
        """Write one record after the first; the time last, so a record counts only when whole."""
        variables, expected = self._record_variables()
        if set(values) != expected:
            raise ValueError(f"run file record at t = {t}: variables {sorted(values)} given, "
                             f"the file has {sorted(expected)}")
        size = sum(np.asarray(v).nbytes + 8 for v in values.values()) + 8
        try:
            check_room(self.target, size, self.good_size + size)
            i = self.count
            for name, value in values.items():
                variables[name][i, ...] = value
            if RECORD_CHECKSUM in variables:  # not in a run written again without them (it stays so)
                stored = {name: np.asarray(value, dtype=variables[name].dtype) for name, value in values.items()}
                stored["time"] = np.float64(t)
                variables[RECORD_CHECKSUM][i] = as_stored(record_crc(stored))
            variables["time"][i] = t  # last: the record is complete
            self.nc.sync()
        except (OSError, RuntimeError) as exc:
            self._fail(exc)
        self.good_size = os.path.getsize(self.target)
        self.count += 1
        self.last_time = t

    def _record_variables(self) -> tuple[dict, set]:
        """(the open file's variables, the names a record after the first gives), found once per
        open handle. The values are written as given, without netCDF4's masking (plain arrays:
        the same bytes; its checks cost ~17 µs a variable, 0.2 ms a snapshot)."""
        if not self._records or self._records[0] is not self.nc:
            variables = self.nc.variables
            for var in variables.values():
                var.set_auto_maskandscale(False)
            expected = {name for name, var in variables.items()
                        if "time" in var.dimensions and name not in ("time", RECORD_CHECKSUM)}
            self._records = (self.nc, variables, expected)
        return self._records[1:]

    def _fail(self, exc: BaseException) -> None:
        """A snapshot could not be written: give the file back its complete records, then stop."""
        self.failed = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        try:
            self.nc.close()
        except Exception:  # its flush failed too (the same full disk)
            _abandon(self.nc)
        self.nc = None
        with contextlib.suppress(OSError):
            _cut_records(self.target, self.good_size, self.count)
        with contextlib.suppress(Exception):
            self.nc = netCDF4.Dataset(self.target, "a")
        raise WriteFailed(self.failed)

    def _create(self, record: xr.Dataset, size: int) -> None:
        """First snapshot: written by xarray (CF encoding) to a temporary file, then renamed
        (the name is claimed, so the target never exists half-made or unclaimed).

        Written by the netCDF-C library, as the later header edits: it was measured to move
        all the data at its first header edit of a file that scipy's writer made. (It writes
        the header in 8 KiB blocks: a small file ends in zeros until its records fill them.)"""
        first = record.copy()
        first.attrs.update(self.attrs)
        first = cf_encode(first)
        first.attrs.update(status=RUNNING, stop_reason=StopReason.RUNNING.value, running_note=self._note())
        # the checksums (module checksums): placeholders of their final size, filled in from the
        # bytes as written, before the file is published
        first[RECORD_CHECKSUM] = ("time", np.zeros(1, dtype=np.int32), RECORD_CHECKSUM_ATTRS)
        first.attrs[FIXED_CHECKSUM] = np.int32(0)
        first.attrs[ATTRIBUTE_CHECKSUM] = np.int32(0)
        first.attrs[CHECKSUMS] = RUN_FILE_CHECKSUMS  # a missing attribute_checksum is then damage
        first.attrs = {k: netcdf_attr(v) for k, v in first.attrs.items()}
        header = 4096 + sum(len(str(v)) + 64 for v in first.attrs.values())
        first_size = header + sum(int(v.nbytes) + 8 for v in first.variables.values())
        if self.snapshots:
            warning = disk_estimate(self.target, first_size + size * (self.snapshots - 1),
                                    f"output {str(self.target)!r} ({self.snapshots} snapshots)")
            if warning:
                warnings.warn(warning, DiskSpaceWarning, stacklevel=4)
        tmp = temporary(self.path)
        try:
            check_room(tmp, first_size)
            _store(first, tmp, FORMAT, unlimited_dims={"time"})
            _require_whole(tmp, first.variables)
            with netCDF4.Dataset(tmp, "a") as nc:
                seal_first_record(nc)
            # claimed before its name shows it: nobody reaches the file unclaimed (a hard link)
            self.file_claim = acquire_file(tmp)
            publish(tmp, self.target)
        except (OSError, RuntimeError) as exc:
            release_file(self.file_claim)
            self.file_claim = None
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise OutputFull(getattr(exc, "errno", None) or errno.EIO,
                             f"cannot write the first snapshot of {str(self.target)!r}: {reason}") from None
        finally:
            if tmp.exists():
                tmp.unlink()
        self.nc = netCDF4.Dataset(self.target, "a")
        self.good_size = os.path.getsize(self.target)

    def finish(self, status: str, reason: StopReason, attrs: dict | None = None) -> xr.Dataset:
        """Record the final status and ``stop_reason`` (and end-of-run attributes), close, and
        move into place.

        A replacement (``overwrite``) is renamed over the old file only if it
        completed (``reason.completed``). Returns the run's Dataset, read from this process's own
        open file (never from whatever the name holds by then), with
        ``encoding["source"]`` the path of the finished file.
        """
        if self.nc is None:
            raise RuntimeError("RunFile.finish before any snapshot was appended")
        try:
            # the note first (it frees the reserved header space; attribute_checksum leaves it
            # out, checksums.UNSEALED), then the end attributes with their checksum in one header
            # write (set_sealed): a kill at any moment leaves attributes that match it
            if "running_note" in self.nc.ncattrs():
                self.nc.delncattr("running_note")
            set_sealed(self.nc, {k: netcdf_attr(v) for k, v in {**(attrs or {}), **_end(status, reason)}.items()})
            self.nc.sync()
        except (OSError, RuntimeError):  # a full disk: the status is stored when possible
            pass
        ds = xr.open_dataset(xr.backends.NetCDF4DataStore(self.nc)).load()
        ds = trim_running_note(without_checksums(ds))  # they describe the file's bytes, not the run;
        # the note, left where a full disk kept it from being deleted, without its header padding
        ds.set_close(None)  # in memory now; the handle is closed below
        ds.attrs.update(_end(status, reason))
        self.close()
        final = self.target
        if reason.completed and self.file_format == "netcdf4-zlib":
            compress(self.target, self.path if self.target != self.path else None)
        if self.target != self.path and reason.completed:
            os.replace(self.target, self.path)
            final = self.path
        ds.encoding["source"] = str(final)
        from .grid_density import with_density
        return with_density(ds)

    def close(self) -> None:
        """Close and release the claim (without a final status, the file keeps status "running")."""
        if getattr(self, "nc", None) is not None:
            with contextlib.suppress(Exception):
                self.nc.close()
            self.nc = None
        release_file(getattr(self, "file_claim", None))  # after the last write, the netCDF close
        self.file_claim = None
        if getattr(self, "lock", None) is not None:
            release(self.lock)
            self.lock = None


TEXT_ENCODING = ("dtype", "char_dim_name", "_Encoding")  # how a netCDF-3 char variable is stored


def compress(path: Path, claimed_as: Path | None = None) -> None:
    """Rewrite a completed run file as netCDF-4 with zlib (level 4, byte shuffle) on its data
    variables (``output.format = "netcdf4-zlib"``), aside and renamed over it: a crash
    leaves the netCDF-3 file. The data and attributes are unchanged (coordinates still have
    no _FillValue). A write that does not fit keeps the netCDF-3 file (with a warning)."""
    tmp = temporary(claimed_as or path)
    try:
        with xr.open_dataset(path) as ds:
            ds.load()
        ds.encoding.pop("unlimited_dims", None)  # a finished file: chunks of many snapshots
        # Fletcher-32 on every chunked variable: HDF5 checks it on each read (module checksums)
        encoding = {name: ({"zlib": True, "complevel": 4, "shuffle": True, "chunksizes": _chunks(var)}
                           if name not in ds.coords and var.ndim else {}) | ({"fletcher32": True} if var.ndim else {})
                    for name, var in ds.variables.items()}
        # no _FillValue on numbers (module checksums): a chunk lost through HDF5's chunk index
        # reads as netCDF's default fill, which the readers refuse
        without_fill_values(ds)
        if CHECKSUMS in ds.attrs:  # the names of its checksums: HDF5's on every array now too
            ds.attrs[CHECKSUMS] = f"{RUN_FILE_CHECKSUMS} fletcher32"
        for name, var in ds.variables.items():  # the encoding argument replaces the variables' own
            if name in ds.coords or "_FillValue" in var.encoding:
                encoding[name]["_FillValue"] = None
            # text (a hand-off run's component label) stays a char array, as fixed_checksum took
            # its bytes; without these, xarray would store a variable-length string instead
            if var.dtype.kind in "OSU":
                encoding[name].update({k: var.encoding[k] for k in TEXT_ENCODING if k in var.encoding})
        _store(ds, tmp, "NETCDF4", encoding=encoding)
        if ATTRIBUTE_CHECKSUM in ds.attrs:  # rewritten by HDF5: sealed from its attributes as stored
            seal_file_attributes(tmp)
        publish(tmp, path)
    except (OSError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        warnings.warn(f"output.format = 'netcdf4-zlib': {str(path)!r} stays netCDF-3 ({reason})",
                      DiskSpaceWarning, stacklevel=2)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _chunks(var: xr.Variable, target: int = 4 * 2**20) -> tuple[int, ...]:
    """HDF5 chunks of about ``target`` bytes (compression works per chunk; one chunk per
    snapshot compresses worse, one per variable could pass HDF5's 4 GiB chunk limit)."""
    if "time" not in var.dims:
        return var.shape
    per_snapshot = max(1, var.nbytes // max(1, var.sizes["time"]))
    steps = int(min(var.sizes["time"], max(1, target // per_snapshot)))
    return tuple(steps if d == "time" else n for d, n in zip(var.dims, var.shape))


def _header_bytes(name: str, value) -> int:
    """Bytes of one global attribute in a netCDF-3 header: name (length and text padded to 4),
    type, count, and the values padded to 4 (NetCDF Classic Format Specification, attr_list)."""
    def pad(n: int) -> int:
        return -(-n // 4) * 4
    data = value.encode("utf-8") if isinstance(value, str) else np.asarray(value).tobytes()
    return 4 + pad(len(name.encode("utf-8"))) + 4 + 4 + pad(len(data))


def _end(status: str, reason: StopReason) -> dict:
    """The end-of-run attributes: the text for people, the reason for code."""
    return {"status": status, "stop_reason": StopReason(reason).value}


def _abandon(nc: netCDF4.Dataset) -> None:
    """Keep a Dataset whose ``close`` failed alive for good (one file handle leaked).

    netCDF-C releases the file's handle even when ``nc_close`` fails (its last flush, on a full
    disk or over the file-size limit), but netCDF4-python still counts the file as open and
    calls ``nc_close`` on the freed handle again when the object is collected (or at exit):
    measured to be a segfault. An extra reference means it is never collected."""
    import ctypes
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(nc))


def _cut_records(path: Path, size: int, records: int) -> None:
    """Give a netCDF-3 (64-bit offset) file back exactly its first ``records`` records, ``size``
    bytes, after a failed write: the record count is the big-endian int32 at byte 4 (CDF-2).

    Crash-safe: the count is on disk before the file is cut (both synced), so an end at any
    moment leaves either the old file or a valid one of ``records`` records (with the dropped
    records' bytes after them, unread: readers take the count, and the next append overwrites
    them); never a count larger than the file holds."""
    with open(path, "r+b") as f:
        if f.read(4) != b"CDF\x02":
            return
        f.write(records.to_bytes(4, "big"))
        f.flush()
        os.fsync(f.fileno())
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())


def drop_records(path: Path, keep: int) -> None:
    """Cut the netCDF-3 (64-bit offset) run file ``path`` back to its first ``keep`` records in
    place (``1 <= keep`` <= its records), crash-safely (``_cut_records``), with the file
    claimed (:func:`meanfield_pde.runs.outputs.hold_file`).

    The file's size with ``keep`` records is the start of its record section plus ``keep``
    record sizes (netCDF classic format specification: ``begin`` of the first record variable,
    ``recsize`` the sum of the record variables' ``vsize``), read from the header by scipy's
    reader, which knows both (its private ``_recsize``; the start from its memory map).

    Raises
    ------
    ConfigError
        Not a 64-bit-offset file, or ``keep`` out of range, or another process writes the
        file (nothing changed).
    """
    from scipy.io import netcdf_file
    with hold_file(path):  # before reading the layout the cut relies on (the caller may hold it)
        with open(path, "rb") as f:
            if f.read(4) != b"CDF\x02":
                raise ConfigError(f"{str(path)!r}: only a netCDF-3 64-bit-offset run file can be cut")
        with netcdf_file(path, "r", mmap=True, maskandscale=False) as f:
            count, recsize = int(f._recs), int(f._recsize)
            first = next(v for v in f.variables.values() if v.isrec)  # header order: its data start
            begin = first.data.ctypes.data - f._mm_buf.ctypes.data    # the record section
            del first
        if not 1 <= keep <= count or begin <= 0:
            raise ConfigError(f"{str(path)!r}: cannot keep {keep} of its {count} snapshots")
        _cut_records(path, begin + keep * recsize, keep)


class MemoryRun:
    """The in-memory counterpart of :class:`RunFile` (a run without an output file)."""

    def __init__(self, attrs: dict | None = None):
        self.attrs = dict(attrs or {})
        self.records: list[xr.Dataset] = []

    def append(self, record: xr.Dataset) -> None:
        self.records.append(record)

    def record_attributes(self, attrs: dict) -> bool:
        """As :meth:`RunFile.record_attributes`: nothing to keep for a run without a file."""
        return False

    def finish(self, status: str, reason: StopReason, attrs: dict | None = None) -> xr.Dataset:
        ds = xr.concat(self.records, dim="time", data_vars="minimal", coords="minimal",
                       compat="override", join="override", combine_attrs="override")
        ds.attrs.update({k: netcdf_attr(v) for k, v in {**self.attrs, **(attrs or {}), **_end(status, reason)}.items()})
        return ds
