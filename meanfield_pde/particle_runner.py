"""Case → particle run → Dataset with the PDE's names; and PDE + particles + comparison.

A particle run stores (DESIGN.md §4) positions(time, particle, xyz), the
empirical coefficients (1/n) Σ_i conj(Y_lm(x_i)) as coef_real/coef_imag
(the projection of the empirical measure: the names and normalisation of a
PDE run, so `compare` treats both alike), order_parameter, energy and mass,
and a density: the empirical measure smoothed by the heat kernel for time
particles.smoothing (stated in its attributes), for maps and plots.
"""

from __future__ import annotations

import dataclasses
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr

from .config import Config, VonMisesFisher
from .errors import ConfigError
from .geometry import make_geometry
from .initial import initial_density
from .io import check_output_path, snapshots_to_dataset, write_netcdf
from .measures import sample_density
from .particles import simulate
from .particles.sampling import von_mises_fisher_mixture


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


def run_particles(config: Config, output: str | Path | None = None) -> xr.Dataset:
    """Run the token system of a case; return (and write) its Dataset.

    Raises
    ------
    ConfigError
        For a bad output path, or an initial law that cannot be sampled.
    """
    if output is not None:
        check_output_path(output)
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads)
    x0 = initial_particles(config, geometry)
    p, m = config.particles, config.model
    dt = p.dt or config.time.dt
    start = _time.perf_counter()
    res = simulate(x0, m.kind, m.beta, m.nu, config.time.t_end, dt, config.snapshot_interval,
                   scheme=particle_scheme(config), seed=p.seed,
                   threads=config.domain.threads or None)
    coefs = [geometry.empirical_coefficients(x) for x in res.positions]
    smoothing = np.exp(p.smoothing * geometry.laplacian)
    densities = [geometry.synthesis(c * smoothing) for c in coefs]
    diagnostics = [{"mass": geometry.mass(c), "energy": float(e), "order_parameter": float(r)}
                   for c, e, r in zip(coefs, res.energy, res.order_parameter)]
    attrs = {
        "kind": "particles", "model": m.kind, "beta": m.beta, "nu": m.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold, "status": "completed",
        "case": config.to_toml(), "case_name": config.name, "description": config.description,
        "n": p.n, "scheme": particle_scheme(config), "dt": dt, "seed": p.seed,
        "smoothing": p.smoothing, "steps": res.steps, "equation": "particles", "time_unit": "natural",
        "wall_time_s": _time.perf_counter() - start,
        "title": f"{m.kind} particles (n = {p.n}) on the {config.domain.manifold}, "
                 f"beta = {m.beta:g}, nu = {m.nu:g}",
    }
    ds = snapshots_to_dataset(geometry, res.times, coefs, densities, diagnostics, attrs)
    ds["density"].attrs["long_name"] = (f"empirical measure smoothed by the heat kernel e^(s Laplacian), "
                                        f"s = {p.smoothing:g}")
    ds["coef_real"].attrs["long_name"] = "Re of the empirical coefficients (1/n) sum_i conj(Y_lm(x_i))"
    ds["coef_imag"].attrs["long_name"] = "Im of the empirical coefficients (1/n) sum_i conj(Y_lm(x_i))"
    ds["positions"] = (("time", "particle", "xyz"), np.asarray(res.positions),
                       dict(long_name="token positions (unit vectors)"))
    if output is not None:
        write_netcdf(ds, output)
    return ds


def comparison_paths(output: Path) -> dict[str, Path]:
    """File names of a compare-mode run: FILE.nc (PDE), FILE_particles.nc, FILE_compare.nc."""
    stem = output.with_suffix("")
    return {"pde": output, "particles": Path(f"{stem}_particles.nc"),
            "compare": Path(f"{stem}_compare.nc"), "figure": Path(f"{stem}_compare.png")}


def run_comparison(config: Config, output: str | Path) -> dict[str, xr.Dataset]:
    """PDE and particles from the same initial law, and their comparison (all written).

    Returns {"pde": ..., "particles": ..., "compare": ...} Datasets; the
    comparison uses the heat smoothing of [particles] smoothing for its L²
    distance (see :func:`meanfield_pde.compare.compare`).
    """
    from .compare import compare
    from .runner import run
    paths = comparison_paths(Path(output))
    for path in (paths["pde"], paths["particles"], paths["compare"]):
        check_output_path(path)
    pde_config = dataclasses.replace(config, particles=dataclasses.replace(config.particles, mode="off"))
    pde = run(pde_config, output=paths["pde"])
    particles = run_particles(config, output=paths["particles"])
    result = compare(pde, particles, smoothing=config.particles.smoothing,
                     n_projections=config.particles.projections, seed=config.particles.seed)
    write_netcdf(result, paths["compare"])
    return {"pde": pde, "particles": particles, "compare": result}
