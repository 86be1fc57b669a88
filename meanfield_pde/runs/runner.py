"""Case → PDE run → Dataset: wires geometry, model, initial state, stepper, monitor, observers
(the "pde" and "limit" run kinds of :mod:`meanfield_pde.runs.session`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config, VonMisesFisher, time_unit
from ..numerics.diagnostics import ResolutionMonitor
from ..core.errors import ConfigError
from ..core.geometry import Geometry, make_geometry
from ..numerics.initial import initial_density, von_mises_fisher_hint
from .io import snapshot_values, snapshots_to_dataset, software_versions
from ..numerics.limits import (LimitModel, check_initial_density, check_limit_config,
                               make_limit_model)
from ..numerics.models import MeanFieldModel
from ..numerics.observers import ProgressBar, SnapshotRecorder
from .session import Outcome, RunKind, start_run
from ..numerics.solver import RunResult, integrate
from ..numerics.stationary import StationaryStop
from ..numerics.steppers import StepControl, make_stepper


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
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads,
                             config.domain.dimension or None)
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
    stepper = make_stepper(config.time.scheme, model)
    control = StepControl(stepper, geometry, config.time.rtol, config.time.atol, config.time.adaptive)
    return Simulation(config, geometry, model, u0, control, monitor)


def manifold_title(config: Config) -> str:
    """The manifold as titles name it: "sphere", "circle", or "zonal S^{d-1} (d = 128)"."""
    d = config.domain
    return f"zonal S^{d.dimension - 1} (d = {d.dimension})" if d.manifold == "sphere_zonal" else d.manifold


EQUATION_TITLES = {"mean_field": "mean-field PDE", "limit0": "large-beta limit (order 0)",
                   "limit1": "large-beta limit (order 1)"}


def run_attributes(config: Config) -> dict:
    """Global attributes known before a PDE run starts (README §Dataset contract), with placeholders
    for the end-of-run counters (steps, rejected_steps, wall_time_s)."""
    m = config.model
    return {
        "model": m.kind, "beta": m.beta, "nu": m.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        **({"dimension": config.domain.dimension} if config.domain.manifold == "sphere_zonal" else {}),
        "case": config.to_toml(), "case_name": config.name,
        "description": config.description, "scheme": config.time.scheme,
        "adaptive": config.time.adaptive, "equation": config.equation,
        # the time coordinate is natural time for every kind; τ of a large-β unit is `tau`
        "time_unit": "natural",
        "title": f"{m.kind} {EQUATION_TITLES[config.equation]} on the "
                 f"{manifold_title(config)}, beta = {m.beta:g}, nu = {m.nu:g}",
        **({"tau_unit": tau_unit_name(config)} if time_unit(config) != 1.0 or config.kind == "limit" else {}),
        **software_versions(),
        "steps": 0, "rejected_steps": 0, "wall_time_s": 0.0,
    }


def tau_unit_name(config: Config) -> str:
    """The large-β unit of the run's ``tau`` (a limit run: its limit's, whatever time.unit says)."""
    if config.kind == "limit":
        return {"SA": "backward_heat", "USA": "porous_medium"}[config.model.kind]
    return config.time.unit


def solver_clock(config: Config) -> float:
    """Natural time per unit of the solver's time: 1 for the PDE (it integrates t), the
    τ factor for a limit model (it integrates its τ)."""
    return time_unit(config) if config.kind == "limit" else 1.0


def run(config: Config, output: str | Path | None = None, progress: bool | None = None, *,
        overwrite: bool = False, initial: np.ndarray | xr.Dataset | str | Path | None = None,
        time: float | None = None, exact: bool = False, force: bool = False) -> xr.Dataset:
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
    initial : ndarray (ncoef,), Dataset or path of a run file, optional, keyword-only
        Start from these coefficients, or from a stored snapshot of a PDE or limit run
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
        Bad output path, an existing output without ``overwrite``, an
        unresolved initial density, an ``initial`` run that does not fit the case or has no
        snapshot at ``time``, or (without ``force``) a resource estimate
        beyond the machine or the caps; raised before anything is written.
    """
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
    :class:`meanfield_pde.runs.session.Session`: built by :func:`build`, advanced by
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
                raise ConfigError(f"--resume {ds.encoding.get('source', 'the file')!r}: the snapshot at "
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
