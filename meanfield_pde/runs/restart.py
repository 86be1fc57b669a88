"""``resume``: continue a run file through the kind of run that wrote it (one table).

The snapshots are the checkpoints (:mod:`meanfield_pde.runs.resume`); the kind
is the one stored in the file (:func:`meanfield_pde.runs.session.stored_kind`)
and :data:`~meanfield_pde.runs.restart.RESUMABLE` names the run kind that continues it.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from ..core.checks import check_path
from ..core.errors import ConfigError
from .handoff_run import HANDOFF
from .particle_runner import PARTICLES
from .runner import PDE
from .session import RunKind, resume_file

RESUMABLE: dict[str, RunKind] = {"pde": PDE, "limit": PDE, "particles": PARTICLES, "handoff": HANDOFF}
"""Run kind stored in a file (:attr:`~meanfield_pde.runs.config.case.Config.kind` values) → the
kind that continues it. A comparison writes a PDE file and a token file (each resumed as
such); a transformer study writes one finished Dataset, not resumable."""


def resume(path: str | Path, progress: bool | None = None, t_end: float | None = None,
           drop_damaged: bool = False) -> xr.Dataset:
    """Continue the run stored in ``path`` (interrupted, killed or stopped) to its t_end.

    The run restarts from the last snapshot at a regular output time (the
    snapshot files are the checkpoints) and appends to the same file. With
    a fixed step the result equals the uninterrupted run bit for bit; with
    adaptive steps, to the step tolerance. PDE, limit-model and particle run
    files are continued alike (:data:`~meanfield_pde.runs.restart.RESUMABLE`; particles bit for bit too).

    Parameters
    ----------
    path : path of a file written by :func:`meanfield_pde.run` / ``meanfield-pde run``
    progress : bool or None
        Progress bar of a PDE run; None shows it only on a terminal.
    t_end : float, optional
        A new final time (to extend a completed run); must exceed the file's.
    drop_damaged : bool
        (``--drop-damaged``) If a snapshot fails its checksum, first cut the file back to
        the intact snapshots before it, dropping it and every later one, and record that in
        ``history`` (:func:`meanfield_pde.runs.salvage.drop_damaged`; warns a
        ``SnapshotsDroppedWarning``); then continue as without it. An intact file is
        continued unchanged.

    Raises
    ------
    ConfigError
        Another process writes the file; a damaged file (refused untouched,
        :func:`meanfield_pde.runs.runcheck.open_checked`; with ``drop_damaged``, damage
        other than a snapshot after the first); not a run file of this
        tool, a completed run without a larger t_end, a stop that would recur
        (:func:`meanfield_pde.runs.resume.recurring_stop`), no regular snapshot
        to restart from, or a file of a kind that cannot be resumed; ``path`` not a str or
        os.PathLike, ``drop_damaged`` not a bool.
    """
    check_path("resume: path", path, "the path of a run file")
    if not isinstance(drop_damaged, bool):
        raise ConfigError(f"resume: drop_damaged = {drop_damaged!r}: must be True or False")
    return resume_file(path, RESUMABLE, t_end, progress, drop_damaged)
