"""The PDE-versus-particles study ([run] kind = "compare"): the PDE and a token
run from the same initial law, and their comparison, written as three files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import xarray as xr

from ..analysis.compare import compare
from ..runs.budget import check_case
from ..runs.config import Config
from ..runs.io import check_output_path, write_netcdf
from ..runs.outputs import hold
from ..runs.particle_runner import run_particles
from ..runs.runner import run
from ..runs.session import runs_stop_together


def comparison_paths(output: Path) -> dict[str, Path]:
    """File names of a compare-mode run: FILE.nc (PDE), FILE_particles.nc, FILE_compare.nc."""
    stem = output.with_suffix("")
    return {"pde": output, "particles": Path(f"{stem}_particles.nc"),
            "compare": Path(f"{stem}_compare.nc"), "figure": Path(f"{stem}_compare.png")}


def run_comparison(config: Config, output: str | Path, *, overwrite: bool = False,
                   force: bool = False) -> dict[str, xr.Dataset]:
    """PDE and particles from the same initial law, and their comparison (all written).

    Returns {"pde": ..., "particles": ..., "compare": ...} Datasets; the
    comparison uses the heat smoothing of [particles] smoothing for its L²
    distance (see :func:`meanfield_pde.analysis.compare.compare`).

    Raises
    ------
    ConfigError
        A bad path or, without ``overwrite``, an existing one; checked for
        all three files before anything runs. Without ``force``, resource
        estimates (both runs and the projections) beyond the machine or the caps.
    MissingDependency
        POT (the extra ``[particles]``) is not installed and particles.projections > 0.
    """
    if config.particles.projections > 0:  # before any work, not after both runs
        from ..core.extras import require
        require("ot", "run.kind = 'compare' with particles.projections > 0")
    check_case(config, Path(output), force=force)  # the three pieces together, then each is cleared
    paths = comparison_paths(Path(output))
    files = (paths["pde"], paths["particles"], paths["compare"])
    # all three claimed for the whole comparison; a Ctrl-C stops both runs, not only the one it
    # fell in (the token run after an interrupted PDE stops at its first step)
    with hold(*files), runs_stop_together():
        for path in files:
            check_output_path(path, overwrite=overwrite)
        pde_config = dataclasses.replace(config, run=dataclasses.replace(config.run, kind="pde"))
        pde = run(pde_config, output=paths["pde"], overwrite=overwrite, force=True)
        particles = run_particles(config, output=paths["particles"], overwrite=overwrite, force=True)
        result = compare(pde, particles, smoothing=config.particles.smoothing,
                         n_projections=config.particles.projections, seed=config.particles.seed)
        write_netcdf(result, paths["compare"], overwrite=overwrite)
    return {"pde": pde, "particles": particles, "compare": result}
