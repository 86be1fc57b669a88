"""Case → particle run → Dataset with the PDE's names (the "particles" run kind of
:mod:`meanfield_pde.runs.session`).

A particle run stores (:ref:`dataset-contract`) positions(time, particle, xyz), the
empirical coefficients (1/n) Σ_i conj(Y_lm(x_i)) as coef_real/coef_imag
(the projection of the empirical measure: the names and normalisation of a
PDE run, so `compare` treats both alike), order_parameter, energy and mass,
and a density: the empirical measure smoothed by the heat kernel for time
particles.smoothing (stated in its attributes), for maps and plots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config, VonMisesFisher
from ..core.attention import ATTENTION_ENERGY_DEFINITION, gradient_flow_head
from ..core.geometry import make_geometry
from ..numerics.initial import initial_density
from ..numerics.quantities import Snapshot, evaluate
from .io import snapshots_to_dataset, software_versions
from ..particles.measures import sample_density
from ..particles import simulate
from ..particles.simulate import POSITION_DIMS, snapshot_times
from .session import Outcome, RunKind, resume_file, start_run
from .simulation import attention_attributes, model_title
from ..particles.sampling import axis_vectors, von_mises_fisher_mixture


def initial_particles(config: Config, geometry) -> np.ndarray:
    """n tokens (n, d) from the case's initial law: exact vMF sampling
    (scipy.stats.vonmises_fisher) or rejection sampling of the PDE's initial density; on
    sphere_zonal (tokens with [attention] heads in R^d) the centres [±1] are ±e, e the last axis."""
    p, ini = config.particles, config.initial
    if isinstance(ini, VonMisesFisher):
        centres = (axis_vectors(ini.centres, geometry.dimension) if geometry.manifold == "sphere_zonal"
                   else ini.centres)
        return von_mises_fisher_mixture(p.n, centres, ini.concentrations, ini.weights or None, p.seed)
    return sample_density(geometry, initial_density(geometry, ini), p.n, p.seed)


def particle_geometry(config: Config):
    """The geometry of a token run's records: the case's manifold (sphere_zonal: the law of
    t = ⟨x, e⟩ of tokens in R^d, d = domain.dimension)."""
    d = config.domain
    return make_geometry(d.manifold, d.lmax, d.threads, d.dimension or None)


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
        **({"dimension": config.domain.dimension} if config.domain.manifold == "sphere_zonal" else {}),
        "case": config.to_toml(), "case_name": config.name, "description": config.description,
        "n": p.n, "scheme": particle_scheme(config), "dt": p.dt or config.time.dt, "seed": p.seed,
        "smoothing": p.smoothing, "equation": "particles", "time_unit": "natural",
        "title": f"{m.kind} particles (n = {p.n}) on the {config.domain.manifold}, {model_title(config)}",
        **attention_attributes(config), **software_versions(), "steps": 0, "wall_time_s": 0.0,
    }


def particle_record(geometry, smoothing: float, t: float, x: np.ndarray, order: float,
                    energy: float | None, energy_definition: str | None = None) -> xr.Dataset:
    """One snapshot of a particle run as a one-time Dataset with the PDE's names (module doc):
    the recorded quantities of its "tokens" state (:mod:`meanfield_pde.numerics.quantities`;
    ``order`` and ``energy`` as the integrator computed them, ``energy`` None for heads without
    one); ``energy_definition``: what the energy is where it is not E_β (E_A of a gradient-flow
    head)."""
    coef = geometry.empirical_coefficients(x)
    density = geometry.synthesis(geometry.heat(coef, smoothing))
    diagnostics = evaluate(Snapshot("tokens", geometry, coef, density, order_parameter=order,
                                    energy=energy))
    ds = snapshots_to_dataset(geometry, [t], [coef], [density], [diagnostics], {},
                              energy_definition=energy_definition)
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
    with :func:`resume_particles` or :func:`meanfield_pde.resume`.

    Raises
    ------
    ConfigError
        For a bad output path, an existing output without ``overwrite``, or
        an initial law that cannot be sampled, or (without ``force``) a
        resource estimate beyond the machine or the caps (:mod:`meanfield_pde.runs.budget`);
        before anything is written.
    """
    return start_run(PARTICLES, config, output, overwrite=overwrite, force=force)


def resume_particles(path: str | Path, t_end: float | None = None) -> xr.Dataset:
    """Continue an interrupted particle run file (bit for bit: noise streams per snapshot interval).

    Raises
    ------
    ConfigError
        As :func:`meanfield_pde.runs.resume.resume_point`; a file not written by a particle run.
    """
    return resume_file(path, {PARTICLES.name: PARTICLES}, t_end)


class ParticleRecorder:
    """Storage of a token run: each snapshot of :func:`meanfield_pde.particles.simulate`
    (its ``on_snapshot`` hook) becomes a record (:func:`particle_record`) appended to the sink."""

    def __init__(self, geometry, smoothing: float, sink, energy_definition: str | None = None):
        self.geometry, self.smoothing, self.sink = geometry, smoothing, sink
        self.energy_definition = energy_definition

    def __call__(self, t: float, x: np.ndarray, order: float, energy: float | None) -> None:
        self.sink.append(particle_record(self.geometry, self.smoothing, t, x, order, energy,
                                         self.energy_definition))


class ParticleRunKind(RunKind):
    """The token system of a case (kind "particles", and the token half of "compare") for a
    :class:`meanfield_pde.runs.session.Session`."""

    name = "particles"

    def attributes(self, config: Config) -> dict:
        return particle_attributes(config)

    def planned_snapshots(self, config: Config) -> int:
        return snapshot_times(config.time.t_end, config.snapshot_interval).size

    def start(self, config: Config, initial=None):
        geometry = particle_geometry(config)
        return geometry, initial_particles(config, geometry), 0

    def restart(self, config: Config, ds: xr.Dataset, index: int):
        x0 = ds.positions.values[index].copy()
        t0 = float(ds.time.values[index])
        start = int(np.argmin(np.abs(snapshot_times(config.time.t_end, config.snapshot_interval) - t0)))
        return particle_geometry(config), x0, start

    def advance(self, config: Config, state, sink, progress: bool | None) -> Outcome:
        geometry, x0, start = state
        p, m, heads = config.particles, config.model, config.heads
        # with [attention] the heads carry β (E_A the energy of a gradient-flow head)
        energy_definition = (ATTENTION_ENERGY_DEFINITION if heads is not None
                             and gradient_flow_head(heads) is not None else None)
        res = simulate(x0, m.kind, m.beta if heads is None else None, m.nu, config.time.t_end,
                       p.dt or config.time.dt, config.snapshot_interval, scheme=particle_scheme(config),
                       seed=p.seed, store_positions=False, start=start,
                       on_snapshot=ParticleRecorder(geometry, p.smoothing, sink, energy_definition),
                       threads=config.domain.threads or None, heads=heads)
        return Outcome(res.status, res.reason, {"steps": res.steps})


PARTICLES = ParticleRunKind()
