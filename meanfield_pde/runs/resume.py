"""Where an interrupted run file can be continued from (``meanfield-pde run --resume``).

The snapshots are the checkpoints: a run restarts from its last snapshot at
a regular output time (a multiple of output.every, or t_end). A snapshot
recorded when a run stopped between output times (the last good state of an
interrupted run) stays in the file but is not a restart point: the
uninterrupted run never passed through that state with the same steps.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config, from_dict, parse_toml, time_unit
from ..core.errors import ConfigError, NotARunError
from ..core.model_kinds import model_kind
from ..core.stops import StopReason, stop_reason
from .checksums import DamagedSnapshot
from .runcheck import NOT_A_RUN_FILE, is_run_file, open_checked

RESUMABLE_KEYS = ("time.t_end",)
# The PDE and the limit models are in divergence form: they never change the l = 0
# coefficient, so the mass of a snapshot differs from the first one's only by round-off
# (about 1e-16 per step); a larger difference is an edited or damaged file, not physics.
MASS_RTOL = 1e-6


def _regular(t: float, every: float, t_end: float) -> bool:
    """t is an output time n·every (to the solver's own rounding) or t_end."""
    if not every > 0.0:
        return t == 0.0
    k = t / every
    return abs(k - round(k)) <= 1e-9 * max(1.0, k) or math.isclose(t, t_end, rel_tol=1e-12)


FLAG = "--drop-damaged"  # run's flag that cuts a damaged file back (runs/salvage.py)


def dropped(damaged: DamagedSnapshot) -> str:
    """What cutting at ``damaged`` drops: "snapshots 3 to 4 (t = 0.75 to 1)" (times as stored)."""
    i, last = damaged.index, damaged.count - 1
    times = (f" (t = {damaged.times[i]:.6g} to {damaged.times[last]:.6g})"
             if damaged.times is not None else "")
    return f"snapshots {i} to {last}{times}"


def resume_where(path, cli: bool) -> str:
    """How a resume's messages name the file: the command line's "--resume 'r.nc'", the Python
    API's "resume: path = 'r.nc'" (:func:`meanfield_pde.resume`'s argument)."""
    return f"--resume {str(path)!r}" if cli else f"resume: path = {str(path)!r}"


def drop_words(cli: bool) -> str:
    """What cuts a damaged file back: the command line's ``--drop-damaged`` flag, or the
    Python API's ``drop_damaged=True``."""
    return FLAG if cli else "drop_damaged=True"


def drop_hint(path: Path, damaged: DamagedSnapshot, cli: bool = True) -> str:
    """The end of a resume's message for a damaged snapshot: the command (``cli``) or the call
    (Python) that goes on from the intact snapshots before it
    (:mod:`meanfield_pde.runs.salvage`) and what it drops; "" if the first snapshot is damaged."""
    if damaged.index == 0:
        return ""
    if not cli:
        return (f"; to continue from snapshot {damaged.index - 1}, call: "
                f"meanfield_pde.resume({str(path)!r}, drop_damaged=True) (drops {dropped(damaged)})")
    from .outputs import shell_word
    return (f"; to continue from snapshot {damaged.index - 1}, run: meanfield-pde run --resume "
            f"{shell_word(path)} {FLAG} (drops {dropped(damaged)})")


def recurring_stop(attrs) -> str | None:
    """Why a stopped run would stop again at the same point if resumed, or None.

    A run is continued from its last regular snapshot by the same steps, so a
    stop caused by the solution itself (lost resolution, non-finite values,
    step-size failure) recurs; an interruption, a full disk or the step
    budget of one session do not (:attr:`StopReason.recurs`). ``attrs``: the
    run file's attributes (its ``stop_reason``).
    """
    reason = stop_reason(attrs)
    if not reason.recurs:
        return None
    return f"stopped ({reason.value}: {attrs.get('status', '')})"


def resume_point(path: str | Path, t_end: float | None = None, *,
                 cli: bool = False) -> tuple[Config, xr.Dataset, int]:
    """The case of a run file, the opened file and the index of its restart snapshot.

    Parameters
    ----------
    path : run file (.nc) written by meanfield-pde
    t_end : float, optional
        New final time, to extend a run (must exceed the last stored time).
    cli : bool
        Word the messages for the command line (``--resume FILE``, ``--set time.t_end=``,
        ``--drop-damaged``); else for the Python API (``resume: path = ...``, ``t_end=``,
        ``drop_damaged=True``).

    Returns
    -------
    (Config, xarray.Dataset, int)
        The stored case (with t_end replaced), the open Dataset (the caller
        closes it) and the index of the snapshot to restart from.

    Raises
    ------
    ConfigError
        File missing, unreadable, damaged or read-only
        (:func:`meanfield_pde.runs.runcheck.open_checked`; a damaged snapshot after the first:
        the message ends with the ``--drop-damaged`` command that goes on from the intact
        ones before it, :func:`drop_hint`), not a run of this tool
        (no ``case`` attribute), completed without a larger t_end, stopped for
        a reason that would recur (:func:`recurring_stop`), no restart snapshot.
    """
    path = Path(path)
    where = resume_where(path, cli)
    try:
        ds = open_checked(path, where, netcdf4=False)  # damaged files are refused untouched
    except DamagedSnapshot as exc:  # the fix: go on from the intact snapshots before it
        raise ConfigError(f"{exc}{drop_hint(path, exc, cli)}") from None
    try:
        require_writable(path, where)
        if not is_run_file(ds.attrs):
            raise ConfigError(f"{where}: {NOT_A_RUN_FILE}")
        try:
            reason = stop_reason(ds.attrs)
        except NotARunError as exc:
            raise NotARunError(f"{where}: {exc}") from None
        data = parse_toml(str(ds.attrs["case"]), f"{path} (attribute 'case')")
        name = str(ds.attrs.get("case_name", path.stem))
        stored = from_dict(data, name=name)
        if stored.handoff.enabled and reason.completed:
            # its end is handoff.t_end, which a resumed run cannot change (time.t_end is the
            # latest hand-off time there: a larger one only contradicts handoff.t_end)
            larger = 10 * stored.handoff.t_end
            example = (f"--set handoff.t_end={larger:g}" if cli else
                       f"meanfield_pde.load_case(CASE, {{'handoff.t_end': {larger:g}}})")
            raise ConfigError(f"{where}: the hand-off run is completed (handoff.t_end = "
                              f"{stored.handoff.t_end:g}) and cannot be extended; run its case again "
                              f"with a larger handoff.t_end, e.g. {example}")
        if t_end is not None:
            data.setdefault("time", {})["t_end"] = t_end
        config = from_dict(data, name=name)
        if config.kind == "limit" and "tau" not in ds.coords:
            raise ConfigError(f"{where}: a limit run written by an earlier version (its time axis is "
                              "tau; limit files now store the natural time and tau): run its case "
                              "again under a new output name")
        times = ds.time.values / time_unit(config)  # in the case's time unit
        if t_end is not None and not t_end > times[-1]:
            raise ConfigError(f"{'time.t_end' if cli else 'resume: t_end'} = {t_end}: must exceed the "
                              f"last stored time {times[-1]:g} to extend a run")
        refuse_recurring(ds.attrs, where, cli)
        if reason.completed and t_end is None:
            longer = 2 * times[-1] if times[-1] > 0 else 1.0  # a run to t_end = 0: 2 t_end is 0
            if cli:
                hint = f"give a larger time.t_end, e.g. --set time.t_end={longer:g}"
            else:
                hint = f"give a larger t_end, e.g. meanfield_pde.resume({str(path)!r}, t_end={longer:g})"
            raise ConfigError(f"{where}: the run is completed (t_end = {times[-1]:g}); to extend it {hint}")
        every = config.snapshot_interval
        regular = [i for i, t in enumerate(times) if _regular(float(t), every, stored.time.t_end)]
        if not regular:
            raise ConfigError(f"{where}: no snapshot at an output time to restart from")
        return config, ds, regular[-1]
    except BaseException:
        ds.close()
        raise


LMAX_LIMIT = 1023  # the largest domain.lmax a case takes (config.sections.DomainConfig)


def rerun_change(attrs) -> tuple[str, float | int, str] | None:
    """What to run a case again with after a stop that would recur (:func:`recurring_stop`):
    (key, value, words) of one --set item, from the stored case in ``attrs`` (the run file's
    attributes), or None (not such a stop, an unreadable case, nothing left to raise).

    A token run stopped by non-finite positions: half the particles.dt. A fixed-step PDE run
    (time.adaptive = false): half the time.dt (its first rejected step stops it). SA on the
    zonal sphere stopped by a numerical fault: None (its Φ may have left float64's range,
    which a lower model.beta mends and a larger lmax does not: its status says which).
    Otherwise (lost resolution, non-finite values, a non-positive density, error control that
    fails or a step size that underflows: a solution finer than the grid) domain.lmax raised by
    half. A resume cannot take any of these: it continues the same case (only time.t_end
    changes).
    """
    reason = stop_reason(attrs)
    if not reason.recurs:
        return None
    try:
        config = from_dict(parse_toml(str(attrs["case"]), "case"))
    except (KeyError, ConfigError):
        return None
    if (reason is StopReason.NUMERICAL_FAULT and model_kind(config.model.kind).normalised
            and config.domain.manifold == "sphere_zonal"):
        return None
    if str(attrs.get("kind", config.kind)) == "particles":
        dt = config.particles.dt or config.time.dt
        return "particles.dt", dt / 2, "a smaller particles.dt"
    if not config.time.adaptive:
        return "time.dt", config.time.dt / 2, "a smaller time.dt"
    lmax = config.domain.lmax
    if lmax >= LMAX_LIMIT:
        return None
    return ("domain.lmax", min(LMAX_LIMIT, lmax + max(lmax // 2, 1)),
            "a larger domain.lmax (or noise, model.nu, or hyperviscosity)")


def rerun_words(attrs, cli: bool = True) -> str:
    """"run its case again with ..., e.g. --set KEY=VALUE" (``cli``) or the Python API's
    override, for a stop that would recur (:func:`rerun_change`)."""
    change = rerun_change(attrs)
    if change is None:
        return ("run its case again with the change its status names (a larger domain.lmax, "
                "noise or hyperviscosity; a lower model.beta where Φ left float64's range)")
    key, value, words = change
    example = f"--set {key}={value:g}" if cli else f"meanfield_pde.load_case(CASE, {{{key!r}: {value:g}}})"
    return f"run its case again with {words}, e.g. {example}"


def refuse_recurring(attrs, where: str, cli: bool = True) -> None:
    """ConfigError if the stored run would stop at the same point again when resumed
    (:func:`recurring_stop`: its restart point precedes the stop, the same steps reach it),
    saying what to change instead (:func:`rerun_words`)."""
    recurring = recurring_stop(attrs)
    if recurring:
        raise ConfigError(f"{where}: the run {recurring}; resuming it would stop there again: "
                          f"{rerun_words(attrs, cli)}, under a new output name")


def require_writable(path: Path, where: str) -> None:
    """A run file to resume (or cut, ``--drop-damaged``) and its folder are writable, and the
    file is below the process's file-size limit (``ulimit -f``), else a ConfigError: a resumed
    run appends to the file. The mode bits too: root may write anyway, but a file made
    read-only is meant to stay as it is."""
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK) \
            or not path.stat().st_mode & stat.S_IWUSR:
        raise ConfigError(f"{where}: the file or its folder is read-only; a resumed run appends "
                          "to the file (make it writable, or copy it and resume the copy)")
    from .outputs import file_size_limit
    limit, size = file_size_limit(), path.stat().st_size
    if limit is not None and size >= limit:
        # every write would fail: the first, the header's new status, was measured to land
        # cut short, its attributes without their checksum (the file then refused as damaged)
        raise ConfigError(f"{where}: the file ({size} bytes) is not below the file-size limit "
                          f"(ulimit -f) of {limit} bytes; a resumed run writes to it: raise the limit")


def unphysical_restart(monitor, mass: float, first_mass: float) -> str | None:
    """Why the restart state of a PDE or limit run is not a state the run can have reached, or None.

    The checks of the run itself: the resolution monitor's (finite, spectral tail, density not
    below its negativity floor; :class:`meanfield_pde.numerics.diagnostics.ResolutionMonitor`,
    called by the caller and passed as ``monitor``: its reason or None) and mass conservation
    (``mass`` of the restart state against ``first_mass`` of the file's first snapshot, relative
    tolerance ``MASS_RTOL``). A finite absurd value (an edited 1e300) passes the file's
    finiteness checks but not these.
    """
    if monitor is not None:
        return monitor
    if not (math.isfinite(mass) and math.isfinite(first_mass)
            and abs(mass - first_mass) <= MASS_RTOL * abs(first_mass)):
        return (f"its mass {mass:.6g} differs from the first snapshot's {first_mass:.6g} "
                f"(the equation conserves mass; relative tolerance {MASS_RTOL:g})")
    return None


def resume_overrides(overrides) -> float | None:
    """The new t_end from ``--set`` items given with --resume (only time.t_end may change).

    Raises
    ------
    ConfigError
        For any other key: a resumed run must be the same run.
    """
    from .config import parse_override
    t_end = None
    for item in overrides or ():
        keys, value = parse_override(item)
        key = ".".join(keys)
        if key not in RESUMABLE_KEYS:
            raise ConfigError(f"--set {key}: with --resume only {', '.join(RESUMABLE_KEYS)} may change "
                              "(a resumed run continues the same case)")
        if key == "time.t_end":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ConfigError(f"time.t_end = {value!r}: must be a finite number")
            t_end = float(value)
    return t_end
