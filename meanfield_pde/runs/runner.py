"""Case → run → Dataset: wires geometry, model, initial state, stepper, monitor, observers."""

from __future__ import annotations

import math
import time as _time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from .budget import check_run_arguments
from .config import Config, VonMisesFisher, time_unit
from ..numerics.diagnostics import ResolutionMonitor
from ..core.errors import ConfigError, RunStoppedWarning
from ..core.geometry import Geometry, make_geometry
from ..numerics.initial import initial_density, von_mises_fisher_hint
from .io import snapshots_to_dataset, software_versions
from ..numerics.limits import (LimitModel, check_initial_density, check_limit_config,
                               make_limit_model)
from ..numerics.models import MeanFieldModel
from ..numerics.observers import ProgressBar, SnapshotRecorder
from .outputs import hold
from .runcheck import require_file
from .resume import resume_point
from .runfile import MemoryRun, RunFile
from ..core.signals import stop_on_signals
from ..numerics.solver import RunResult, integrate
from ..numerics.stationary import StationaryStop
from ..numerics.steppers import IMEXRungeKutta, StepControl, get_tableau


@dataclass
class Simulation:
    """The assembled pieces of one PDE run (built by :func:`build`)."""

    config: Config
    geometry: Geometry
    model: MeanFieldModel | LimitModel
    initial: np.ndarray
    control: StepControl
    monitor: ResolutionMonitor


def build(config: Config, initial: np.ndarray | None = None) -> Simulation:
    """Assemble a run and check its initial state (``initial``: coefficients replacing [initial]).

    Raises
    ------
    ConfigError
        If the initial density is not resolved at domain.lmax (spectral tail
        or negativity beyond the [monitor] limits), or a large-beta limit
        (run.kind = "limit") is asked with noise, with a
        time.unit other than "natural" (its time is tau) or hyperviscosity.
    """
    m, reg = config.model, config.regularisation
    check_limit_config(config)  # run.kind = "limit": time in tau, no noise (from_dict checks it too)
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads)
    if config.kind != "limit":
        model = MeanFieldModel(geometry, m.kind, m.beta, m.nu, reg.hyperviscosity,
                               reg.hyperviscosity_order)
    else:
        model = make_limit_model(geometry, m.kind, m.beta, config.limit.order)
    mon = config.monitor
    u0 = (initial_density(geometry, config.initial, mon.max_spectral_tail, mon.negative_density)
          if initial is None else np.array(initial, complex))
    if u0.shape != geometry.zeros_coef().shape:
        raise ConfigError(f"initial: the given state has {u0.size} coefficients, domain.lmax = "
                          f"{config.domain.lmax} needs {geometry.ncoef}")
    if config.kind == "limit":
        check_initial_density(model, u0)
    monitor = ResolutionMonitor(geometry, config.monitor.max_spectral_tail, config.monitor.negative_density)
    reason = monitor.check(u0)
    if reason:
        ini = config.initial
        hint = (von_mises_fisher_hint(config.domain.manifold, ini.centres, ini.concentrations,
                                      ini.weights, config.monitor.max_spectral_tail,
                                      config.monitor.negative_density)
                if isinstance(ini, VonMisesFisher) and initial is None
                else "raise domain.lmax or make the initial density smoother")
        raise ConfigError(f"initial: the initial density is not resolved: {reason}; {hint}")
    stepper = IMEXRungeKutta.for_model(get_tableau(config.time.scheme), model)
    control = StepControl(stepper, geometry, config.time.rtol, config.time.atol, config.time.adaptive)
    return Simulation(config, geometry, model, u0, control, monitor)


EQUATION_TITLES = {"mean_field": "mean-field PDE", "limit0": "large-beta limit (order 0)",
                   "limit1": "large-beta limit (order 1)"}


def run_attributes(config: Config) -> dict:
    """Global attributes known before a PDE run starts (README §Dataset contract), with placeholders
    for the end-of-run counters (steps, rejected_steps, wall_time_s)."""
    m = config.model
    return {
        "model": m.kind, "beta": m.beta, "nu": m.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        "case": config.to_toml(), "case_name": config.name,
        "description": config.description, "scheme": config.time.scheme,
        "adaptive": config.time.adaptive, "equation": config.equation,
        # the unit of the time coordinate: limit models run in their τ
        "time_unit": "natural" if config.kind != "limit" else
                     {"SA": "backward_heat", "USA": "porous_medium"}[m.kind],
        "title": f"{m.kind} {EQUATION_TITLES[config.equation]} on the "
                 f"{config.domain.manifold}, beta = {m.beta:g}, nu = {m.nu:g}",
        **({"tau_unit": config.time.unit} if time_unit(config) != 1.0 else {}),
        **software_versions(),
        "steps": 0, "rejected_steps": 0, "wall_time_s": 0.0,
    }


def run(config: Config, output: str | Path | None = None, progress: bool | None = None, *,
        overwrite: bool = False, initial: np.ndarray | None = None, force: bool = False) -> xr.Dataset:
    """Run a validated case and return its Dataset (README §Dataset contract); write it if ``output``.

    Parameters
    ----------
    config : Config
        From :func:`meanfield_pde.load_case` or :func:`meanfield_pde.runs.config.from_dict`.
    output : path, optional
        netCDF file, appended and synced at every snapshot
        (:class:`meanfield_pde.runs.runfile.RunFile`), so an interrupted or killed
        run keeps everything computed; continue it with :func:`resume`.
    progress : bool or None
        Progress bar; None shows it only on a terminal.
    overwrite : bool, keyword-only
        Replace an existing ``output`` (only once the new run has ended).
    initial : ndarray (ncoef,), optional, keyword-only
        Start from these coefficients (e.g. another run's final state: continuation)
        instead of the case's [initial] section.
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
        Bad output path, an existing output without ``overwrite``, an
        unresolved initial density, or (without ``force``) a resource estimate
        beyond the machine or the caps; raised before anything is written.
    """
    check_run_arguments(config, overwrite, force, output)
    sink = RunFile(output, overwrite=overwrite, attrs=run_attributes(config),
                   snapshots=planned_snapshots(config)) if output is not None \
        else MemoryRun(run_attributes(config))
    try:  # the output stays claimed for the whole run (RunFile)
        sim = build(config, initial)
        return _advance(sim, sink, sim.initial, 0.0, progress)
    finally:
        if output is not None:
            sink.close()


def planned_snapshots(config: Config) -> int:
    """Snapshots a run of ``config`` stores if it completes: t = 0, every, 2 every, ..., t_end."""
    every = config.snapshot_interval
    return 1 if not every > 0 else int(math.ceil(config.time.t_end / every - 1e-9)) + 1


def resume(path: str | Path, progress: bool | None = None, t_end: float | None = None) -> xr.Dataset:
    """Continue the PDE run stored in ``path`` (interrupted, killed or stopped) to its t_end.

    The run restarts from the last snapshot at a regular output time (the
    snapshot files are the checkpoints) and appends to the same file. With
    a fixed step the result equals the uninterrupted run bit for bit; with
    adaptive steps, to the step tolerance. A particle run file is handed to
    :func:`meanfield_pde.runs.particle_runner.resume_particles` (bit for bit too).

    Parameters
    ----------
    path : path of a file written by :func:`run` / ``meanfield-pde run``
    t_end : float, optional
        A new final time (to extend a completed run); must exceed the file's.

    Raises
    ------
    ConfigError
        Another process writes the file; a damaged file (refused untouched,
        :func:`meanfield_pde.runs.runcheck.open_checked`); not a run file of this
        tool, a completed run without a larger t_end, a stop that would recur
        (:func:`meanfield_pde.runs.resume.recurring_stop`) or no regular snapshot
        to restart from.
    """
    require_file(path, f"--resume {str(path)!r}")
    with hold(path):  # claimed before the checks: nobody changes the file between them and the run
        config, ds, k = resume_point(path, t_end, unit=time_unit)
        if ds.attrs.get("equation") == "particles":
            ds.close()
            from .particle_runner import resume_particles
            return resume_particles(path, t_end)
        try:
            sim = build(config)
            u0 = sim.geometry.from_table(ds.coef_real.values[k] + 1j * ds.coef_imag.values[k])
            t0 = float(ds.time.values[k])
        finally:
            ds.close()
        sink = RunFile.reopen(path)
        try:
            return _advance(sim, sink, u0, t0, progress)
        finally:
            sink.close()


def _advance(sim: Simulation, sink, u0: np.ndarray, t0: float, progress: bool | None) -> xr.Dataset:
    """Integrate from (t0, u0) into ``sink``; record the end-of-run attributes; return the Dataset."""
    config = sim.config
    stop = StationaryStop(sim.geometry, config.time.stationary_tol) if config.time.stationary_tol else None
    unit = time_unit(config)
    recorder = SnapshotRecorder(sim.model, sink, snapshots_to_dataset,
                                tau_unit=(config.time.unit, unit) if unit != 1.0 else None)
    bar = ProgressBar(unit * config.time.t_end, config.name, progress, start=t0)
    start = _time.perf_counter()
    with stop_on_signals():
        result: RunResult = integrate(
            sim.model, sim.control, u0, unit * config.time.t_end,
            every=unit * config.snapshot_interval, dt=unit * config.time.dt, cfl=config.time.cfl,
            monitor=sim.monitor, observers=[recorder, bar], max_steps=config.time.max_steps, t0=t0,
            stop=stop)
    before = sink.attrs  # counters of earlier sessions of a resumed run
    end = {"case": config.to_toml(),  # a resumed run may have a new t_end
           "steps": int(before.get("steps", 0)) + result.steps,
           "rejected_steps": int(before.get("rejected_steps", 0)) + result.rejected,
           "wall_time_s": float(before.get("wall_time_s", 0.0)) + _time.perf_counter() - start}
    if stop is not None:
        end.update(stop.attrs())
    done = sink.finish(result.status, result.reason, end)
    ds = done if isinstance(done, xr.Dataset) else xr.load_dataset(done)
    if not result.completed:
        warnings.warn(f"{config.name}: {result.status}", RunStoppedWarning, stacklevel=3)
    return ds
