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
                   force: bool = False, progress: bool | None = None) -> dict[str, xr.Dataset]:
    """PDE and particles from the same initial law, and their comparison (all written).

    Returns {"pde": ..., "particles": ..., "compare": ...} Datasets. The comparison is
    :func:`meanfield_pde.analysis.compare.compare` of the two runs with the heat smoothing
    ``particles.smoothing`` and ``particles.projections`` great circles, the other settings
    (seed, p) at :mod:`meanfield_pde.runs.compare_settings`' defaults: what
    ``meanfield-pde compare FILE.nc FILE_particles.nc`` computes from the two files when
    those keys are at their defaults (the file records them: attrs smoothing, n_projections,
    seed, wasserstein_p).

    ``progress`` (None: on a terminal only; True: lines of text off a terminal; False:
    none): the PDE run's bar and the distances' progress.

    Raises
    ------
    ConfigError
        A bad path or, without ``overwrite``, an existing one; checked for
        all three files before anything runs. Without ``force``, resource
        estimates (both runs and the projections) beyond the machine or the caps.
    """
    check_case(config, Path(output), force=force)  # the three pieces together, then each is cleared
    paths = comparison_paths(Path(output))
    files = (paths["pde"], paths["particles"], paths["compare"])
    # all three claimed for the whole comparison; a Ctrl-C stops both runs, not only the one it
    # fell in (the token run after an interrupted PDE stops at its first step)
    with hold(*files), runs_stop_together():
        for path in files:
            check_output_path(path, overwrite=overwrite)
        pde_config = dataclasses.replace(config, run=dataclasses.replace(config.run, kind="pde"))
        pde = run(pde_config, output=paths["pde"], progress=False if progress is False else None,
                  overwrite=overwrite, force=True)
        particles = run_particles(config, output=paths["particles"], overwrite=overwrite, force=True)
        result = compare(pde, particles, smoothing=config.particles.smoothing,
                         n_projections=config.particles.projections, progress=progress)
        write_netcdf(result, paths["compare"], overwrite=overwrite)
    return {"pde": pde, "particles": particles, "compare": result}
