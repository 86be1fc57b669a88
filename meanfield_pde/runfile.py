"""Where a run's snapshots go as they are computed: a crash-safe netCDF file, or memory.

A run file is appended one snapshot (a one-time Dataset from
:func:`meanfield_pde.io.snapshots_to_dataset`) at a time along an unlimited
``time`` dimension and synced after each, so a run killed at any moment
(even by SIGKILL) leaves a file that ``xarray.open_dataset`` reads with every
snapshot completed so far. The format is netCDF-3 64-bit offset (written by
the netCDF4 library, the default xarray engine): a record is counted in the
header only after its data are on disk, while HDF5-based netCDF-4 files were
measured to expose a half-written last record after about 1 kill in 100.

While the run is going, ``status`` is "running" and the attribute
``running_note`` explains what to do if no process writes the file any more;
:meth:`RunFile.finish` replaces both by the final status. The note is padded
to a fixed size so that header edits (finish, resume) never outgrow the
header: netCDF-3 would otherwise move all the data on disk.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

from .errors import ConfigError
from .io import check_output_path

FORMAT = "NETCDF3_64BIT_OFFSET"
RUNNING = "running"
NOTE_SIZE = 2048  # bytes reserved in the header for the final status and other end-of-run attributes
_NOTE = ("This file is being written by a running meanfield-pde process, or that process was killed "
         "(SIGKILL, power loss, out of memory) before it could record why it stopped. Every snapshot "
         "in the file is complete. Continue the run with: meanfield-pde run --resume {path}")


def partial_path(path: Path) -> Path:
    """Where a run that replaces an existing file writes until it ends (renamed over ``path`` then)."""
    return path.with_name(f"{path.stem}.partial.nc")


def _attr(value):
    """A global attribute value netCDF-3 can hold (no int64, no bool).

    An integer outside int32 (a seed of 3000000000 or 2**64 + 5) is stored as its
    exact decimal text: as a float it would come back rounded (and as 3000000000.0).
    """
    if isinstance(value, (bool, np.bool_)):
        return np.int32(value)
    if isinstance(value, (int, np.integer)):
        return np.int32(value) if abs(int(value)) < 2**31 else str(int(value))
    return value


class RunFile:
    """A run's netCDF file, appended and synced snapshot by snapshot.

    While a process writes the file it holds an exclusive lock on it
    (``fcntl.flock``), so a second process cannot resume or append to it.

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

    Raises
    ------
    ConfigError
        From :func:`meanfield_pde.io.check_output_path`, or a partial file of
        an earlier replacement that was never finished; before anything is written.
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False, attrs: dict | None = None):
        self.path = check_output_path(path, overwrite=overwrite)
        self.target = partial_path(self.path) if self.path.exists() else self.path
        if self.target != self.path and self.target.exists():
            raise ConfigError(f"output {str(self.path)!r}: {str(self.target)!r} holds an unfinished "
                              f"replacement of it; continue it with --resume {self.target} or delete it")
        self.attrs = dict(attrs or {})
        self.nc: netCDF4.Dataset | None = None
        self.lock: int | None = None
        self.count = 0

    @classmethod
    def reopen(cls, path: str | os.PathLike) -> RunFile:
        """Open an existing run file to append to it (``--resume``); status goes back to running.

        A partial file (``X.partial.nc``) replaces ``X.nc`` when the resumed run completes.

        Raises
        ------
        ConfigError
            If another process is writing the file.
        """
        self = cls.__new__(cls)
        self.target = Path(path)
        name = self.target.name
        self.path = (self.target.with_name(name[:-len(".partial.nc")] + ".nc")
                     if name.endswith(".partial.nc") else self.target)
        self.lock = _lock(self.target)
        self.nc = netCDF4.Dataset(self.target, "a")
        self.attrs = self.nc.__dict__.copy()
        self.count = len(self.nc.dimensions["time"])
        self.nc.setncatts({"status": RUNNING, "running_note": self._note()})
        self.nc.sync()
        return self

    def _note(self) -> str:
        # padded: the reserve that keeps later header edits in place (module docstring)
        return _NOTE.format(path=self.target).ljust(NOTE_SIZE)

    def append(self, record: xr.Dataset) -> None:
        """Add one snapshot (a Dataset with time of length 1) and sync it to disk."""
        if self.nc is None:
            self._create(record)
        else:
            i = self.count
            for name, var in record.variables.items():
                if "time" in var.dims and name != "time":
                    self.nc.variables[name][i, ...] = var.values[0]
            self.nc.variables["time"][i] = record["time"].values[0]  # last: the record is complete
            self.nc.sync()
        self.count += 1

    def _create(self, record: xr.Dataset) -> None:
        """First snapshot: written by xarray (CF encoding) to a temporary file, locked, then
        renamed, so the target never exists half-made or unlocked."""
        first = record.copy()
        first.attrs.update(self.attrs)
        first.attrs.update(status=RUNNING, running_note=self._note())
        first.attrs = {k: _attr(v) for k, v in first.attrs.items()}
        self.target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".nc", prefix=".meanfield-pde.", dir=self.target.parent)
        os.close(fd)
        try:
            first.to_netcdf(tmp, format=FORMAT, engine="netcdf4", unlimited_dims=["time"])
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files
            self.lock = _lock(Path(tmp))
            os.replace(tmp, self.target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.nc = netCDF4.Dataset(self.target, "a")

    def finish(self, status: str, attrs: dict | None = None) -> Path:
        """Record the final status (and end-of-run attributes), close, and move into place.

        A replacement (``overwrite``) is renamed over the old file only if
        it completed. Returns the path of the finished file.
        """
        if self.nc is None:
            raise RuntimeError("RunFile.finish before any snapshot was appended")
        self.nc.delncattr("running_note")  # frees the reserved header space first
        self.nc.setncatts({k: _attr(v) for k, v in {**(attrs or {}), "status": status}.items()})
        self.close()
        if self.target != self.path and status == "completed":
            os.replace(self.target, self.path)
            return self.path
        return self.target

    def close(self) -> None:
        """Close and unlock (without a final status, the file keeps status "running")."""
        if self.nc is not None:
            self.nc.close()
            self.nc = None
        if self.lock is not None:
            os.close(self.lock)  # releases the flock
            self.lock = None


def _lock(path: Path) -> int:
    """An exclusive advisory lock on ``path`` (kept while the returned descriptor is open).

    Raises
    ------
    ConfigError
        If another process holds it: that process is writing the file.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(f"{str(path)!r} is being written by a running meanfield-pde process; "
                          "wait for it to end (or stop it) before resuming") from None
    return fd


class MemoryRun:
    """The in-memory counterpart of :class:`RunFile` (a run without an output file)."""

    def __init__(self, attrs: dict | None = None):
        self.attrs = dict(attrs or {})
        self.records: list[xr.Dataset] = []

    def append(self, record: xr.Dataset) -> None:
        self.records.append(record)

    def finish(self, status: str, attrs: dict | None = None) -> xr.Dataset:
        ds = xr.concat(self.records, dim="time", data_vars="minimal", coords="minimal",
                       compat="override", join="override", combine_attrs="override")
        ds.attrs.update({k: _attr(v) for k, v in {**self.attrs, **(attrs or {}), "status": status}.items()})
        return ds
