"""Continue a run from the intact part of a damaged run file (``run --resume FILE --drop-damaged``).

A snapshot of a netCDF-3 run file that fails its ``record_checksum`` (a crash, a bad disk, a
flipped byte: :mod:`meanfield_pde.runs.checksums`) makes ``--resume`` refuse the file. The
snapshots before it are intact, and a run's snapshots are a prefix of its time axis, so the
file can go on from the last of them: :func:`drop_damaged` cuts the file back to its first
``i`` snapshots, ``i`` the first damaged one (every later snapshot goes too, intact or not),
records what it dropped in ``history`` and sets the file's status back to running; the resume
then continues it as from any interrupted run (:func:`meanfield_pde.runs.session.resume_file`).

Crash-safe in two steps, each leaving a valid file: (1) the attributes (history line, status
"running", sealed by ``attribute_checksum``), edited in place as a resume edits them; a crash
after it leaves the damaged snapshot in the file, which is refused as before and cut by the
same command again; (2) the cut (:func:`meanfield_pde.runs.runfile.drop_records`: the record
count, synced, then the length). Damage it cannot cut around (the header, the global
attributes, the variables without time, the first snapshot) is refused, the file untouched.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..core.errors import ConfigError, SnapshotsDroppedWarning
from .checksums import RECORD_CHECKSUM, DamagedSnapshot
from .outputs import hold_file
from .resume import FLAG, drop_words, dropped, refuse_recurring, require_writable
from .runcheck import (NETCDF3_MAGIC, NOT_A_RUN_FILE, is_run_file, read_attributes, require_file,
                       verify_checksums)


def cannot(cli: bool = True) -> str:
    """The end of the message for damage the cut cannot go around (``cli``: named by the
    command line's flag, else by resume's argument drop_damaged=True)."""
    return (f"{drop_words(cli)} drops only damaged snapshots after the first (and every later one): "
            "it cannot cut around this")


def drop_damaged(path: str | Path, where: str, *, cli: bool = True) -> str | None:
    """Cut the run file ``path`` after its last intact snapshot before the first damaged one
    (module docstring); the caller holds the file's name claim and resumes it afterwards; the
    file itself is claimed here (:func:`meanfield_pde.runs.outputs.hold_file`).

    Parameters
    ----------
    path : a netCDF-3 run file of meanfield-pde
    where : str
        How messages name it, e.g. "--resume 'r.nc'".
    cli : bool
        Name the cut by the command line's ``--drop-damaged`` in messages (else by
        :func:`meanfield_pde.resume`'s ``drop_damaged=True``).

    Returns
    -------
    str or None
        The ``history`` line recording what was dropped (also warned as a
        :class:`~meanfield_pde.core.errors.SnapshotsDroppedWarning`); None if no snapshot fails its checksum (nothing is
        changed: the resume's own checks apply), also for a netCDF-4 copy or a file without
        record checksums.

    Raises
    ------
    ConfigError
        Damage it cannot cut around (header, length, global attributes, the variables without
        time, the first snapshot); not a run file; a stop that would recur
        (:func:`meanfield_pde.runs.resume.recurring_stop`); a read-only file or folder. The
        file is untouched then.
    """
    path = require_file(path, where)
    with hold_file(path, where):  # before the checks that the cut relies on (re-entrant)
        return _drop_damaged(path, where, cli)


def _drop_damaged(path: Path, where: str, cli: bool = True) -> str | None:
    """:func:`drop_damaged` of a file this process claims."""
    import netCDF4

    from .cf import now_iso
    from .runfile import drop_records, mark_running
    with open(path, "rb") as f:
        magic = f.read(8)
    try:
        attrs = read_attributes(path, where)  # format and length
        if magic[:4] not in NETCDF3_MAGIC:
            return None  # a netCDF-4 copy: resume_point refuses it, saying why
        verify_checksums(path, where, magic)
        return None
    except DamagedSnapshot as exc:
        damaged = exc
    except ConfigError as exc:
        raise ConfigError(f"{exc}; {cannot(cli)}") from None
    if damaged.index == 0:
        raise ConfigError(f"{damaged}; {cannot(cli)}")
    if magic[:4] != b"CDF\x02":  # the record count's place and size (drop_records): checked before any change
        raise ConfigError(f"{damaged}; {drop_words(cli)} cuts only the 64-bit-offset netCDF-3 files that meanfield-pde "
                          "writes (convert it with: nccopy -k '64-bit offset' IN OUT)")
    if not is_run_file(attrs):
        raise ConfigError(f"{where}: {NOT_A_RUN_FILE}")
    refuse_recurring(attrs, where, cli)  # the status is replaced below: refused as resume_point would, first
    require_writable(path, where)
    what = (f"dropped {dropped(damaged)} of {damaged.count}: snapshot {damaged.index} failed its "
            f"checksum ({RECORD_CHECKSUM}), the later ones follow it; snapshots 0 to "
            f"{damaged.index - 1} are kept")
    line = f"{now_iso()} meanfield-pde run {FLAG}: {what}"
    with netCDF4.Dataset(path, "a") as nc:  # (1): a crash after it leaves the damage, refused
        mark_running(nc, path, line)
    drop_records(path, damaged.index)  # (2)
    warnings.warn(f"{str(path)!r}: {what}", SnapshotsDroppedWarning, stacklevel=3)  # drop_damaged's caller
    return line
