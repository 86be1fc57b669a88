"""A run's figure written to a file: :func:`~meanfield_pde.plotting.plot.plot_run`, or for a run continued past lost resolution
the staircase figure (:func:`meanfield_pde.plotting.handoff_plot.plot_handoff`), as PNG, PDF or
SVG. Its own module so that both figure modules sit below it (no import cycle)."""

from __future__ import annotations

import pathlib

import xarray as xr

from ..core.checks import check_path
from ..core.errors import NotARunError
from ..runs.outputs import save_png
from .handoff_plot import plot_handoff
from .phase import is_sweep
from .plot import plot_run

__all__ = ["save_figure"]


def _refuse_sweep(attrs, what: str) -> None:
    """NotARunError naming the function that draws a sweep's figure, for a sweep's attributes."""
    if is_sweep(attrs):
        raise NotARunError(f"save_figure: {what} is a sweep's combined file (DIR/sweep.nc), not a run; "
                           "its figure is drawn by meanfield_pde.plotting.phase.save_sweep_figure"
                           "(ds, output) (or on the command line: meanfield-pde plot DIR/sweep.nc)")


def save_figure(ds_or_path, output=None, times=None, *, overwrite: bool = False) -> pathlib.Path:
    """Draw :func:`~meanfield_pde.plotting.plot.plot_run` (a hand-off run without ``times``:
    :func:`meanfield_pde.plotting.handoff_plot.plot_handoff`) and write it to a PNG, PDF or SVG
    file (by the suffix of ``output``).

    Parameters
    ----------
    ds_or_path : xarray.Dataset or str or os.PathLike
        The run, or the path of its netCDF file (opened with xarray).
    output : str or os.PathLike, optional
        Figure to write (.png, .pdf or .svg).  Default: the netCDF path with
        suffix ``.png``; required when a Dataset without a source file is given.
    times : float or sequence of float, optional
        Passed to :func:`~meanfield_pde.plotting.plot.plot_run`.
    overwrite : bool, keyword-only
        Replace an existing figure (written through
        :func:`meanfield_pde.runs.outputs.save_png`: never into a link's target).

    Returns
    -------
    pathlib.Path
        The figure written.

    Raises
    ------
    ConfigError
        The output's suffix is not .png, .pdf or .svg; it exists without ``overwrite``, is the input, or is claimed by
        another process; a damaged input file
        (:func:`meanfield_pde.runs.runcheck.open_checked`); ``ds_or_path`` neither a Dataset
        nor a path.
    NotARunError (a ConfigError)
        Not a run: a sweep's combined file (DIR/sweep.nc) or its Dataset, whose figure
        :func:`meanfield_pde.plotting.phase.save_sweep_figure` draws (the message names it).
    """
    if isinstance(ds_or_path, xr.Dataset):
        ds, source = ds_or_path, ds_or_path.encoding.get("source")
        _refuse_sweep(ds.attrs, "the Dataset")
        opened = False
    else:
        from ..runs.runcheck import open_checked, read_attributes
        check_path("save_figure: ds_or_path", ds_or_path, "an xarray.Dataset or the path of a run file")
        source = pathlib.Path(ds_or_path)
        where = f"plot: {str(source)!r}"
        _refuse_sweep(read_attributes(source, where), repr(str(source)))
        ds, opened = open_checked(source, where), True
    try:
        if output is None:
            if source is None:
                raise ValueError("output path is required when the Dataset has no source file")
            output = pathlib.Path(source).with_suffix(".png")
        output = pathlib.Path(output)
        from ..runs.outputs import check_figure_suffix
        check_figure_suffix(output)  # before the figure is drawn
        # save_png closes the figure: figures are big; a sweep must not accumulate them
        # the staircase figure; a zonal file of kind "handoff" (written before that was refused, its
        # run stopped at the hand-off) holds only its PDE phase, drawn as any zonal run
        if ds.attrs.get("kind") == "handoff" and ds.attrs.get("manifold") != "sphere_zonal" and times is None:
            figure = plot_handoff(ds)
        else:
            figure = plot_run(ds, times=times)
        save_png(figure, output, overwrite=overwrite, inputs=[source] if source else [])
    finally:
        if opened:
            ds.close()
    return output
