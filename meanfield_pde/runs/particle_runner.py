"""Case → particle run → Dataset with the PDE's names; and PDE + particles + comparison.

A particle run stores (README §Dataset contract) positions(time, particle, xyz), the
empirical coefficients (1/n) Σ_i conj(Y_lm(x_i)) as coef_real/coef_imag
(the projection of the empirical measure: the names and normalisation of a
PDE run, so `compare` treats both alike), order_parameter, energy and mass,
and a density: the empirical measure smoothed by the heat kernel for time
particles.smoothing (stated in its attributes), for maps and plots.
"""

from __future__ import annotations

import time as _time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from .budget import check_run_arguments
from .config import Config, VonMisesFisher
from ..core.errors import ConfigError, RunStoppedWarning
from ..core.geometry import make_geometry
from ..numerics.initial import initial_density
from .io import snapshots_to_dataset, software_versions
from ..particles.measures import sample_density
from .outputs import hold
from .runcheck import require_file
from ..particles import simulate
from ..particles.simulate import POSITION_DIMS, snapshot_times
from .resume import resume_point
from .runfile import MemoryRun, RunFile
from ..core.signals import stop_on_signals
from ..particles.sampling import von_mises_fisher_mixture


def initial_particles(config: Config, geometry) -> np.ndarray:
    """n tokens (n, dim) from the case's initial law: exact vMF sampling
    (scipy.stats.vonmises_fisher) or rejection sampling of the PDE's initial density."""
    p, ini = config.particles, config.initial
    if isinstance(ini, VonMisesFisher):
        return von_mises_fisher_mixture(p.n, ini.centres, ini.concentrations, ini.weights or None, p.seed)
    return sample_density(geometry, initial_density(geometry, ini), p.n, p.seed)


def particle_scheme(config: Config) -> str:
    """The integrator: 'auto' is rk4 without noise and geodesic Euler–Maruyama with noise."""
    s = config.particles.scheme
    if s == "auto":
        return "euler_maruyama" if config.model.nu > 0 else "rk4"
    return s


def particle_attributes(config: Config) -> dict:
    """Global attributes of a particle run known at its start (end-of-run counters as placeholders)."""
    p, m = config.particles, config.model
    return {
        "kind": "particles", "model": m.kind, "beta": m.beta, "nu": m.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        "case": config.to_toml(), "case_name": config.name, "description": config.description,
        "n": p.n, "scheme": particle_scheme(config), "dt": p.dt or config.time.dt, "seed": p.seed,
        "smoothing": p.smoothing, "equation": "particles", "time_unit": "natural",
        "title": f"{m.kind} particles (n = {p.n}) on the {config.domain.manifold}, "
                 f"beta = {m.beta:g}, nu = {m.nu:g}",
        **software_versions(), "steps": 0, "wall_time_s": 0.0,
    }


def particle_record(geometry, smoothing: float, t: float, x: np.ndarray, order: float,
                    energy: float) -> xr.Dataset:
    """One snapshot of a particle run as a one-time Dataset with the PDE's names (module doc)."""
    coef = geometry.empirical_coefficients(x)
    density = geometry.synthesis(geometry.heat(coef, smoothing))
    diagnostics = {"mass": geometry.mass(coef), "energy": float(energy), "order_parameter": float(order)}
    ds = snapshots_to_dataset(geometry, [t], [coef], [density], [diagnostics], {})
    ds["density"].attrs["long_name"] = (f"empirical measure smoothed by the heat kernel e^(s Laplacian), "
                                        f"s = {smoothing:g}")
    ds["coef_real"].attrs["long_name"] = "Re of the empirical coefficients (1/n) sum_i conj(Y_lm(x_i))"
    ds["coef_imag"].attrs["long_name"] = "Im of the empirical coefficients (1/n) sum_i conj(Y_lm(x_i))"
    ds["positions"] = (("time", *POSITION_DIMS), x[None].copy(),
                       dict(long_name="token positions (unit vectors)"))
    return ds


def run_particles(config: Config, output: str | Path | None = None, *, overwrite: bool = False,
                  force: bool = False) -> xr.Dataset:
    """Run the token system of a case; return (and write, snapshot by snapshot) its Dataset.

    The file is appended and synced at every snapshot like a PDE run's
    (:class:`meanfield_pde.runs.runfile.RunFile`); continue an interrupted run
    with :func:`resume_particles`.

    Raises
    ------
    ConfigError
        For a bad output path, an existing output without ``overwrite``, or
        an initial law that cannot be sampled, or (without ``force``) a
        resource estimate beyond the machine or the caps (:mod:`meanfield_pde.runs.budget`);
        before anything is written.
    """
    check_run_arguments(config, overwrite, force, output)
    snapshots = snapshot_times(config.time.t_end, config.snapshot_interval).size
    sink = RunFile(output, overwrite=overwrite, attrs=particle_attributes(config), snapshots=snapshots) \
        if output is not None else MemoryRun(particle_attributes(config))
    try:  # the output stays claimed for the whole run (RunFile)
        geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads)
        return _advance_particles(config, geometry, sink, initial_particles(config, geometry), 0)
    finally:
        if output is not None:
            sink.close()


def resume_particles(path: str | Path, t_end: float | None = None) -> xr.Dataset:
    """Continue an interrupted particle run file (bit for bit: noise streams per snapshot interval).

    Raises
    ------
    ConfigError
        As :func:`meanfield_pde.runs.resume.resume_point`.
    """
    require_file(path, f"--resume {str(path)!r}")
    with hold(path):  # claimed before the checks (see runner.resume)
        config, ds, k = resume_point(path, t_end)
        try:
            x0 = ds.positions.values[k].copy()
            t0 = float(ds.time.values[k])
        finally:
            ds.close()
        start = int(np.argmin(np.abs(snapshot_times(config.time.t_end, config.snapshot_interval) - t0)))
        geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads)
        sink = RunFile.reopen(path)
        try:
            return _advance_particles(config, geometry, sink, x0, start)
        finally:
            sink.close()


def _advance_particles(config: Config, geometry, sink, x0: np.ndarray, start: int) -> xr.Dataset:
    p, m = config.particles, config.model
    begin = _time.perf_counter()
    append = lambda t, x, order, energy: sink.append(  # noqa: E731
        particle_record(geometry, p.smoothing, t, x, order, energy))
    with stop_on_signals():
        res = simulate(x0, m.kind, m.beta, m.nu, config.time.t_end, p.dt or config.time.dt,
                       config.snapshot_interval, scheme=particle_scheme(config), seed=p.seed,
                       store_positions=False, start=start, on_snapshot=append,
                       threads=config.domain.threads or None)
    before = sink.attrs
    done = sink.finish(res.status, res.stop_reason, {"case": config.to_toml(),  # a resumed run may have a new t_end
                                    "steps": int(before.get("steps", 0)) + res.steps,
                                    "wall_time_s": float(before.get("wall_time_s", 0.0))
                                    + _time.perf_counter() - begin})
    ds = done if isinstance(done, xr.Dataset) else xr.load_dataset(done)
    if not res.stop_reason.completed:
        warnings.warn(f"{config.name}: {res.status}", RunStoppedWarning, stacklevel=3)
    return ds
