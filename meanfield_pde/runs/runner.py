"""Case → PDE run → Dataset: the simulation (:mod:`meanfield_pde.runs.simulation`) advanced with
its observers (the "pde" and "limit" run kinds of :mod:`meanfield_pde.runs.session`); a case with
``[handoff]`` continues as weighted particles (:mod:`meanfield_pde.runs.handoff_run`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config, time_unit
from .config.kinds import RUN_FUNCTIONS
from ..core.errors import ConfigError
from .io import snapshot_values, snapshots_to_dataset
from ..numerics.observers import ProgressBar, SnapshotRecorder
from .session import Outcome, RunKind, start_run
from .simulation import Simulation, build, run_attributes, solver_clock, tau_unit_name
from ..numerics.solver import RunResult, integrate
from ..numerics.stationary import StationaryStop

__all__ = ["run", "build", "PDE", "PDERun", "planned_snapshots"]  # build: mf.build, from simulation


def run(config: Config, output: str | Path | None = None, progress: bool | None = None, *,
        overwrite: bool = False, initial: np.ndarray | xr.Dataset | str | Path | None = None,
        time: float | None = None, exact: bool = False, force: bool = False) -> xr.Dataset:
    """Run a validated case and return its Dataset (:ref:`dataset-contract`); write it if ``output``.

    Parameters
    ----------
    config : Config
        From :func:`meanfield_pde.load_case` or :func:`meanfield_pde.runs.config.validation.from_dict`.
    output : path, optional
        netCDF file, appended and synced at every snapshot
        (:class:`meanfield_pde.runs.runfile.RunFile`), so an interrupted or killed
        run keeps everything computed; continue it with :func:`~meanfield_pde.runs.restart.resume`.
    progress : bool or None
        Progress bar; None shows it only on a terminal.
    overwrite : bool, keyword-only
        Replace an existing ``output`` (only once the new run has ended).
    initial : ndarray (ncoef,) (or a list), Dataset or path of a run file, optional, keyword-only
        Start from these coefficients (degree 0 positive: a mass), or from a stored snapshot
        of a PDE or limit run
        (:func:`meanfield_pde.runs.dataset.initial_coefficients`: same manifold and lmax,
        the package's coefficient conventions), instead of the case's [initial] section.
        The new run's time starts at 0 (the equation is autonomous: its state at time t is
        the stored run's at ``time`` + t, to the step tolerance).
    time : float, optional, keyword-only
        The snapshot of ``initial`` to start from: the nearest stored time (default: the last).
    exact : bool, keyword-only
        Refuse ``time`` unless a snapshot lies at it (to 1e-9 relative).
    force : bool, keyword-only
        Run even if the memory, disk or time estimate is refused (:mod:`meanfield_pde.runs.budget`).

    Returns
    -------
    xarray.Dataset
        ``ds.attrs['status']`` is "completed" or "stopped: <reason>" (a
        RunStoppedWarning is issued for the latter); ``ds.attrs['stop_reason']``
        the :class:`meanfield_pde.core.stops.StopReason` value ("completed",
        "stationary", "resolution_lost", ...).

    Raises
    ------
    ConfigError
        A case whose ``run.kind`` is not "pde" or "limit" (the message names the function
        that runs it); bad output path, an existing output without ``overwrite``, an
        unresolved initial density, an ``initial`` run that does not fit the case or has no
        snapshot at ``time``, or (without ``force``) a resource estimate
        beyond the machine or the caps; raised before anything is written.
    """
    if not isinstance(config, Config):  # refused before its sections are read below
        from .budget import check_run_arguments
        check_run_arguments(config, overwrite)
    if config.kind not in ("pde", "limit"):  # else a PDE ran silently under the case's other kind
        raise ConfigError(f"run.kind = {config.kind!r}: run() integrates the PDE (run.kind 'pde' "
                          f"or 'limit'); run this case with {RUN_FUNCTIONS[config.kind]}")
    if isinstance(initial, (list, tuple)):  # array_like coefficients, not a path
        initial = np.asarray(initial)
    if initial is not None and not isinstance(initial, np.ndarray):
        from .dataset import initial_coefficients
        initial = initial_coefficients(config, initial, time, exact)
    elif time is not None:
        raise ConfigError("time: selects a snapshot of a stored run; give that run as initial=")
    kind = PDE
    if config.handoff.enabled:  # continued past lost resolution as weighted particles
        from .handoff_run import HANDOFF as kind
    return start_run(kind, config, output, overwrite=overwrite, force=force, progress=progress,
                     initial=initial)


def planned_snapshots(config: Config) -> int:
    """Snapshots a run of ``config`` stores if it completes: t = 0, every, 2 every, ..., t_end."""
    every = config.snapshot_interval
    return 1 if not every > 0 else int(math.ceil(config.time.t_end / every - 1e-9)) + 1


class PDERun(RunKind):
    """The mean-field PDE and the large-β limit models (kinds "pde" and "limit") for a
    :class:`meanfield_pde.runs.session.Session`: built by :func:`~meanfield_pde.runs.simulation.build`, advanced by
    :func:`meanfield_pde.numerics.solver.integrate` with the storage, progress and
    stationary-stop observers."""

    name = "pde"

    def attributes(self, config: Config) -> dict:
        return run_attributes(config)

    def planned_snapshots(self, config: Config) -> int:
        return planned_snapshots(config)

    def start(self, config: Config, initial=None) -> tuple[Simulation, np.ndarray, float]:
        sim = build(config, initial)
        return sim, sim.initial, 0.0

    def restart(self, config: Config, ds: xr.Dataset, index: int) -> tuple[Simulation, np.ndarray, float]:
        from .resume import unphysical_restart
        sim = build(config)

        def state(i: int) -> np.ndarray:
            return sim.geometry.from_table(ds.coef_real.values[i] + 1j * ds.coef_imag.values[i])

        first, u0 = state(0), state(index)
        if "tau" in ds.coords and config.kind == "limit":
            t0 = float(ds.tau.values[index])  # the limit model's own τ, exactly
        else:
            t0 = float(ds.time.values[index]) / solver_clock(config)
        # the restart snapshot, and the last one: a stop's off-grid record stays in the file
        last = ds.sizes["time"] - 1
        for i, u in ((index, u0), (last, state(last) if last != index else u0)):
            with np.errstate(all="ignore"):  # an absurd state is refused, without overflow warnings
                why = unphysical_restart(sim.monitor.check(u), sim.geometry.mass(u), sim.geometry.mass(first))
            if why:
                role = "to restart from" if i == index else "kept as the last record"
                raise ConfigError(f"run file {ds.encoding.get('source', '(unnamed)')!r}: the snapshot at "
                                  f"t = {float(ds.time.values[i]):g} {role} is not a state "
                                  f"of this run ({why}); the file is damaged: run the case again")
        return sim, u0, t0

    def advance(self, config: Config, state, sink, progress: bool | None) -> Outcome:
        sim, u0, t0 = state
        clock = solver_clock(config)
        unit = time_unit(config) / clock  # the case's time unit in the solver's time
        factor = time_unit(config)
        observers = [SnapshotRecorder(sim.model, sink, snapshots_to_dataset,
                                      tau_unit=(tau_unit_name(config), factor) if factor != 1.0 or config.kind == "limit" else None,
                                      clock=clock, to_values=snapshot_values),
                     ProgressBar(unit * config.time.t_end, config.name, progress, start=t0)]
        stop = StationaryStop(sim.geometry, config.time.stationary_tol) if config.time.stationary_tol else None
        result: RunResult = integrate(
            sim.model, sim.control, u0, unit * config.time.t_end,
            every=unit * config.snapshot_interval, dt=unit * config.time.dt, cfl=config.time.cfl,
            monitor=sim.monitor, observers=observers + ([stop] if stop else []),
            max_steps=config.time.max_steps, t0=t0)
        return Outcome(result.status, result.reason,
                       {"steps": result.steps, "rejected_steps": result.rejected},
                       stop.attrs() if stop is not None else {})


PDE = PDERun()
