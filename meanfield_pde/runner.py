"""Case → run → Dataset: wires geometry, model, initial state, stepper, monitor, observers."""

from __future__ import annotations

import time as _time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config
from .diagnostics import ResolutionMonitor
from .errors import ConfigError, RunStoppedWarning
from .geometry import Geometry, make_geometry
from .initial import initial_density
from .kernels import scaled_multipliers
from .io import check_output_path, snapshots_to_dataset, write_netcdf
from .limits import (LIMIT_EQUATIONS, LimitModel, check_initial_density, check_limit_config,
                     make_limit_model)
from .models import MeanFieldModel
from .observers import ProgressBar, SnapshotRecorder
from .solver import RunResult, integrate
from .stationary import StationaryStop
from .steppers import IMEXRungeKutta, StepControl, get_scheme


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
        (model.equation = "limit0" | "limit1") is asked with noise, with a
        time.unit other than "natural" (its time is tau) or hyperviscosity.
    """
    m, reg = config.model, config.regularisation
    check_limit_config(config)  # model.equation; limits: time in tau (time.unit = "natural"), no noise
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads)
    if m.equation == "mean_field":
        model = MeanFieldModel(geometry, m.kind, m.beta, m.nu, reg.hyperviscosity,
                               reg.hyperviscosity_order)
    else:
        model = make_limit_model(geometry, m.kind, m.beta, LIMIT_EQUATIONS[m.equation])
    u0 = initial_density(geometry, config.initial) if initial is None else np.array(initial, complex)
    if u0.shape != geometry.zeros_coef().shape:
        raise ConfigError(f"initial: the given state has {u0.size} coefficients, domain.lmax = "
                          f"{config.domain.lmax} needs {geometry.ncoef}")
    if m.equation != "mean_field":
        check_initial_density(model, u0)
    monitor = ResolutionMonitor(geometry, config.monitor.max_spectral_tail, config.monitor.negative_density)
    reason = monitor.check(u0)
    if reason:
        raise ConfigError(f"initial: the initial density is not resolved: {reason}; raise "
                          "domain.lmax or make the initial density smoother")
    stepper = IMEXRungeKutta(get_scheme(config.time.scheme), model.transport, model.linear)
    norm = lambda c: np.sqrt(max(geometry.inner(c, c), 0.0))  # noqa: E731  L²(S) norm
    control = StepControl(stepper, norm, config.time.rtol, config.time.atol, config.time.adaptive)
    return Simulation(config, geometry, model, u0, control, monitor)


EQUATION_TITLES = {"mean_field": "mean-field PDE", "limit0": "large-beta limit (order 0)",
                   "limit1": "large-beta limit (order 1)"}


def time_unit(config: Config) -> float:
    """Natural time per unit of ``time.unit`` (DESIGN.md §1, large-β limits).

    Limit models (model.equation = "limit0" | "limit1") run in τ: factor 1.
    backward_heat: τ = t/β, so t = β τ (SA → backward heat).
    porous_medium: τ = t λ_0/(2β), so t = 2β/λ_0 · τ = β² τ/(2π sinh β) (USA → porous medium),
    computed from e^{−β}λ_0 so it does not underflow at β = 700.
    """
    beta = config.model.beta
    if config.model.equation != "mean_field":
        return 1.0  # a limit model's own time is τ already
    if config.time.unit == "backward_heat":
        return beta
    if config.time.unit == "porous_medium":
        scaled_l0 = scaled_multipliers(beta, 0, config.domain.manifold)[0]
        return 2.0 * beta * np.exp(-beta) / scaled_l0
    return 1.0


def run(config: Config, output: str | Path | None = None, progress: bool | None = None,
        initial: np.ndarray | None = None) -> xr.Dataset:
    """Run a validated case and return its Dataset (DESIGN.md §4); write it if ``output``.

    Parameters
    ----------
    config : Config
        From :func:`meanfield_pde.load_case` or :func:`meanfield_pde.config.from_dict`.
    output : path, optional
        netCDF file to write (atomically, also when the run stops early).
    progress : bool or None
        Progress bar; None shows it only on a terminal.
    initial : ndarray, optional
        Start from these coefficients (e.g. another run's final state: continuation)
        instead of the case's [initial] section.

    Returns
    -------
    xarray.Dataset
        ``ds.attrs['status']`` is "completed" or "stopped: <reason>".
    """
    if output is not None:
        check_output_path(output)
    sim = build(config, initial)
    stop = StationaryStop(sim.geometry, config.time.stationary_tol) if config.time.stationary_tol else None
    recorder = SnapshotRecorder(sim.model)
    unit = time_unit(config)
    bar = ProgressBar(unit * config.time.t_end, config.name, progress)
    start = _time.perf_counter()
    result: RunResult = integrate(
        sim.model, sim.control, sim.initial, unit * config.time.t_end,
        every=unit * config.snapshot_interval, dt=unit * config.time.dt, cfl=config.time.cfl,
        monitor=sim.monitor, observers=[recorder, bar], max_steps=config.time.max_steps, stop=stop)
    attrs = {
        "model": config.model.kind, "beta": config.model.beta, "nu": config.model.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        "status": result.status, "case": config.to_toml(), "case_name": config.name,
        "description": config.description, "scheme": config.time.scheme,
        "adaptive": config.time.adaptive, "steps": result.steps,
        "rejected_steps": result.rejected, "wall_time_s": _time.perf_counter() - start,
        "equation": config.model.equation,
        # the unit of the time coordinate: limit models run in their τ
        "time_unit": "natural" if config.model.equation == "mean_field" else
                     {"SA": "backward_heat", "USA": "porous_medium"}[config.model.kind],
        "title": f"{config.model.kind} {EQUATION_TITLES[config.model.equation]} on the "
                 f"{config.domain.manifold}, beta = {config.model.beta:g}, nu = {config.model.nu:g}",
    }
    if stop is not None:
        attrs.update(stop.attrs())
    ds = snapshots_to_dataset(sim.geometry, recorder.times, recorder.coefs, recorder.densities,
                              recorder.diagnostics, attrs)
    if unit != 1.0:
        ds = ds.assign_coords(tau=("time", ds.time.values / unit, dict(
            long_name=f"time in the {config.time.unit} unit (t = tau * {unit:.17g})")))
        ds.attrs["tau_unit"] = config.time.unit
    if output is not None:
        write_netcdf(ds, output)
    if not result.completed:
        warnings.warn(f"{config.name}: {result.status}", RunStoppedWarning, stacklevel=2)
    return ds
